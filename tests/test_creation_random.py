"""Creation ops against CPU; random ops: ranges, statistics, dtypes, reproducibility."""

import pytest
import torch
from op_check import assert_same

pytestmark = pytest.mark.usefixtures("each_mode")

DTYPES = [torch.float32, torch.bfloat16, torch.float64, torch.int64, torch.int32]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_creation_matches_cpu(dtype):
    for make in (
        lambda d: torch.eye(4, dtype=dtype, device=d),
        lambda d: torch.eye(2, 5, dtype=dtype, device=d),
        lambda d: torch.full((2, 3), 7, dtype=dtype, device=d),
        lambda d: torch.zeros(3, 2, dtype=dtype, device=d),
        lambda d: torch.ones(5, dtype=dtype, device=d),
        lambda d: torch.arange(7, dtype=dtype, device=d),
        lambda d: torch.arange(2, 11, 3, dtype=dtype, device=d),
        lambda d: torch.zeros_like(torch.empty(2, 2, dtype=dtype, device=d)),
    ):
        assert_same(make("tpu"), make("cpu"))


def test_arange_lengths_and_float_steps():
    for end in (3, 10, 4):  # different lengths never share a program
        assert_same(torch.arange(end, device="tpu"), torch.arange(end))
    assert_same(torch.arange(1, 4, 0.5, device="tpu"), torch.arange(1, 4, 0.5))
    assert_same(
        torch.arange(-1.0, 1.0, 0.25, dtype=torch.float64, device="tpu"),
        torch.arange(-1.0, 1.0, 0.25, dtype=torch.float64),
    )


@pytest.mark.parametrize("steps", [1, 2, 5, 50])
def test_linspace(steps):
    assert_same(torch.linspace(-3, 7, steps, device="tpu"), torch.linspace(-3, 7, steps))
    assert_same(
        torch.linspace(0, 1, steps, dtype=torch.float64, device="tpu"),
        torch.linspace(0, 1, steps, dtype=torch.float64),
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
def test_rand_randn_ranges_and_statistics(dtype):
    torch.manual_seed(0)
    u = torch.rand(20000, dtype=dtype, device="tpu").cpu().double()
    assert u.min() >= 0 and u.max() <= 1 and abs(u.mean() - 0.5) < 0.02
    n = torch.randn(20000, dtype=dtype, device="tpu").cpu().double()
    assert abs(n.mean()) < 0.03 and abs(n.std() - 1) < 0.03
    x = torch.empty(10000, dtype=dtype, device="tpu").uniform_(-2, 3).cpu().double()
    assert x.min() >= -2 and x.max() <= 3 and abs(x.mean() - 0.5) < 0.1
    y = torch.empty(10000, dtype=dtype, device="tpu").normal_(5, 2).cpu().double()
    assert abs(y.mean() - 5) < 0.1 and abs(y.std() - 2) < 0.1


def test_randint_bernoulli_dropout():
    torch.manual_seed(1)
    r = torch.randint(3, 9, (5000,), device="tpu")
    assert r.dtype == torch.int64
    rc = r.cpu()
    assert rc.min() == 3 and rc.max() == 8
    b = torch.empty(10000, device="tpu").bernoulli_(0.3).cpu()
    assert set(b.unique().tolist()) <= {0.0, 1.0} and abs(b.mean() - 0.3) < 0.02
    x = torch.ones(10000, device="tpu", requires_grad=True)
    y = torch.nn.functional.dropout(x, 0.25)
    yc = y.detach().cpu()
    kept = yc != 0
    assert torch.allclose(yc[kept], torch.full_like(yc[kept], 1 / 0.75))
    assert abs(kept.float().mean() - 0.75) < 0.02
    y.sum().backward()
    assert torch.equal(x.grad.cpu(), yc)  # gradient flows exactly where values were kept
    assert torch.equal(
        torch.nn.functional.dropout(x, 0.25, training=False).detach().cpu(), torch.ones(10000)
    )


def test_seeded_runs_reproduce():
    def draw():
        torch.manual_seed(42)
        return torch.randn(7, device="tpu").cpu(), torch.randint(0, 100, (5,), device="tpu").cpu()

    a, b = draw(), draw()
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_logspace_and_range_out_forms(dtype):
    for start, end, steps, base in [(0, 2, 5, 10.0), (1.5, -3.3, 7, 2.5), (-2, 3, 1, 2.0)]:
        got = torch.logspace(start, end, steps, base=base, dtype=dtype, device="tpu")
        assert_same(got, torch.logspace(start, end, steps, base=base, dtype=dtype))
    for fn in (
        lambda out: torch.arange(1, 11, 3, out=out),
        lambda out: torch.linspace(-1, 1, 9, out=out),
        lambda out: torch.logspace(0, 3, 4, out=out),
    ):
        out = torch.empty(0, dtype=dtype, device="tpu")  # resized, as on CPU
        assert fn(out) is out
        assert_same(out, fn(torch.empty(0, dtype=dtype)))


def test_linspace_integer_steps_are_exact():
    # XLA turns division by a constant into a multiplication by its reciprocal; integer outputs
    # truncate, so an inexact step would lose a whole unit.
    for start, end, steps in [(50, 1, 50), (torch.tensor(50), torch.tensor(1), 50), (3, 100, 98)]:
        assert_same(
            torch.linspace(start, end, steps, dtype=torch.int64, device="tpu"),
            torch.linspace(start, end, steps, dtype=torch.int64),
        )


@pytest.mark.parametrize(
    "row,col,offset", [(4, 3, 0), (4, 3, 1), (3, 5, -1), (5, 5, -7), (0, 3, 0), (6, 2, 9)]
)
def test_tril_triu_indices(row, col, offset):
    for fn in (torch.tril_indices, torch.triu_indices):
        for dtype in (torch.int64, torch.int32):
            expected = fn(row, col, offset, dtype=dtype)
            actual = fn(row, col, offset, dtype=dtype, device="tpu")
            assert_same(actual, expected)


def test_eye_out_forms():
    for args in ((3,), (2, 5), (0,)):
        for dtype in (torch.float32, torch.int64, torch.bool):
            expected = torch.eye(*args, dtype=dtype)
            out = torch.empty(0, dtype=dtype, device="tpu")
            assert torch.eye(*args, out=out) is out
            assert_same(out, expected)
