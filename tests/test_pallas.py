"""torch_tpu.pallas.jax_op (also torch.tpu.pallas.jax_op): JAX functions and Pallas kernels as
torch ops on tpu tensors, compared with the same computation in torch ops on the CPU: values,
dtypes, backward through register_autograd, compile counts per constant, one program in fused
mode and under torch.compile(fullgraph=True), the disk cache in a second process, donation,
and the errors for bad signatures and bad calls."""

import subprocess
import sys

import jax
import jax.numpy as jnp
import pytest
import torch
import torch.nn.functional as F
from jax.experimental import pallas as pl
from test_compile_cache import run as run_in_fresh_process

import torch_tpu
from torch_tpu.pallas import jax_op


def counters():
    torch.tpu.synchronize()
    return torch_tpu.metrics.counters()


@jax_op("tests_pallas::scaled_softplus")
def scaled_softplus(x: jax.Array, scale: float, bias: jax.Array | None = None) -> jax.Array:
    y = jax.nn.softplus(x) * scale
    return y if bias is None else y + bias


def scaled_softplus_torch(x, scale, bias=None):
    y = F.softplus(x) * scale
    return y if bias is None else y + bias


@jax_op("tests_pallas::scaled_softplus_backward")
def scaled_softplus_backward(g: jax.Array, x: jax.Array, scale: float) -> jax.Array:
    return g * jax.nn.sigmoid(x) * scale


def _setup(ctx, inputs, output):
    x, scale, bias = inputs
    ctx.save_for_backward(x)
    ctx.scale, ctx.has_bias = scale, bias is not None


def _backward(ctx, g):
    (x,) = ctx.saved_tensors
    return scaled_softplus_backward(g, x, ctx.scale), None, g if ctx.has_bias else None


scaled_softplus.register_autograd(_backward, setup_context=_setup)


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16], ids=str
)
@pytest.mark.parametrize("noncontiguous", [False, True], ids=["contiguous", "transposed"])
def test_jax_op_forward_and_backward_equal_torch(dtype, noncontiguous):
    tol = {"rtol": 2e-2, "atol": 2e-2} if dtype in (torch.bfloat16, torch.float16) else {}
    x = torch.randn(8, 6).to(dtype)
    bias = torch.randn(6).to(dtype)
    if noncontiguous:
        x = torch.randn(6, 8).to(dtype).t()
    xc = x.clone().requires_grad_()
    bc = bias.clone().requires_grad_()
    expected = scaled_softplus_torch(xc, 1.5, bc)
    expected.backward(torch.ones_like(expected))

    xt = x.to("tpu").requires_grad_()
    bt = bias.to("tpu").requires_grad_()
    out = scaled_softplus(xt, 1.5, bt)
    out.backward(torch.ones_like(out))
    assert out.device.type == "tpu" and out.dtype == dtype and out.shape == expected.shape
    torch.testing.assert_close(out.cpu(), expected.detach(), **tol)
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, **tol)
    torch.testing.assert_close(bt.grad.cpu(), bc.grad, **tol)


def test_torch_tpu_pallas_is_torch_tpu_pallas():
    import torch.tpu.pallas

    assert torch.tpu.pallas.jax_op is jax_op and torch.tpu.pallas is torch_tpu.pallas


def test_optional_array_and_schema():
    schema = str(scaled_softplus._opoverload._schema)
    assert (
        schema
        == "tests_pallas::scaled_softplus(Tensor x, float scale, Tensor? bias=None) -> Tensor"
    )
    x = torch.randn(5)
    torch.testing.assert_close(
        scaled_softplus(x.to("tpu"), 2.0).cpu(), scaled_softplus_torch(x, 2.0)
    )


def test_constants_recompile_only_when_they_change():
    x = torch.randn(4, 4, device="tpu")
    scaled_softplus(x, 3.0).cpu()
    traces = len(scaled_softplus._jax_function.traces)
    before = counters()["compiles"]
    scaled_softplus(torch.randn(4, 4, device="tpu"), 3.0).cpu()  # same shapes and constant
    assert counters()["compiles"] == before
    assert len(scaled_softplus._jax_function.traces) == traces
    scaled_softplus(x, 4.0).cpu()  # a new constant: a new module
    assert counters()["compiles"] == before + 1
    assert len(scaled_softplus._jax_function.traces) == traces + 1
    scaled_softplus(x, 3.0).cpu()  # both stay cached
    assert counters()["compiles"] == before + 1


