"""`torch_tpu.pallas` (also `torch.tpu.pallas`): JAX functions and Pallas kernels as PyTorch
ops on tpu tensors. JAX is imported by the first `jax_op`, never by `import torch_tpu`."""

from torch_tpu.pallas.op import jax_op

__all__ = ["jax_op"]
