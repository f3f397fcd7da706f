"""Max, average and adaptive pooling (1-3d) on tpu against CPU: values, indices, gradients."""

import re

import pytest
import torch
import torch.nn.functional as F
from op_check import check_op, noncontiguous
from opinfo_check import check_sample, samples

import torch_tpu

# Every test here runs in strict, debug and fused mode (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_mode")

FLOATS = (torch.float32, torch.bfloat16, torch.float64)
NAN = float("nan")
INF = float("inf")


def make(shape, dtype=torch.float32, grad=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype).requires_grad_(grad)


# bf16: the tpu sums windows (and spreads gradients) in f32 and rounds once; CPU's bf16 kernels
# round each partial result (adaptive_avg_pool3d sums in bf16, avg/adaptive pooling backward
# round every gy / divisor and every accumulation). Measured over 5 seeds: |tpu - cpu| up to
# 7.8e-3 (1 bf16 ulp at magnitude 1) with the tpu the closer one to a float64 reference
# (e.g. avg_pool1d gradient: |cpu - f64| 5.2e-3, |tpu - f64| 2.6e-3).
BF16_TOL = {"atol": 1e-2, "rtol": 1.6e-2}


def tol(dtype):
    return BF16_TOL if dtype == torch.bfloat16 else {}


def ties(shape, dtype=torch.float32, seed=0):
    """Values from {0, 1, 2}: most windows hold several maxima (CPU returns the first)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 3, shape, generator=g).to(dtype).requires_grad_()


MAX = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
AVG = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}
ADAPTIVE_AVG = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}
ADAPTIVE_MAX = {1: F.adaptive_max_pool1d, 2: F.adaptive_max_pool2d, 3: F.adaptive_max_pool3d}

# (spatial dims, input shape, kwargs) for max pooling.
MAX_CASES = [
    (1, (2, 3, 9), {"kernel_size": 3}),
    (
        1,
        (2, 3, 10),
        {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 2, "ceil_mode": True},
    ),
    (2, (2, 3, 7, 8), {"kernel_size": 2}),
    (2, (1, 2, 7, 8), {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 1)}),
    (2, (2, 2, 9, 7), {"kernel_size": 3, "stride": 2, "ceil_mode": True}),
    (
        2,
        (2, 2, 9, 9),
        {"kernel_size": (2, 3), "stride": 2, "padding": 1, "dilation": (2, 2), "ceil_mode": True},
    ),
    (2, (3, 6, 5), {"kernel_size": 2, "stride": 1}),  # unbatched
    (3, (1, 2, 5, 6, 4), {"kernel_size": 2}),
    (
        3,
        (1, 2, 5, 6, 5),
        {
            "kernel_size": (3, 2, 2),
            "stride": (2, 1, 2),
            "padding": 1,
            "dilation": (1, 2, 1),
            "ceil_mode": True,
        },
    ),
]


@pytest.mark.parametrize("n,shape,kw", MAX_CASES)
def test_max_pool(n, shape, kw):
    fn = MAX[n]
    check_op(lambda t: fn(t, return_indices=True, **kw), make(shape), grad=True)
    # Many equal maxima: indices must name the first one, as CPU's do.
    check_op(lambda t: fn(t, return_indices=True, **kw), ties(shape), grad=True)


@pytest.mark.parametrize("dtype", FLOATS)
def test_max_pool_dtypes_and_layouts(dtype):
    x = make((2, 3, 7, 6), dtype)
    check_op(lambda t: F.max_pool2d(t, 3, 2, 1, return_indices=True), x, grad=True, **tol(dtype))
    check_op(
        lambda t: F.max_pool2d(t, 2, return_indices=True), noncontiguous(x), grad=True, **tol(dtype)
    )
    cl = x.detach().to(memory_format=torch.channels_last).requires_grad_()
    check_op(
        lambda t: F.max_pool2d(t, 3, 2, 1, ceil_mode=True, return_indices=True),
        cl,
        grad=True,
        **tol(dtype),
    )
    check_op(
        lambda t: F.max_pool1d(t, 2, return_indices=True),
        make((2, 3, 8), dtype),
        grad=True,
        **tol(dtype),
    )


def test_max_pool_nan_and_inf():
    # CPU: a NaN wins its window (the last NaN when there are several); -inf windows keep the
    # first element's index.
    x = torch.tensor([[[1.0, NAN, 2.0, NAN, 3.0, -INF, -INF, -INF, 5.0, NAN]]])
    check_op(lambda t: F.max_pool1d(t, 4, 2, return_indices=True), x)
    check_op(lambda t: F.max_pool1d(t, 3, 1, padding=1, return_indices=True), x)
    x2 = make((1, 2, 6, 6)).detach()
    x2[0, 0, 1, 1] = NAN
    x2[0, 1, 2:4, 2:4] = -INF
    x2[0, 1, 0, 0] = NAN
    x2[0, 1, 0, 1] = NAN
    check_op(lambda t: F.max_pool2d(t, 3, 2, 1, return_indices=True), x2)


# (spatial dims, input shape, kwargs) for average pooling.
AVG_CASES = [
    (1, (2, 3, 9), {"kernel_size": 3}),
    (
        1,
        (2, 3, 10),
        {
            "kernel_size": 4,
            "stride": 3,
            "padding": 2,
            "ceil_mode": True,
            "count_include_pad": False,
        },
    ),
    (2, (2, 3, 7, 8), {"kernel_size": 2}),
    (2, (1, 2, 7, 8), {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 1)}),
    (
        2,
        (1, 2, 7, 8),
        {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 1), "count_include_pad": False},
    ),
    (2, (2, 2, 9, 7), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    (
        2,
        (2, 2, 9, 7),
        {
            "kernel_size": 3,
            "stride": 2,
            "padding": 1,
            "ceil_mode": True,
            "count_include_pad": False,
        },
    ),
    (2, (2, 2, 6, 6), {"kernel_size": 4, "stride": 3, "padding": 2, "divisor_override": 5}),
    (2, (3, 6, 5), {"kernel_size": 2, "stride": 1}),  # unbatched 2-d
    (3, (1, 2, 5, 6, 4), {"kernel_size": 2}),
    (
        3,
        (1, 2, 5, 6, 5),
        {"kernel_size": (3, 2, 2), "stride": (2, 1, 2), "padding": 1, "ceil_mode": True},
    ),
    (
        3,
        (1, 2, 5, 6, 5),
        {
            "kernel_size": (3, 2, 2),
            "stride": 2,
            "padding": 1,
            "ceil_mode": True,
            "count_include_pad": False,
        },
    ),
    (3, (1, 2, 4, 4, 4), {"kernel_size": 3, "padding": 1, "divisor_override": 7}),
]


@pytest.mark.parametrize("n,shape,kw", AVG_CASES)
def test_avg_pool(n, shape, kw):
    fn = AVG[n]
    check_op(lambda t: fn(t, **kw), make(shape), grad=True)


@pytest.mark.parametrize("dtype", FLOATS)
def test_avg_pool_dtypes_and_layouts(dtype):
    x = make((2, 3, 7, 6), dtype)
    check_op(
        lambda t: F.avg_pool2d(t, 3, 2, 1, count_include_pad=False), x, grad=True, **tol(dtype)
    )
    check_op(lambda t: F.avg_pool2d(t, 2), noncontiguous(x), grad=True, **tol(dtype))
    cl = x.detach().to(memory_format=torch.channels_last).requires_grad_()
    check_op(lambda t: F.avg_pool2d(t, 3, 2, 1, ceil_mode=True), cl, grad=True, **tol(dtype))
    check_op(lambda t: F.avg_pool1d(t, 3, 2, 1), make((2, 3, 8), dtype), grad=True, **tol(dtype))
    if dtype != torch.bfloat16:  # CPU has no bf16 avg_pool3d
        check_op(
            lambda t: F.avg_pool3d(t, 2, 1, 1, count_include_pad=False),
            make((1, 2, 3, 4, 3), dtype),
            grad=True,
        )


# (spatial dims, input shape, output_size)
ADAPTIVE_CASES = [
    (1, (2, 3, 9), 3),
    (1, (2, 3, 10), 4),
    (1, (3, 7), 5),  # unbatched
    (2, (2, 3, 8, 6), (4, 3)),
    (2, (2, 3, 7, 6), (3, 4)),
    (2, (1, 2, 5, 6), (None, 4)),
    (2, (1, 2, 5, 7), (7, 9)),  # more outputs than inputs: overlapping windows
    (2, (3, 5, 6), 1),  # unbatched
    (3, (1, 2, 6, 4, 4), 2),
    (3, (1, 2, 5, 6, 4), (2, 4, 3)),
]


@pytest.mark.parametrize("n,shape,out", ADAPTIVE_CASES)
def test_adaptive_avg_pool(n, shape, out):
    check_op(lambda t: ADAPTIVE_AVG[n](t, out), make(shape), grad=True)


@pytest.mark.parametrize("n,shape,out", ADAPTIVE_CASES)
def test_adaptive_max_pool(n, shape, out):
    check_op(lambda t: ADAPTIVE_MAX[n](t, out, return_indices=True), make(shape), grad=True)
    check_op(lambda t: ADAPTIVE_MAX[n](t, out, return_indices=True), ties(shape), grad=True)


@pytest.mark.parametrize("dtype", FLOATS)
def test_adaptive_dtypes_and_layouts(dtype):
    x = make((2, 3, 7, 6), dtype)
    cl = x.detach().to(memory_format=torch.channels_last).requires_grad_()
    for t in (x, noncontiguous(x), cl):
        check_op(lambda a: F.adaptive_avg_pool2d(a, (3, 4)), t, grad=True, **tol(dtype))
        check_op(
            lambda a: F.adaptive_max_pool2d(a, (3, 4), return_indices=True),
            t,
            grad=True,
            **tol(dtype),
        )
    y = make((1, 2, 5, 4, 6), dtype)
    check_op(lambda a: F.adaptive_avg_pool3d(a, (2, 3, 4)), y, grad=True, **tol(dtype))
    check_op(
        lambda a: F.adaptive_max_pool3d(a, (2, 3, 4), return_indices=True),
        y,
        grad=True,
        **tol(dtype),
    )


def test_adaptive_max_pool_nan():
    x = torch.tensor([[[1.0, NAN, 2.0, NAN, 3.0, -INF, -INF, 5.0, NAN, 0.0]]])
    check_op(lambda t: F.adaptive_max_pool1d(t, 3, return_indices=True), x)
    check_op(lambda t: F.adaptive_max_pool1d(t, 4, return_indices=True), x)


def test_pooling_modules_and_composites():
    torch.manual_seed(0)
    x = make((2, 3, 8, 8))
    for m in [
        torch.nn.MaxPool2d(3, 2, 1),
        torch.nn.AvgPool2d(3, 2, 1),
        torch.nn.AdaptiveAvgPool2d((1, 1)),
        torch.nn.AdaptiveMaxPool2d(3),
        torch.nn.LPPool2d(2, 3, 2),
        torch.nn.LPPool1d(3, 2),
    ]:
        inp = x if not isinstance(m, torch.nn.LPPool1d) else make((2, 3, 8))
        check_op(lambda a, mm=m: mm(a), inp, grad=True)


def test_pooling_runs_natively():
    torch_tpu.metrics.reset()
    with torch_tpu.cpu_fallback():
        x = make((2, 3, 6, 6)).detach().to("tpu").requires_grad_()
        y = (
            F.max_pool2d(x, 2).sum()
            + F.avg_pool2d(x, 3, 1, 1).sum()
            + F.adaptive_avg_pool2d(x, 4).sum()
            + F.adaptive_max_pool2d(x, 4).sum()
            + F.max_pool3d(x[None], 2).sum()
            + F.avg_pool3d(x[None], 2).sum()
            + F.adaptive_avg_pool3d(x[None], 3).sum()
            + F.adaptive_max_pool3d(x[None], 3).sum()
        )
        y.backward()
        torch.tpu.synchronize()
    assert torch_tpu.metrics.fallback_counts() == {}


def _normalized(msg):
    # PyTorch's Python meta kernels word a few messages slightly differently from the CPU
    # kernels (torch.Size([1, 0, 4]) for [1, 0, 4], an extra comma): compare the words.
    return re.sub(r"[^a-z0-9]", "", msg.lower().replace("torch.size", ""))


def test_pooling_errors():
    # PyTorch's checks (meta kernels) raise at the call with CPU's messages.
    cases = [
        lambda d: F.max_pool2d(torch.zeros(1, 1, 4, 4, device=d), 3, padding=2),
        lambda d: F.max_pool2d(torch.zeros(1, 1, 2, 2, device=d), 3),
        lambda d: F.avg_pool2d(torch.zeros(1, 1, 4, 4, device=d), 2, padding=2),
        lambda d: F.adaptive_avg_pool2d(torch.zeros(1, 1, 4, 4, device=d), (2, 2, 2)),
        lambda d: F.adaptive_max_pool2d(torch.zeros(1, 0, 4, device=d), 2),
        lambda d: F.max_pool2d(torch.zeros(1, 1, 4, 4, device=d), 2, dilation=0),
        lambda d: F.max_pool3d(torch.zeros(1, 1, 4, 4, device=d), 2),
    ]
    for case in cases:
        with pytest.raises(RuntimeError) as cpu_err:
            case("cpu")
        with pytest.raises(RuntimeError) as tpu_err:
            case("tpu")
        assert _normalized(str(tpu_err.value)) == _normalized(str(cpu_err.value))


# Ops with very many OpInfo samples are checked on an even spread of them.
@pytest.mark.parametrize(
    "name,limit",
    [
        ("nn.functional.max_pool1d", 24),
        ("nn.functional.max_pool2d", 24),
        ("nn.functional.max_pool3d", 16),
        ("nn.functional.avg_pool1d", None),
        ("nn.functional.avg_pool2d", None),
        ("nn.functional.avg_pool3d", None),
        ("nn.functional.adaptive_avg_pool1d", None),
        ("nn.functional.adaptive_avg_pool2d", None),
        ("nn.functional.adaptive_avg_pool3d", None),
        ("nn.functional.adaptive_max_pool1d", None),
        ("nn.functional.adaptive_max_pool2d", None),
        ("nn.functional.adaptive_max_pool3d", None),
        ("max_pool2d_with_indices_backward", 12),
    ],
)
def test_pooling_opinfo(name, limit):
    op, ss = samples(name, limit=limit)
    for s in ss:
        check_sample(op, s)


def _grad_of_grad(f):
    """A function whose backward runs the pooling backward ops' own derivatives."""

    def run(*a):
        gs = torch.autograd.grad(f(*a).pow(2).sum(), a, create_graph=True)
        return sum(g.pow(2).sum() for g in gs)

    return run