@jax_op("tests_pallas::moments")
def moments(x: jax.Array, *, axis: int = -1) -> tuple[jax.Array, jax.Array]:
    return jnp.mean(x, axis=axis), jnp.var(x, axis=axis)


@jax_op("tests_pallas::chunks")
def chunks(x: jax.Array, n: int) -> list[jax.Array]:
    return jnp.split(x, n)


def test_an_int_default_for_a_float_constant_is_accepted_as_torch_does():
    def scaled(x: jax.Array, scale: float = 2) -> jax.Array:
        return x * scale

    op = jax_op("tests_pallas::scaled_int_default", scaled)
    assert str(op._opoverload._schema).endswith("float scale=2.) -> Tensor")
    torch.testing.assert_close(op(torch.ones(3, device="tpu")).cpu(), torch.full((3,), 2.0))


def test_tuple_list_and_keyword_only_constants():
    x = torch.randn(6, 4)
    mean, var = moments(x.to("tpu"), axis=0)
    torch.testing.assert_close(mean.cpu(), x.mean(0))
    torch.testing.assert_close(var.cpu(), x.var(0, unbiased=False))
    parts = chunks(x.to("tpu"), 3)
    assert isinstance(parts, list) and len(parts) == 3
    for got, want in zip(parts, x.chunk(3)):
        torch.testing.assert_close(got.cpu(), want)


@jax_op("tests_pallas::roll")
def roll(x: jax.Array) -> jax.Array:
    return jnp.roll(x, 1, axis=0)


@jax_op("tests_pallas::widen")
def widen(x: jax.Array) -> jax.Array:
    return x.astype(jnp.float32)


DTYPES = [
    torch.bool,
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
    torch.complex64,
    torch.complex128,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.uint8,
    torch.uint16,
    torch.uint32,
    torch.uint64,
    torch.float8_e4m3fn,
    torch.float8_e5m2,
    torch.float8_e4m3fnuz,
    torch.float8_e5m2fnuz,
]


def _sample(dtype):
    base = torch.tensor([[0.5, -1.0, 2.0], [3.0, 0.0, -0.25], [1.0, 4.0, 0.125], [-2.0, 1.5, 0.0]])
    if dtype == torch.bool:
        return base > 0
    if not (dtype.is_floating_point or dtype.is_complex) and not dtype.is_signed:
        return base.abs().to(dtype)
    return base.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_shared_dtype_passes_through_unchanged(dtype):
    x = _sample(dtype)
    out = roll(x.to("tpu"))
    assert out.dtype == dtype and out.shape == x.shape
    expected = torch.roll(x, 1, 0)
    if dtype.is_floating_point and dtype.itemsize == 1:  # float8: compare the bits
        assert torch.equal(out.cpu().view(torch.uint8), expected.view(torch.uint8))
    else:
        assert torch.equal(out.cpu(), expected)
    if not dtype.is_complex:
        torch.testing.assert_close(widen(x.to("tpu")).cpu(), x.to(torch.float32))


def test_float8_e8m0_scales_pass_through():
    x = torch.tensor([1.0, 2.0, 0.5, 64.0]).to(torch.float8_e8m0fnu)
    out = roll(x.to("tpu"))
    assert out.dtype == torch.float8_e8m0fnu
    assert torch.equal(out.cpu().view(torch.uint8), torch.roll(x, 1, 0).view(torch.uint8))


def test_fused_mode_runs_the_op_inside_one_program():
    x, w = torch.randn(4, 8), torch.randn(8)
    xd, wd = x.to("tpu"), w.to("tpu")
    scaled_softplus(xd, 1.0, wd).cpu()  # traced and lowered outside the measurement
    before = counters()["executions"]
    with torch_tpu.eager_mode("fused"):
        y = scaled_softplus(xd * 2, 1.0, wd)
        value = (y.exp() + 1).sum().cpu()
    assert counters()["executions"] - before == 1
    torch.testing.assert_close(value, (scaled_softplus_torch(x * 2, 1.0, w).exp() + 1).sum())


