"""float8 dtypes on tpu: conversions bit for bit as CPU (c10) rounds them, copies and views, the
few ops CPU computes on float8 (and CPU's NotImplementedError for the rest), torch._scaled_mm."""

import pytest
import torch
from op_check import noncontiguous

pytestmark = pytest.mark.usefixtures("each_mode")

F8 = [
    torch.float8_e4m3fn,
    torch.float8_e5m2,
    torch.float8_e4m3fnuz,
    torch.float8_e5m2fnuz,
    torch.float8_e8m0fnu,
]
WIDE = [torch.float32, torch.bfloat16, torch.float16, torch.float64]
BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def bits(t):
    """The raw bits of `t` (on CPU), for comparisons that see NaN payloads and signed zeros."""
    t = t.cpu().contiguous()
    return t.view(BITS[t.element_size()]) if t.is_floating_point() else t


def assert_bits(actual, expected):
    assert actual.device.type == "tpu"
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    a, e = bits(actual), bits(expected)
    bad = (a != e).nonzero()
    assert bad.numel() == 0, f"{bad.shape[0]} elements differ, first at {bad[:3].tolist()}"


def operands(dtype, shape, seed, scale):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(shape, generator=g) * scale).to(dtype) for _ in range(2)]


def compare_ops(ops, cpu_args):
    """Each fn of `ops` on the CPU arguments and on tpu copies: same bits."""
    tpu_args = [t.to("tpu") for t in cpu_args]
    for name, fn in ops.items():
        try:
            assert_bits(fn(*tpu_args), fn(*cpu_args))
        except AssertionError as e:
            raise AssertionError(name) from e


def all_patterns(dtype):
    return torch.arange(256, dtype=torch.int32).to(torch.uint8).view(dtype)


def sweep(src):
    """Values to convert to float8: every f16/bf16 pattern; for f32/f64 random magnitudes over
    the whole range, a stride through all f32 patterns, every float8 value of every format with
    the midpoints between neighbours (ties) and their next floats, and specials."""
    if src in (torch.float16, torch.bfloat16):
        return torch.arange(65536, dtype=torch.int32).to(torch.int16).view(src)
    g = torch.Generator().manual_seed(0)
    n = 20000
    v = torch.randn(n, generator=g, dtype=torch.float64)
    v = v * torch.exp2(torch.randint(-150, 150, (n,), generator=g).double())
    parts = [v]
    for dt in F8:
        f = all_patterns(dt).double()
        f = f[torch.isfinite(f)].unique()
        mid = (f[1:] + f[:-1]) / 2
        up, down = torch.full_like(mid, float("inf")), torch.full_like(mid, -float("inf"))
        parts += [f, mid, torch.nextafter(mid, up), torch.nextafter(mid, down)]
    parts = parts + [-p for p in parts[1:]]
    specials = [
        0.0,
        -0.0,
        float("inf"),
        -float("inf"),
        float("nan"),
        448,
        464,
        470,
        480,
        57344,
        61440,
    ]
    specials += [240, 248, 256, 2.0**-127, 1.5 * 2**-127, 2.0**-126, 3e38, 1e-45, 5.9e-39, 7e-39]
    parts.append(torch.tensor(specials + [-s for s in specials], dtype=torch.float64))
    stride = torch.arange(0, 2**32, 65537, dtype=torch.int64).to(torch.int32).view(torch.float32)
    if src == torch.float32:
        return torch.cat([torch.cat(parts).float(), stride])
    return torch.cat(parts + [stride.double()])


@pytest.mark.parametrize("dtype", F8, ids=str)
@pytest.mark.parametrize("to", WIDE, ids=str)
def test_every_float8_pattern_widens_as_cpu(dtype, to):
    x = all_patterns(dtype)
    assert_bits(x.to("tpu").to(to), x.to(to))


@pytest.mark.parametrize("dtype", F8, ids=str)
@pytest.mark.parametrize("src", WIDE, ids=str)
def test_narrowing_to_float8_rounds_as_cpu(dtype, src):
    # Overflow (saturation for e4m3fn, inf for e5m2, NaN for fnuz), NaN, inf, subnormals,
    # ties, fnuz's lack of negative zero and float64's double rounding through float32.
    v = sweep(src)
    assert_bits(v.to("tpu").to(dtype), v.to(dtype))