@pytest.mark.parametrize(
    "f",
    [
        lambda a: F.max_pool2d(a, 3, 2, 1),
        lambda a: F.max_pool3d(a, 2),
        lambda a: F.avg_pool2d(a, 3, 2, 1, count_include_pad=False),
        lambda a: F.avg_pool3d(a, 2, 1, 1),
        lambda a: F.adaptive_avg_pool2d(a, (4, 5)),
        lambda a: F.adaptive_max_pool2d(a, (4, 5)),
    ],
)
def test_pooling_double_backward(f):
    check_op(_grad_of_grad(f), make((2, 3, 6, 6), torch.float64), grad=True)


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int8, torch.uint8])
def test_integer_pooling(n, dtype):
    # CPU's avg pooling takes int64 and truncates toward zero; its 2-d/3-d max pooling takes
    # every integer type, and padding never wins a max.
    g = torch.Generator().manual_seed(n)
    x = torch.randint(-50 if dtype.is_signed else 0, 100, (2, 3) + (7,) * n, generator=g).to(dtype)
    max_pool = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[n - 1]
    avg_pool = (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)[n - 1]
    for t in (x, noncontiguous(x)):
        if n > 1 or dtype == torch.int64:
            check_op(lambda v: max_pool(v, 3, 2, padding=1, return_indices=True), t)
        if dtype == torch.int64:
            check_op(lambda v: avg_pool(v, 3, 2, padding=1), t)
            check_op(lambda v: avg_pool(v, 2, ceil_mode=True, count_include_pad=False), t)
    if n > 1 and dtype == torch.int64:
        check_op(lambda v: avg_pool(v, 2, divisor_override=3), x)