def test_compiled_fullgraph_is_one_program_forward_and_backward():
    def f(x, w):
        return (scaled_softplus(x @ w, 0.5) * 2).sum()

    compiled = torch.compile(f, backend="tpu", fullgraph=True)
    x, w = torch.randn(4, 8), torch.randn(8, 3)
    xt, wt = x.to("tpu").requires_grad_(), w.to("tpu").requires_grad_()
    seed = torch.ones((), device="tpu")
    compiled(xt, wt).backward(seed)  # compiles
    for _ in range(2):
        xt.grad = wt.grad = None
        before = counters()["executions"]
        loss = compiled(xt, wt)
        forward = counters()["executions"] - before
        loss.backward(seed)
        backward = counters()["executions"] - before - forward
        assert (forward, backward) == (1, 1)
    xc, wc = x.clone().requires_grad_(), w.clone().requires_grad_()
    expected = (scaled_softplus_torch(xc @ wc, 0.5) * 2).sum()
    expected.backward()
    torch.testing.assert_close(loss.cpu(), expected.detach())
    torch.testing.assert_close(xt.grad.cpu(), xc.grad)
    torch.testing.assert_close(wt.grad.cpu(), wc.grad)


def test_pallas_kernel_in_interpret_mode():
    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] * y_ref[...] + 1

    @jax_op("tests_pallas::fma_kernel")
    def fma(x: jax.Array, y: jax.Array) -> jax.Array:
        return pl.pallas_call(
            kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), interpret=True
        )(x, y)

    x, y = torch.randn(8, 128), torch.randn(8, 128)
    torch.testing.assert_close(fma(x.to("tpu"), y.to("tpu")).cpu(), x * y + 1)


def test_compiled_pallas_kernel_needs_interpret_on_xla_cpu():
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2

    @jax_op("tests_pallas::mosaic_kernel")
    def double(x: jax.Array) -> jax.Array:
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)

    with pytest.raises(RuntimeError, match=r"Mosaic TPU \(tpu_custom_call\).*interpret=True"):
        double(torch.randn(8, 128, device="tpu"))


@jax_op("tests_pallas::kv_update", donate_argnums=(0,))
def kv_update(cache: jax.Array, new: jax.Array, pos: int) -> tuple[jax.Array, jax.Array]:
    return jax.lax.dynamic_update_slice(cache, new, (pos, 0)), jnp.sum(new, axis=0)


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_donated_argument_is_updated_in_place(mode):
    assert str(kv_update._opoverload._schema).startswith("tests_pallas::kv_update(Tensor(a!) cache")
    cache, new = torch.randn(6, 4), torch.randn(2, 4)
    expected = cache.clone()
    expected[3:5] = new
    with torch_tpu.eager_mode(mode):
        cache_t = cache.to("tpu")
        total = kv_update(cache_t, new.to("tpu"), 3)
        assert cache_t.device.type == "tpu"
        torch.testing.assert_close(cache_t.cpu(), expected)
        torch.testing.assert_close(total.cpu(), new.sum(0))


def test_disk_cache_hit_in_a_second_process(tmp_path):
    body = """
import jax, jax.numpy as jnp
@torch_tpu.pallas.jax_op("tests_pallas_proc::gelu")
def gelu(x: jax.Array) -> jax.Array:
    return jax.nn.gelu(x, approximate=False)
x = torch.linspace(-3, 3, 12, device="tpu")
out = gelu(x).cpu().tolist()
"""
    cold, _ = run_in_fresh_process(tmp_path, body)
    warm, _ = run_in_fresh_process(tmp_path, body)
    assert cold["counters"]["compiles"] > 0
    assert (
        warm["counters"]["compiles"] == 0
        and warm["counters"]["disk_hits"] == cold["counters"]["compiles"]
    )
    expected = F.gelu(torch.linspace(-3, 3, 12)).tolist()
    torch.testing.assert_close(torch.tensor(warm["out"]), torch.tensor(expected))


def test_cpu_tensor_is_rejected_at_the_call():
    with pytest.raises(
        RuntimeError, match="argument 'bias' must be a tpu tensor, got a cpu tensor"
    ):
        scaled_softplus(torch.randn(3, device="tpu"), 1.0, torch.randn(3))


