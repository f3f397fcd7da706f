"""searchsorted, bucketize, isin, histc (lowering/reduction/search.cpp) and histogram (aten/histogram_kernels.cpp)
against PyTorch's CPU kernels."""

import pytest
import torch
from op_check import check_op, noncontiguous

# Every op test runs in each eager mode (strict, debug, fused).
pytestmark = pytest.mark.usefixtures("each_mode")

NAN = float("nan")


def sorted_rows(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * 4).round().sort(-1).values.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_1d_and_rows(dtype, right):
    seq = sorted_rows(9, dtype=dtype)  # repeated values: ties must land where CPU puts them
    values = (torch.arange(-12, 12, dtype=torch.float32) / 2).to(dtype).reshape(4, 6)
    check_op(lambda s, v: torch.searchsorted(s, v, right=right), seq, values)
    check_op(
        lambda s, v: torch.searchsorted(s, v, side="right" if right else "left", out_int32=True),
        seq,
        values,
    )
    rows = sorted_rows(3, 7, dtype=dtype, seed=1)
    check_op(lambda s, v: torch.searchsorted(s, v, right=right), rows, values[:3, :5])
    check_op(lambda s: torch.searchsorted(s, 1, right=right), seq)


def test_searchsorted_sorter_nan_empty_and_noncontiguous():
    g = torch.Generator().manual_seed(3)
    seq = torch.randn(2, 8, generator=g)
    sorter = seq.argsort(-1)
    values = torch.tensor([[-1.0, 0.0, NAN, 5.0], [0.5, -5.0, 0.1, NAN]])
    check_op(lambda s, v, o: torch.searchsorted(s, v, sorter=o), seq, values, sorter)
    with_nan = torch.tensor([0.0, 1.0, 2.0, NAN])
    check_op(lambda s, v: torch.searchsorted(s, v), with_nan, torch.tensor([NAN, 1.5, 3.0]))
    check_op(
        lambda s, v: torch.searchsorted(s, v, right=True), with_nan, torch.tensor([NAN, 1.0, 3.0])
    )
    check_op(lambda s, v: torch.searchsorted(s, v), torch.zeros(0), torch.tensor([1.0, 2.0]))
    check_op(
        lambda s, v: torch.searchsorted(s, v),
        sorted_rows(3, 6),
        noncontiguous(torch.randn(3, 4, generator=g)),
    )


@pytest.mark.parametrize("right", [False, True])
def test_bucketize(right):
    boundaries = torch.tensor([-1.0, 0.0, 0.0, 2.5, 4.0])
    x = torch.tensor([[-3.0, -1.0, 0.0], [1.0, 2.5, 9.0]])
    check_op(lambda v, b: torch.bucketize(v, b, right=right), x, boundaries)
    check_op(
        lambda v, b: torch.bucketize(v, b, right=right, out_int32=True),
        noncontiguous(x),
        boundaries,
    )
    check_op(lambda b: torch.bucketize(2.5, b, right=right), boundaries)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
@pytest.mark.parametrize("invert", [False, True])
def test_isin(dtype, invert):
    x = torch.tensor([[0, 1, 2, 3], [4, 5, 1, 0]]).to(dtype)
    tests = torch.tensor([1, 4, 9]).to(dtype)
    check_op(lambda a, b: torch.isin(a, b, invert=invert), x, tests)
    check_op(lambda a, b: torch.isin(a, b, invert=invert), noncontiguous(x), tests)
    check_op(lambda a: torch.isin(a, 1, invert=invert), x)
    check_op(lambda b: torch.isin(1, b, invert=invert), tests)


def test_isin_rejects_bool_as_cpu_does():
    with pytest.raises(RuntimeError, match="Unsupported input type encountered for isin"):
        torch.isin(
            torch.ones(2, dtype=torch.bool, device="tpu"),
            torch.ones(2, dtype=torch.bool, device="tpu"),
        )