def test_unsupported_integer_pooling_is_rejected_like_cpu():
    x = torch.zeros(1, 1, 4, 4, dtype=torch.int32)
    for f in (F.avg_pool2d, lambda v, k: F.max_pool2d(v.bool(), k)):
        with pytest.raises(RuntimeError) as cpu_err:
            f(x, 2)
        with pytest.raises(RuntimeError) as tpu_err:
            f(x.to("tpu"), 2)
        assert str(tpu_err.value) == str(cpu_err.value)


# --- fractional max pooling ---------------------------------------------------------------
# Deterministic given `_random_samples`: values, indices and gradients equal CPU's exactly
# (window starts are computed in the input dtype, as CPU does).

FRACTIONAL_CASES = [
    # (dims, input shape, kernel, output size)
    (2, (2, 3, 9, 11), (2, 3), (4, 5)),
    (2, (3, 10, 10), 3, (8, 7)),  # unbatched, overlapping windows
    (2, (2, 2, 7, 7), 2, (1, 3)),
    (3, (2, 3, 6, 7, 8), 2, (3, 4, 5)),
    (3, (2, 5, 5, 6), (2, 1, 3), (3, 3, 2)),  # unbatched
]


def fractional(dims):
    return F.fractional_max_pool2d if dims == 2 else F.fractional_max_pool3d


