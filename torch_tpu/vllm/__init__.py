"""vLLM on `tpu`: the platform plugin (docs/serving.md).

vLLM finds it through the `vllm.platform_plugins` entry point of torch_tpu's distribution and
calls `register` in each of its processes; the core never imports this package. It needs vLLM,
which lives in an environment of its own (`bash scripts/vllm_env.sh`: vLLM pins transformers
below what ours uses).
"""


def register():
    """The platform's class path when a `tpu` device is usable, else None (vLLM then picks
    another platform; `VLLM_TARGET_DEVICE=cpu` skips plugins altogether)."""
    import torch

    if not hasattr(torch, "tpu") or torch.tpu.device_count() == 0:
        return None
    return "torch_tpu.vllm.platform.TpuPlatform"