def test_shape_mismatch_names_the_op_and_the_inputs():
    with pytest.raises(
        RuntimeError, match=r"tests_pallas::scaled_softplus.*x: float32\[4, 3\].*bias: float32\[5\]"
    ):
        scaled_softplus(torch.randn(4, 3, device="tpu"), 1.0, torch.randn(5, device="tpu"))


@jax_op("tests_pallas::lax_add")
def lax_add(x: jax.Array, y: jax.Array) -> jax.Array:
    return jax.lax.add(x, y)  # lax does not promote: the dtypes must match


def test_dtype_mismatch_names_the_op_and_the_inputs():
    x = torch.ones(3, device="tpu")
    with pytest.raises(
        RuntimeError, match=r"tests_pallas::lax_add.*x: float32\[3\], y: int32\[3\]"
    ):
        lax_add(x, torch.ones(3, dtype=torch.int32, device="tpu"))
    torch.testing.assert_close(lax_add(x, x).cpu(), torch.full((3,), 2.0))


def test_jax_dtype_without_a_torch_counterpart_is_rejected():
    @jax_op("tests_pallas::to_int4")
    def to_int4(x: jax.Array) -> jax.Array:
        return x.astype(jnp.int4)

    with pytest.raises(TypeError, match="returns int4, which torch has no dtype for"):
        to_int4(torch.zeros(4, dtype=torch.int8, device="tpu"))


def test_signature_errors_name_the_argument():
    def missing(x: jax.Array, n):
        return x

    with pytest.raises(TypeError, match="argument 'n' has no annotation"):
        jax_op("tests_pallas::missing", missing)

    def listy(x: jax.Array, sizes: list) -> jax.Array:
        return x

    with pytest.raises(TypeError, match="argument 'sizes' is annotated <class 'list'>"):
        jax_op("tests_pallas::listy", listy)

    def no_arrays(n: int) -> jax.Array:
        return jnp.zeros(n)

    with pytest.raises(TypeError, match="needs at least one jax.Array argument"):
        jax_op("tests_pallas::no_arrays", no_arrays)

    def returns_dict(x: jax.Array) -> dict:
        return {"x": x}

    with pytest.raises(TypeError, match="unsupported return annotation"):
        jax_op("tests_pallas::returns_dict", returns_dict)

    with pytest.raises(
        TypeError, match="donate_argnums entry 1 is not the position of a jax.Array"
    ):
        jax_op("tests_pallas::bad_donation", donate_argnums=(1,))(_two_args)


def _two_args(x: jax.Array, n: int) -> jax.Array:
    return x * n


def test_a_call_without_any_tensor_is_rejected():
    @jax_op("tests_pallas::maybe_zeros")
    def maybe_zeros(x: jax.Array | None = None, n: int = 2) -> jax.Array:
        return jnp.zeros(n) if x is None else x

    x = torch.randn(3, device="tpu")
    torch.testing.assert_close(maybe_zeros(x).cpu(), x.cpu())
    with pytest.raises(
        RuntimeError, match="every array argument is None; a tensor chooses the device"
    ):
        maybe_zeros(None, 3)


def test_undeclared_return_structure_is_reported():
    @jax_op("tests_pallas::returns_two")
    def two(x: jax.Array):
        return x, x

    with pytest.raises(TypeError, match="not one jax.Array; annotate the return as tuple"):
        two(torch.randn(2, device="tpu"))


def test_import_torch_tpu_does_not_import_jax_and_a_missing_jax_says_what_to_install():
    code = (
        "import sys, torch, torch_tpu\n"
        "assert 'jax' not in sys.modules, 'import torch_tpu imported jax'\n"
        "sys.modules['jax'] = None\n"
        "try:\n"
        "    torch_tpu.pallas.jax_op('x::y', lambda x: x)\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "pip install 'torch_tpu[jax]'" in proc.stdout


def test_recompile_log_shows_the_module_as_one_line(capfd):
    torch_tpu._C._set_log_recompiles(True)
    try:
        for n in (17, 19):  # sizes no other test uses
            roll(torch.ones(n, device="tpu")).cpu()
    finally:
        torch_tpu._C._set_log_recompiles(False)
    err = capfd.readouterr().err
    module_lines = [line for line in err.splitlines() if "module @jit_tests_pallas__roll" in line]
    assert len(module_lines) == 2 and all(
        "characters, fingerprint" in line for line in module_lines
    ), err
    assert "stablehlo" not in err, err
