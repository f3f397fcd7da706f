"""Quantized weights for vLLM on `tpu`: the linear kernel that runs them as tpu ops.

One method, `quantization="fp8_per_channel"` (the platform's `supported_quantization`): vLLM's
online fp8 quantization of a float checkpoint, float8_e4m3fn weights with one scale per output
channel and activations quantized to fp8 per token as they arrive. vLLM quantizes the weights
while loading them, in PyTorch ops (on tpu here), and computes each layer with its activation
quantizer (`QuantFP8`, a CustomOp run as its PyTorch version on an out-of-tree platform) and a
linear kernel it picks per platform: the one below.

Other methods call vLLM's C++ kernels (fp8_per_tensor quantizes its weights with one: vLLM's CPU
build fails there too) or have no PyTorch kernel for either platform here (fp8_per_block on CPU
wants AMX), or need checkpoints in their format: the platform does not list them, and vLLM refuses
them by name when the engine is configured, not deep in a missing kernel.
"""

from vllm.model_executor.kernels.linear import register_linear_kernel
from vllm.model_executor.kernels.linear.scaled_mm.pytorch import (
    ChannelWiseTorchFP8ScaledMMLinearKernel,
)
from vllm.platforms import PlatformEnum, current_platform


class TpuFp8ScaledMMLinearKernel(ChannelWiseTorchFP8ScaledMMLinearKernel):
    """vLLM's channel-wise fp8 kernel in PyTorch ops, the one its CPU platform runs: fp8
    activations times fp8 weights in `torch._scaled_mm` (float32 products, as PyTorch's CPU
    kernel computes it, lowered by torch_tpu), then the per-token and per-channel scales. The
    same ops in the same order as vLLM CPU, so both give the same bits.

    vLLM lists this kernel for CUDA, ROCm, CPU and XPU only (its check of the platform fails
    for ours)."""

    @classmethod
    def is_supported(cls, compute_capability: int | None = None) -> tuple[bool, str | None]:
        if current_platform.device_type != "tpu":
            return False, "requires the tpu platform."
        return True, None


def register_linear_kernels() -> None:
    """Makes vLLM pick the tpu kernel for fp8 linear layers: it looks kernels up by platform,
    ours being out-of-tree (OOT). Called in each worker before its model is built; once per
    process (vLLM appends to its list at each call)."""
    global _registered
    if not _registered:
        register_linear_kernel(TpuFp8ScaledMMLinearKernel, PlatformEnum.OOT, "fp8")
        _registered = True


_registered = False
