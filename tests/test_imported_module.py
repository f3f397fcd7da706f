"""StableHLO modules lowered by JAX run on tpu tensors as one op of our own program
(torch_tpu._C._run_imported, the base of torch_tpu.pallas.jax_op): values against the torch
reference, one program in fused mode, compile-cache reuse, and clear errors."""

import jax
import jax.numpy as jnp
import pytest
import torch

import torch_tpu
from torch_tpu import _C

JAX_DTYPES = {torch.float32: jnp.float32, torch.bfloat16: jnp.bfloat16}


def rms_norm_jax(x, w):
    # Computed in float32 like the torch reference below, rounded once to the input dtype.
    x32 = x.astype(jnp.float32)
    y = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + 1e-6)
    return (y * w.astype(jnp.float32)).astype(x.dtype)


def rms_norm_torch(x, w):
    x32 = x.float()
    return (x32 * torch.rsqrt((x32 * x32).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype)


def lowered(fn, *tensors):
    """The StableHLO text of `fn` for the shapes and dtypes of `tensors`."""
    specs = [jax.ShapeDtypeStruct(tuple(t.shape), JAX_DTYPES[t.dtype]) for t in tensors]
    return jax.jit(fn).lower(*specs).as_text()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_jax_rms_norm_matches_torch(dtype):
    x = torch.randn(6, 16).to(dtype)
    w = torch.randn(16).to(dtype)
    text = lowered(rms_norm_jax, x, w)
    out = _C._run_imported(
        text, [x.to("tpu"), w.to("tpu")], [torch.empty(6, 16, dtype=dtype, device="meta")]
    )
    assert len(out) == 1 and out[0].device.type == "tpu" and out[0].dtype == dtype
    torch.testing.assert_close(
        out[0].cpu(),
        rms_norm_torch(x, w),
        rtol=1e-2 if dtype == torch.bfloat16 else 1e-5,
        atol=1e-5,
    )


def test_non_contiguous_inputs_are_read_through_their_views():
    x = torch.randn(16, 6)
    w = torch.randn(16)
    xt = x.to("tpu").t()  # a transposed view: the module sees the logical [6, 16] values
    text = lowered(rms_norm_jax, x.t(), w)
    out = _C._run_imported(text, [xt, w.to("tpu")], [torch.empty(6, 16, device="meta")])[0]
    torch.testing.assert_close(out.cpu(), rms_norm_torch(x.t(), w))


def test_fused_mode_keeps_the_module_in_one_program():
    x = torch.randn(4, 8)
    w = torch.randn(8)
    text = lowered(rms_norm_jax, x, w)
    xd, wd = x.to("tpu"), w.to("tpu")
    torch.tpu.synchronize()
    before = torch_tpu.metrics.counters()["executions"]
    with torch_tpu.eager_mode("fused"):
        y = _C._run_imported(text, [xd * 2, wd], [torch.empty(4, 8, device="meta")])[0]
        total = (y + 1).sum()
        value = total.cpu()
    assert torch_tpu.metrics.counters()["executions"] - before == 1
    torch.testing.assert_close(value, (rms_norm_torch(x * 2, w) + 1).sum())


def test_same_module_and_shapes_compile_once():
    x = torch.randn(3, 8)
    w = torch.randn(8)
    text = lowered(rms_norm_jax, x, w)
    result = [torch.empty(3, 8, device="meta")]
    _C._run_imported(text, [x.to("tpu"), w.to("tpu")], result)
    before = torch_tpu.metrics.counters()["compiles"]
    out = _C._run_imported(text, [torch.randn(3, 8).to("tpu"), w.to("tpu")], result)[0]
    out.cpu()
    assert torch_tpu.metrics.counters()["compiles"] == before


def test_cpu_tensors_are_rejected_at_the_call():
    x = torch.randn(4, 8)
    w = torch.randn(8)
    text = lowered(rms_norm_jax, x, w)
    with pytest.raises(
        RuntimeError, match="argument 1 of an imported module must be a tpu tensor, got cpu"
    ):
        _C._run_imported(text, [x.to("tpu"), w], [torch.empty(4, 8, device="meta")])


def test_module_without_main_is_rejected():
    x = torch.randn(2).to("tpu")
    with pytest.raises(Exception, match="no `func.func public @main`"):
        _C._run_imported(
            "module @m {\n  func.func private @f() {\n  }\n}\n",
            [x],
            [torch.empty(2, device="meta")],
        )


def test_pallas_kernel_in_interpret_mode_runs_on_tpu_tensors():
    from jax.experimental import pallas as pl

    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + y_ref[...] * 2

    def fused_add(x, y):
        return pl.pallas_call(
            kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), interpret=True
        )(x, y)

    x, y = torch.randn(8, 128), torch.randn(8, 128)
    text = lowered(fused_add, x, y)
    out = _C._run_imported(text, [x.to("tpu"), y.to("tpu")], [torch.empty(8, 128, device="meta")])[
        0
    ]
    torch.testing.assert_close(out.cpu(), x + y * 2)
