"""A JAX function lowered by JAX itself to the StableHLO module that our program calls.

JAX only traces and lowers here: it never runs the function and never sees a tensor. Its own
client is kept to the CPU platform (made before its first lowering unless the user configured
JAX already), so on a TPU or GPU host it never claims the chips our runtime drives; the module
is lowered for the platform of our PJRT plugin, so a Pallas kernel gets the Mosaic (TPU) or
Triton (GPU) lowering its device runs.
"""

import dataclasses

import torch

from torch_tpu import _C

# The dtypes both frameworks have, by their common name (jnp.dtype(name) is JAX's).
_DTYPE_NAMES = (
    "bool float16 bfloat16 float32 float64 complex64 complex128 int8 int16 int32 int64 "
    "uint8 uint16 uint32 uint64 float8_e4m3fn float8_e5m2 float8_e4m3fnuz float8_e5m2fnuz "
    "float8_e8m0fnu"
).split()
_WIDE = {torch.float64, torch.complex128, torch.int64, torch.uint64}

# Our plugin's platform name -> JAX's lowering platform.
_JAX_PLATFORMS = {"cpu": "cpu", "cuda": "cuda", "gpu": "cuda", "rocm": "rocm", "tpu": "tpu"}


def import_jax():
    try:
        import jax
    except ImportError as e:
        raise ImportError(
            "torch_tpu.pallas.jax_op needs JAX: pip install 'torch_tpu[jax]' (or jax==0.10.2)"
        ) from e
    from jax._src import xla_bridge

    if not xla_bridge.backends_are_initialized() and not jax.config.jax_platforms:
        jax.config.update("jax_platforms", "cpu")
    return jax


def _to_jax_dtype(dtype, where):
    import jax.numpy as jnp

    name = str(dtype).removeprefix("torch.")
    if name not in _DTYPE_NAMES:
        raise TypeError(f"{where}: {dtype} has no JAX counterpart")
    return jnp.dtype(name)


def _to_torch_dtype(dtype, where):
    name = str(dtype)
    if name not in _DTYPE_NAMES:
        raise TypeError(f"{where}: the JAX function returns {name}, which torch has no dtype for")
    return getattr(torch, name)


@dataclasses.dataclass
class Traced:
    """A JAX function traced for one (shapes, dtypes, constants): its outputs, and the StableHLO
    module once it is lowered."""

    stage: object  # jax.stages.Traced: lowers to the module
    wide: bool  # 64-bit values: traced and lowered with jax_enable_x64
    outputs: list  # [(shape, torch dtype)]
    where: str  # "jax_op 'ns::name'", for errors
    module: str | None = None
    metas: list = dataclasses.field(init=False)  # the outputs as the meta tensors _C takes

    def __post_init__(self):
        self.metas = [torch.empty(s, dtype=d, device="meta") for s, d in self.outputs]


def _describe(params, values):
    parts = []
    for p, v in zip(params, values):
        if isinstance(v, torch.Tensor):
            parts.append(f"{p.name}: {str(v.dtype).removeprefix('torch.')}{list(v.shape)}")
        else:
            parts.append(f"{p.name}={v!r}")
    return ", ".join(parts)


def trace(fn, signature, values, op_name, output_order=None):
    """Traces `fn` with the arrays of `values` (tensors, real or fake) abstract and the others
    as constants. `output_order` permutes the function's flat outputs (donated ones first)."""
    jax = import_jax()
    where = f"jax_op {op_name!r}"
    params = signature.params
    arrays = [i for i, (p, v) in enumerate(zip(params, values)) if p.array and v is not None]
    specs = [
        jax.ShapeDtypeStruct(
            tuple(int(s) for s in values[i].shape), _to_jax_dtype(values[i].dtype, where)
        )
        for i in arrays
    ]

    def flat(*array_values):
        call = list(values)
        for i, a in zip(arrays, array_values):
            call[i] = a
        positional = [v for p, v in zip(params, call) if not p.keyword_only]
        keywords = {p.name: v for p, v in zip(params, call) if p.keyword_only}
        out = fn(*positional, **keywords)
        if signature.returns is None:
            if not isinstance(out, jax.Array):
                raise TypeError(
                    f"{where}: returned {type(out).__name__}, not one jax.Array; annotate the "
                    "return as tuple[jax.Array, ...] or list[jax.Array] for several"
                )
            out = [out]
        elif not isinstance(out, (tuple, list)) or not all(isinstance(o, jax.Array) for o in out):
            raise TypeError(
                f"{where}: returned {type(out).__name__}, not a tuple or list of jax.Array"
            )
        elif isinstance(signature.returns, int) and len(out) != signature.returns:
            raise TypeError(
                f"{where}: returned {len(out)} arrays; its annotation says {signature.returns}"
            )
        out = list(out)
        return [out[k] for k in output_order] if output_order is not None else out

    # The module is named after the op (`module @jit_mylib__rms_norm`) in dumps and logs.
    flat.__name__ = op_name.replace("::", "__")
    wide = any(values[i].dtype in _WIDE for i in arrays)
    try:
        with jax.enable_x64(wide):
            stage = jax.jit(flat).trace(*specs)
    except (TypeError, ValueError) as e:
        if str(e).startswith(where):
            raise
        raise RuntimeError(
            f"{where}: JAX cannot trace the function for {_describe(params, values)}: {e}"
        ) from e
    outputs = [(tuple(o.shape), _to_torch_dtype(o.dtype, where)) for o in stage.out_info]
    return Traced(stage, wide, outputs, where)


def lower(traced):
    """Fills `traced.module` with the StableHLO text for our plugin's platform."""
    jax = import_jax()
    where = traced.where
    platform = _JAX_PLATFORMS.get(_C._runtime_info()["platform_name"], "cpu")
    with jax.enable_x64(traced.wide):
        try:
            traced.module = traced.stage.lower(lowering_platforms=(platform,)).as_text()
        except Exception as e:
            if "Only interpret mode is supported" not in str(e):
                raise
            raise RuntimeError(
                f"{where}: its Pallas kernel needs the {_kernel_lowering(traced)} lowering, which the "
                f"XLA:CPU device of these tpu tensors cannot run; pass interpret=True to "
                "pl.pallas_call to run the kernel here"
            ) from e
    return traced.module


def _kernel_lowering(traced):
    """Which compiled Pallas lowering the kernel has: Mosaic (TPU) lowers without a TPU.
    (Called inside lower's jax_enable_x64 scope.)"""
    for platform, name in (
        ("tpu", "Mosaic TPU (tpu_custom_call)"),
        ("cuda", "Triton / Mosaic GPU"),
    ):
        try:
            traced.stage.lower(lowering_platforms=(platform,))
            return name
        except Exception:
            continue
    return "TPU or GPU"