@pytest.mark.parametrize("dtype", F8, ids=str)
def test_float8_to_float8_and_integer_bool_complex(dtype):
    x = all_patterns(dtype)
    xt = x.to("tpu")
    for other in F8:
        assert_bits(xt.to(other), x.to(other))
    finite = x[torch.isfinite(x.float())]
    for to in (torch.complex64, torch.complex128, torch.bool):
        assert_bits(finite.to("tpu").to(to), finite.to(to))
    # Integer targets: the values C++ defines a float-to-integer conversion for.
    for to in (torch.int64, torch.int32, torch.int16, torch.uint8):
        info = torch.iinfo(to)
        f = finite.double()
        ok = finite[(f > float(info.min) - 1) & (f < float(info.max) + 1)]
        assert_bits(ok.to("tpu").to(to), ok.to(to))
    assert_bits(xt.to(torch.bool), x.to(torch.bool))  # NaN is true


@pytest.mark.parametrize("dtype", F8, ids=str)
def test_integers_bool_complex_to_float8(dtype):
    ints = torch.cat(
        [torch.arange(-600, 600), torch.tensor([2**24 + 1, -(2**31), 2**40 + 3, 2**62])]
    )
    for src in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        v = ints.to(src)
        assert_bits(v.to("tpu").to(dtype), v.to(dtype))
    b = torch.tensor([True, False, True])
    assert_bits(b.to("tpu").to(dtype), b.to(dtype))
    g = torch.Generator().manual_seed(3)
    c = torch.complex(torch.randn(500, generator=g), torch.randn(500, generator=g)) * 300
    assert_bits(c.to("tpu").to(dtype), c.to(dtype))


@pytest.mark.parametrize("dtype", F8, ids=str)
def test_copies_views_and_layouts(dtype):
    x = all_patterns(dtype).reshape(16, 16)
    xt = x.to("tpu")
    assert xt.dtype == dtype and xt.device.type == "tpu"
    assert_bits(xt, x)  # host -> device -> host keeps every pattern
    assert_bits(xt.view(torch.uint8), x.view(torch.uint8))
    assert_bits(x.view(torch.uint8).to("tpu").view(dtype), x)
    assert_bits(xt.view(torch.int32), x.view(torch.int32))
    assert_bits(xt.t().contiguous(), x.t().contiguous())
    assert_bits(xt[2:9:3, 1::4].clone(), x[2:9:3, 1::4].clone())
    nc = noncontiguous(x)
    assert_bits(nc.to("tpu"), nc)
    assert_bits(xt.t().to(torch.float32), x.t().to(torch.float32))
    # CPU -> existing tpu tensor, and tpu -> CPU tensor, through copy_.
    dst = torch.zeros(16, 16, dtype=dtype, device="tpu")
    dst.copy_(x)
    assert_bits(dst, x)
    back = torch.empty(16, 16, dtype=dtype)
    back.copy_(xt)
    assert torch.equal(bits(back), bits(x))
    f = torch.linspace(-600, 600, 256).reshape(16, 16)
    dst.copy_(f.to("tpu"))  # a float32 source converts with c10's rounding
    assert_bits(dst, torch.zeros(16, 16, dtype=dtype).copy_(f))


@pytest.mark.parametrize(
    "dtype", [torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e5m2fnuz], ids=str
)
def test_data_movement_ops_match_cpu(dtype):
    a, b = operands(dtype, (6, 5), seed=1, scale=50)
    idx = torch.tensor([4, 0, 2])
    ops = {
        "cat": lambda a, b, i: torch.cat([a, b], 1),
        "stack": lambda a, b, i: torch.stack([a, b]),
        "clone": lambda a, b, i: a.clone(),
        "index": lambda a, b, i: a[i],
        "index_select": lambda a, b, i: a.index_select(1, i),
        "where": lambda a, b, i: torch.where(a == b, a, b),
        "index_put": lambda a, b, i: a.clone().index_put_((i,), b[:3]),
        "setitem": lambda a, b, i: a.clone().__setitem__((slice(None), 1), 7.3) or a,
        "fill": lambda a, b, i: a.clone().fill_(-3.3),
        "zero": lambda a, b, i: a.clone().zero_(),
        "flip": lambda a, b, i: a.flip(0),
        "roll": lambda a, b, i: a.roll(2, 1),
        "repeat": lambda a, b, i: a.repeat(2, 1),
        "pad": lambda a, b, i: torch.nn.functional.pad(a, (1, 2)),
        "masked_select": lambda a, b, i: a.masked_select(a == b),
        "diag": lambda a, b, i: a.diag(),
        "select_scatter": lambda a, b, i: torch.select_scatter(a, b[0], 0, 3),
        "slice_scatter": lambda a, b, i: torch.slice_scatter(a, b[:2], 0, 1, 3),
        "full": lambda a, b, i: torch.full((3,), 300.0, dtype=dtype, device=a.device),
        "zeros": lambda a, b, i: torch.zeros(3, dtype=dtype, device=a.device),
        "ones": lambda a, b, i: torch.ones(3, dtype=dtype, device=a.device),
        "eye": lambda a, b, i: torch.eye(3, dtype=dtype, device=a.device),
    }
    compare_ops(ops, (a, b, idx))