def test_isin_nan_and_promotion():
    check_op(torch.isin, torch.tensor([NAN, 1.0, 2.5]), torch.tensor([NAN, 2.5]))
    check_op(torch.isin, torch.tensor([1, 2, 3]), torch.tensor([2.0, 2.5]))
    check_op(lambda a: torch.isin(a, 2.5), torch.tensor([1, 2, 3]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_histc(dtype):
    g = torch.Generator().manual_seed(5)
    x = torch.randn(200, generator=g).to(dtype)
    check_op(lambda t: torch.histc(t, bins=10), x)  # the data's own range
    check_op(lambda t: torch.histc(t, bins=7, min=-1, max=1), x)  # out-of-range values dropped
    check_op(
        lambda t: torch.histc(t, bins=4, min=0, max=3),
        torch.tensor([0.0, 1.0, 2.0, 3.0, 3.0, NAN], dtype=dtype),
    )
    check_op(lambda t: torch.histc(t, bins=5), torch.full((4,), 2.0, dtype=dtype))  # widened by 1
    check_op(lambda t: torch.histc(t, bins=6), noncontiguous(x.reshape(20, 10)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_histogram(dtype):
    g = torch.Generator().manual_seed(6)
    x = torch.randn(300, generator=g).to(dtype)
    w = torch.rand(300, generator=g).to(dtype)
    if dtype == torch.bfloat16:  # CPU has no bf16 histogram kernel: the error matches
        with pytest.raises(RuntimeError, match="not implemented for 'BFloat16'"):
            torch.histogram(x.to("tpu"), 5)
        return
    check_op(lambda t: torch.histogram(t, 10), x)
    check_op(lambda t: torch.histogram(t, 7, range=(-1.0, 1.0)), x)  # outside values dropped
    check_op(lambda t, v: torch.histogram(t, 6, weight=v, density=True), x, w)
    check_op(
        lambda t: torch.histogram(t, 4, range=(0.0, 3.0)),
        torch.tensor([0.0, 1.0, 2.0, 3.0, 3.0, NAN], dtype=dtype),
    )
    check_op(lambda t: torch.histogram(t, 3), torch.full((4,), 2.0, dtype=dtype))  # widened by 0.5
    check_op(lambda t: torch.histogram(t, 3), torch.zeros(0, dtype=dtype))  # [0, 1]
    check_op(lambda t: torch.histogram(t, 8), noncontiguous(x.reshape(30, 10)))
    hist, edges = (
        torch.empty(0, dtype=dtype, device="tpu"),
        torch.empty(0, dtype=dtype, device="tpu"),
    )
    torch.histogram(x.to("tpu"), 5, out=(hist, edges))
    expected = torch.histogram(x, 5)
    torch.testing.assert_close((hist.cpu(), edges.cpu()), tuple(expected))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_histogram_with_bin_edge_tensor(dtype):
    g = torch.Generator().manual_seed(7)
    x = torch.randn(300, generator=g).to(dtype)
    w = torch.rand(300, generator=g).to(dtype)
    uneven = torch.tensor([-2.0, -0.5, 0.0, 0.25, 1.0, 3.0], dtype=dtype)
    check_op(lambda t, e: torch.histogram(t, e), x, uneven)
    check_op(lambda t, e, v: torch.histogram(t, e, weight=v), x, uneven, w)
    check_op(lambda t, e, v: torch.histogram(t, e, weight=v, density=True), x, uneven, w)
    check_op(lambda t, e: torch.histogram(t, e, density=True), x, uneven)
    # Values on edges (the last edge belongs to the last bin), NaN and out-of-range values,
    # non-contiguous input and edges.
    on_edges = torch.tensor([-2.0, -0.5, 0.0, 3.0, 3.5, -9.0, NAN], dtype=dtype)
    check_op(lambda t, e: torch.histogram(t, e), on_edges, uneven)
    check_op(
        lambda t, e: torch.histogram(t, e),
        noncontiguous(x.reshape(30, 10)),
        noncontiguous(uneven.reshape(1, 6))[0],
    )
    hist = torch.empty(0, dtype=dtype, device="tpu")
    edges = torch.empty(0, dtype=dtype, device="tpu")
    torch.histogram(x.to("tpu"), uneven.to("tpu"), out=(hist, edges))
    expected = torch.histogram(x, uneven)
    torch.testing.assert_close((hist.cpu(), edges.cpu()), tuple(expected), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_histogramdd(dtype):
    g = torch.Generator().manual_seed(8)
    x = torch.randn(40, 3, generator=g).to(dtype)
    w = torch.rand(40, generator=g).to(dtype)
    check_op(lambda t: torch.histogramdd(t, [3, 4, 2]), x)
    check_op(lambda t, v: torch.histogramdd(t, 3, weight=v, density=True), x, w)
    check_op(lambda t: torch.histogramdd(t, [2, 2, 2], range=[-1.0, 1.0, 0.0, 2.0, -3.0, 0.0]), x)
    edges = [
        torch.tensor([-1.0, 0.0, 2.0], dtype=dtype),
        torch.linspace(-2, 2, 5, dtype=dtype),
        torch.tensor([0.0, 0.5], dtype=dtype),
    ]
    check_op(lambda t, *e: torch.histogramdd(t, list(e)), x, *edges)
    check_op(lambda t: torch.histogramdd(t, [2, 3]), noncontiguous(x.reshape(4, 10, 3))[..., :2])


def test_histogram_errors_match_cpu():
    cases = [
        lambda d: torch.histogram(torch.tensor([1.0, 2.0], device=d), 0),
        lambda d: torch.histogram(torch.tensor([1.0, 2.0], device=d), 2, range=(3.0, 1.0)),
        lambda d: torch.histogram(torch.tensor([1.0, float("inf")], device=d), 2),
        lambda d: torch.histogram(
            torch.tensor([1.0, 2.0], device=d), 2, weight=torch.ones(1, device=d)
        ),
        lambda d: torch.histogram(torch.tensor([1, 2], device=d), 2),
        lambda d: torch.histogramdd(torch.ones(5, 2, device=d), [2, 3, 4]),
        lambda d: torch.histogramdd(torch.ones(5, 2, device=d), [2, 2], range=[0.0, 1.0]),
        lambda d: torch.histogramdd(torch.ones(5, device=d), [2]),
        lambda d: torch.histogram(
            torch.ones(3, device=d), torch.ones(2, dtype=torch.float64, device=d)
        ),
        lambda d: torch.histogram(torch.ones(3, device=d), torch.ones(2, 2, device=d)),
        lambda d: torch.histogram(torch.ones(3, device=d), torch.ones(0, device=d)),
        lambda d: torch.histogram(torch.ones(3, device=d), torch.ones(1, device=d)),
        lambda d: torch.histogram(
            torch.ones(3, device=d), torch.ones(2, device=d), weight=torch.ones(2, device=d)
        ),
        lambda d: torch.histogramdd(
            torch.ones(5, 2, device=d), [torch.ones(2, device=d), torch.ones(2, 1, device=d)]
        ),
        lambda d: torch.histogramdd(
            torch.ones(5, 2, device=d), [torch.ones(2, device=d), torch.ones(1, device=d)]
        ),
    ]
    for case in cases:
        with pytest.raises(RuntimeError) as cpu_err:
            case("cpu")
        with pytest.raises(RuntimeError) as tpu_err:
            case("tpu")
        assert str(tpu_err.value) == str(cpu_err.value)


def test_histc_bad_range_raises():
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        torch.histc(torch.ones(3, device="tpu"), bins=3, min=2, max=1)
        torch.tpu.synchronize()
