"""Dynamic shapes: sizes that change share programs compiled per bucket (docs/dynamic_shapes.md).

The first shape an op (strict mode) or a recorded graph (fused mode) runs with compiles exactly.
When it comes again with other sizes, the sizes (and strides and offsets) that changed become
dynamic: runtime values of a program compiled for their bucket, the next power of two at or
above the smallest bucket (128), or above a granule the next multiple of it. Every later size in
that bucket reuses the program; tensors keep their real sizes.

    import torch_tpu.dynamism as dynamism
    dynamism.set_buckets(minimum=32, granule=512)  # or TORCH_TPU_BUCKETS="32,512"
    dynamism.disable()                             # or TORCH_TPU_DYNAMIC=0: one program per shape
"""

import contextlib
from dataclasses import dataclass

from torch_tpu import _C

__all__ = [
    "enable",
    "disable",
    "is_enabled",
    "disabled",
    "set_buckets",
    "get_buckets",
    "bucket",
    "mark_dynamic",
    "get_dynamism_info",
    "BoundedDynamicDimension",
]


def enable():
    """Sizes that vary between calls of an op or graph share programs per bucket (the default)."""
    _C._set_dynamic_shapes_enabled(True)


def disable():
    """Every shape compiles its own programs (as before dynamic shapes existed)."""
    _C._set_dynamic_shapes_enabled(False)


def is_enabled():
    return _C._dynamic_shapes_enabled()


@contextlib.contextmanager
def disabled():
    """Within the block, every shape compiles its own programs."""
    previous = is_enabled()
    disable()
    try:
        yield
    finally:
        _C._set_dynamic_shapes_enabled(previous)


def set_buckets(minimum=128, granule=None):
    """Dynamic dimensions are compiled for the next power of two at or above `minimum` (padding
    at most doubles a size); with `granule`, sizes above it round up to a multiple of it instead
    (at most granule - 1 elements of padding)."""
    if not isinstance(minimum, int) or minimum < 1:
        raise ValueError(f"set_buckets: minimum must be a positive int, got {minimum!r}")
    if granule is not None and (not isinstance(granule, int) or granule < 1):
        raise ValueError(f"set_buckets: granule must be a positive int or None, got {granule!r}")
    _C._set_bucket_policy(minimum, granule or 0)


def get_buckets():
    minimum, granule = _C._bucket_policy()
    return {"minimum": minimum, "granule": granule or None}


def bucket(size):
    """The bound a dynamic dimension of this size is compiled for."""
    return _C._bucket(int(size))


@dataclass(frozen=True)
class BoundedDynamicDimension:
    dimension: int
    lower_bound: int
    upper_bound: int


def mark_dynamic(tensor, dim, lower_bound=None, upper_bound=None):
    """Marks `dim` of `tensor` dynamic (TorchTPU's signature). In eager mode the returned tensor
    (`tensor` itself when it already is) is stored padded to `upper_bound` (default: the size's
    bucket), so the programs that read it are compiled once for every size up to the bound; a
    tensor not yet stored that way is copied once, through the host. Under torch.compile it is
    torch._dynamo.mark_dynamic(tensor, dim, min=lower_bound, max=upper_bound)."""
    import torch

    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"mark_dynamic: expected a Tensor, got {type(tensor).__name__}")
    size = tensor.shape[dim]
    if lower_bound is not None and lower_bound > size:
        raise ValueError(
            f"mark_dynamic: lower_bound {lower_bound} is above the dimension's size {size}"
        )
    if upper_bound is not None and upper_bound < size:
        raise ValueError(
            f"mark_dynamic: upper_bound {upper_bound} is below the dimension's size {size}"
        )
    if torch.compiler.is_compiling() or tensor.device.type != "tpu":
        torch._dynamo.mark_dynamic(tensor, dim, min=lower_bound, max=upper_bound)
        return tensor
    result = _C._mark_dynamic(tensor, dim, upper_bound or 0)
    torch._dynamo.mark_dynamic(result, dim, min=lower_bound, max=upper_bound)
    return result


def get_dynamism_info(tensor):
    """The dynamic dimensions of a tpu tensor stored padded, each with the sizes its bound
    serves ([lower_bound, upper_bound])."""
    out = []
    for dim, bound in _C._dynamic_dims(tensor):
        lower = 1
        while lower < bound and bucket(lower) < bound:
            lower = bucket(lower) + 1
        out.append(BoundedDynamicDimension(dim, lower, bound))
    return out