@pytest.mark.parametrize(
    "dtype", [torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz], ids=str
)
def test_arithmetic_cpu_supports_rounds_as_cpu(dtype):
    # mul, abs and mm compute in float32 and round once to float8 (e4m3fn saturates at 448).
    a, b = operands(dtype, (16, 16), seed=2, scale=30)
    b[0, :4] = all_patterns(dtype)[[0, 127, 128, 255]]  # zeros and NaNs of each format
    ops = {
        "mul": lambda a, b: a * b,
        "mul_": lambda a, b: a.clone().mul_(b),
        # (CPU's vectorized abs keeps the sign of -0 and -NaN, its scalar loop clears it: not compared)
        "abs": lambda a, b: a.abs(),
        "mm": lambda a, b: a @ b,
        "addmm": lambda a, b: torch.addmm(a, a, b),
        "eq": lambda a, b: a == b,
        "ne": lambda a, b: a != b,
        "eq_scalar": lambda a, b: a == 4,
        "isnan": lambda a, b: b.isnan(),
        "any": lambda a, b: a.any(),
        "equal": lambda a, b: torch.tensor(
            [torch.equal(a, a.clone()), torch.equal(a, b)], device=a.device
        ),
    }
    compare_ops(ops, (a, b))


UNSUPPORTED = {
    "add": lambda a: a + a,
    "sub": lambda a: a - a,
    "neg": lambda a: -a,
    "div": lambda a: a / a,
    "sum": lambda a: a.sum(),
    "max": lambda a: a.max(),
    "exp": lambda a: a.exp(),
    "sort": lambda a: a.sort(),
    "lt": lambda a: a < a,
    "clamp": lambda a: a.clamp(0, 1),
    "masked_fill": lambda a: a.masked_fill(a == a, 1.0),
    "gather": lambda a: a.gather(0, torch.zeros(1, 4, dtype=torch.long, device=a.device)),
    "cumsum": lambda a: a.cumsum(0),
    "tril": lambda a: a.tril(),
    "bmm": lambda a: torch.bmm(a[None], a[None]),
    "nonzero": lambda a: a.nonzero(),
    "unique": lambda a: a.unique(),
    "mul_python_number": lambda a: a * 2,
    "arange": lambda a: torch.arange(4, dtype=a.dtype, device=a.device),
    "normal_": lambda a: a.clone().normal_(),
}


@pytest.mark.parametrize("name", list(UNSUPPORTED))
def test_ops_cpu_rejects_raise_not_implemented(name):
    dtype = torch.float8_e4m3fn
    a = torch.ones(4, 4, dtype=dtype)
    fn = UNSUPPORTED[name]
    with pytest.raises(NotImplementedError, match="not implemented for 'Float8_e4m3fn'"):
        fn(a)
    with pytest.raises(NotImplementedError, match="not implemented for 'Float8_e4m3fn'"):
        fn(a.to("tpu"))
        torch.tpu.synchronize()


def test_promotion_with_float8_is_rejected_as_on_cpu():
    a = torch.ones(3, dtype=torch.float8_e4m3fn)
    for other in (torch.ones(3), torch.ones(3, dtype=torch.bfloat16)):
        with pytest.raises(RuntimeError, match="Promotion for Float8 Types is not supported"):
            a * other
        with pytest.raises(RuntimeError, match="Promotion for Float8 Types is not supported"):
            a.to("tpu") * other.to("tpu")


# --- torch._scaled_mm -------------------------------------------------------------------------


