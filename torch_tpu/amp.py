"""`torch.tpu.amp`: the device-specific spellings CUDA code uses (`torch.cuda.amp.autocast(...)`
becomes `torch.tpu.amp.autocast(...)`). Both are `torch.amp`'s classes bound to `tpu`."""

import torch

__all__ = ["autocast", "GradScaler"]


class autocast(torch.amp.autocast):
    """`torch.autocast("tpu", ...)`; `dtype` defaults to `torch.get_autocast_dtype("tpu")`
    (bfloat16 unless changed with `torch.set_autocast_dtype`)."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        super().__init__("tpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(torch.amp.GradScaler):
    """`torch.amp.GradScaler("tpu", ...)`."""

    def __init__(
        self,
        init_scale=2.0**16,
        growth_factor=2.0,
        backoff_factor=0.5,
        growth_interval=2000,
        enabled=True,
    ):
        super().__init__("tpu", init_scale, growth_factor, backoff_factor, growth_interval, enabled)