@pytest.mark.parametrize(
    "case, dtype",
    [(case, torch.float32) for case in FRACTIONAL_CASES]
    + [
        (FRACTIONAL_CASES[i], t)
        for i in (0, 3)
        for t in (torch.bfloat16, torch.float16, torch.float64)
    ],
    ids=str,
)
def test_fractional_max_pool_matches_cpu(case, dtype):
    dims, shape, kernel, out = case
    x = make(shape, dtype)
    batch = shape[0] if len(shape) == dims + 2 else 1
    channels = shape[-dims - 1]
    samples = torch.rand(batch, channels, dims, generator=torch.Generator().manual_seed(1)).to(
        dtype
    )

    def fn(t, s):
        return fractional(dims)(t, kernel, output_size=out, return_indices=True, _random_samples=s)

    check_op(fn, x, samples, grad=True)
    # Non-contiguous input, and NaN (the last NaN of a window wins, as CPU scans).
    xn = x.detach().clone()
    xn.view(-1)[::7] = NAN
    check_op(fn, noncontiguous(xn).requires_grad_(), samples, grad=True)


@pytest.mark.parametrize("dims", [2, 3])
def test_fractional_max_pool_draws_its_samples_on_tpu(dims):
    """Without _random_samples the functional draws them with torch.rand on the input's device:
    replaying the same seed reproduces the op's windows on CPU."""
    shape = (2, 3) + (9,) * dims
    x = make(shape, grad=False)
    xt = x.to("tpu")
    torch.manual_seed(3)
    y, i = fractional(dims)(xt, 2, output_ratio=(0.5,) * dims, return_indices=True)
    torch.manual_seed(3)
    samples = torch.rand(2, 3, dims, device="tpu").cpu()
    yc, ic = fractional(dims)(
        x, 2, output_ratio=(0.5,) * dims, return_indices=True, _random_samples=samples
    )
    assert torch.equal(y.cpu(), yc) and torch.equal(i.cpu(), ic)


def test_fractional_max_pool_errors_match_cpu():
    x = torch.randn(1, 2, 5, 5)
    for call in (
        lambda t: F.fractional_max_pool2d(
            t, 6, output_size=2, _random_samples=torch.rand(1, 2, 2, device=t.device)
        ),
        lambda t: F.fractional_max_pool2d(
            t, 2, output_size=5, _random_samples=torch.rand(1, 2, 2, device=t.device)
        ),
        lambda t: F.fractional_max_pool2d(
            t, 2, output_size=2, _random_samples=torch.rand(1, 3, 2, device=t.device)
        ),
    ):
        with pytest.raises(RuntimeError) as cpu:
            call(x)
        with pytest.raises(RuntimeError) as tpu:
            call(x.to("tpu"))
        # PyTorch's meta kernel words the size checks a little differently from the CPU kernel
        # ("kernel height 6 is too large" / "pool height 6 too large"); the numbers agree.
        numbers = lambda e: re.findall(r"\d+", str(e.value).split("\n")[0])  # noqa: E731
        assert numbers(tpu) == numbers(cpu), (str(cpu.value), str(tpu.value))