def scaled_mm_inputs(
    m=32, k=48, n=16, a_dtype=torch.float8_e4m3fn, b_dtype=torch.float8_e4m3fn, seed=0
):
    g = torch.Generator().manual_seed(seed)
    a = (torch.randn(m, k, generator=g) * 4).to(a_dtype)
    b = (torch.randn(n, k, generator=g) * 4).to(b_dtype).t()  # column-major, as cuBLAS wants
    return a, b, g


def to_tpu(x):
    if not isinstance(x, torch.Tensor):
        return x
    if x.dim() == 2 and not x.is_contiguous():
        return x.t().contiguous().to("tpu").t()  # keep the column-major layout
    return x.to("tpu")


def check_scaled_mm(a, b, scale_a, scale_b, **kwargs):
    expected = torch._scaled_mm(a, b, scale_a, scale_b, **kwargs)
    tkw = {k: to_tpu(v) for k, v in kwargs.items()}
    actual = torch._scaled_mm(to_tpu(a), to_tpu(b), to_tpu(scale_a), to_tpu(scale_b), **tkw)
    assert (
        actual.device.type == "tpu"
        and actual.dtype == expected.dtype
        and actual.shape == expected.shape
    )
    # float32 accumulation in another order may move a result by an ulp of the output dtype.
    torch.testing.assert_close(actual.cpu().float(), expected.float(), **TOL[expected.dtype])


TOL = {
    torch.float32: {"atol": 1e-4, "rtol": 1e-5},
    torch.bfloat16: {"atol": 1e-2, "rtol": 8e-3},
    torch.float16: {"atol": 1e-3, "rtol": 1e-3},
    torch.float8_e4m3fn: {"atol": 0.02, "rtol": 0.13},
    torch.float8_e5m2: {"atol": 0.02, "rtol": 0.26},
}


@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float32, torch.float16], ids=str)
@pytest.mark.parametrize("rowwise", [False, True])
@pytest.mark.parametrize("with_bias", [False, True])
def test_scaled_mm_matches_cpu(out_dtype, rowwise, with_bias):
    a, b, g = scaled_mm_inputs()
    if rowwise:
        scale_a, scale_b = (
            torch.rand(32, 1, generator=g) + 0.5,
            torch.rand(1, 16, generator=g) + 0.5,
        )
    else:
        scale_a, scale_b = torch.tensor(0.37), torch.tensor(1.7)
    kwargs = {"out_dtype": out_dtype}
    if with_bias:
        kwargs["bias"] = torch.randn(16, generator=g).to(
            out_dtype if out_dtype != torch.float16 else torch.float32
        )
    check_scaled_mm(a, b, scale_a, scale_b, **kwargs)
    check_scaled_mm(a, b, scale_a, scale_b, use_fast_accum=True, **kwargs)


@pytest.mark.parametrize(
    "a_dtype,b_dtype", [(torch.float8_e5m2, torch.float8_e4m3fn), (torch.float8_e5m2,) * 2]
)
def test_scaled_mm_mixed_float8_inputs(a_dtype, b_dtype):
    a, b, _ = scaled_mm_inputs(a_dtype=a_dtype, b_dtype=b_dtype, seed=4)
    check_scaled_mm(a, b, torch.tensor(0.5), torch.tensor(0.25), out_dtype=torch.bfloat16)


@pytest.mark.parametrize("out_dtype", [torch.float8_e4m3fn, torch.float8_e5m2], ids=str)
def test_scaled_mm_float8_output_and_scale_result(out_dtype):
    a, b, _ = scaled_mm_inputs(seed=5)
    s1, s2 = torch.tensor(0.37), torch.tensor(1.7)
    check_scaled_mm(a, b, s1, s2, out_dtype=out_dtype)
    check_scaled_mm(a, b, s1, s2, out_dtype=out_dtype, scale_result=torch.tensor(8.0))


def test_scaled_mm_rejects_non_float8_and_bad_scales():
    a, b, _ = scaled_mm_inputs()
    bad = [
        (a.float(), b, torch.tensor(1.0), torch.tensor(1.0)),  # not float8
        (a, b, torch.tensor(1.0, dtype=torch.float64), torch.tensor(1.0)),  # scale not float32
        (a, b, torch.ones(32), torch.ones(16)),  # row-wise scales must be 2-d
    ]
    for args in bad:
        with pytest.raises((ValueError, RuntimeError)):
            torch._scaled_mm(*args, out_dtype=torch.bfloat16)
        with pytest.raises((ValueError, RuntimeError)):
            torch._scaled_mm(*(to_tpu(x) for x in args), out_dtype=torch.bfloat16)
