"""Special functions (gamma family, Bessel, erfcx/ndtri/log_ndtr, entr, xlog1py, nextafter,
frexp) on tpu against PyTorch's CPU kernels."""

import pytest
import torch
from op_check import check_op, noncontiguous

# Every test here runs in strict, debug and fused mode (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_mode")

F32, BF16, F64 = torch.float32, torch.bfloat16, torch.float64
S = torch.special
INF, NAN = float("inf"), float("nan")


def uniform(shape, lo, hi, dtype=F32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


UNARY = {
    # name: (function, lo, hi, differentiable)
    "lgamma": (torch.lgamma, -9, 30, True),
    "digamma": (torch.digamma, -9, 30, True),
    "i0": (torch.i0, -20, 20, True),
    "i0e": (S.i0e, -30, 30, True),
    "i1": (S.i1, -20, 20, True),
    "i1e": (S.i1e, -30, 30, True),
    "erfcx": (S.erfcx, -5, 30, True),
    "ndtri": (S.ndtri, 0, 1, True),
    "log_ndtr": (S.log_ndtr, -30, 8, True),
    "entr": (S.entr, 0, 5, True),
    "modified_bessel_i0": (S.modified_bessel_i0, -20, 20, False),
    "modified_bessel_i1": (S.modified_bessel_i1, -20, 20, False),
    "modified_bessel_k0": (S.modified_bessel_k0, 0, 30, False),
    "modified_bessel_k1": (S.modified_bessel_k1, 0, 30, False),
    "scaled_modified_bessel_k0": (S.scaled_modified_bessel_k0, 0, 60, False),
    "scaled_modified_bessel_k1": (S.scaled_modified_bessel_k1, 0, 60, False),
    "bessel_j0": (S.bessel_j0, -60, 60, False),
    "bessel_j1": (S.bessel_j1, -60, 60, False),
    "bessel_y0": (S.bessel_y0, 0, 60, False),
    "bessel_y1": (S.bessel_y1, 0.05, 60, False),
    "spherical_bessel_j0": (S.spherical_bessel_j0, -30, 30, False),
    "airy_ai": (S.airy_ai, -10, 10, False),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_float32(name):
    fn, lo, hi, diff = UNARY[name]
    x = uniform((64,), lo, hi).requires_grad_(diff)
    check_op(fn, x, grad=diff)


@pytest.mark.parametrize("name", ["lgamma", "digamma", "i0", "i1e", "ndtri", "entr", "bessel_j0"])
def test_unary_dtypes_and_layouts(name):
    fn, lo, hi, _ = UNARY[name]
    check_op(fn, noncontiguous(uniform((3, 5), lo, hi, seed=1)))
    if name not in ("ndtri", "bessel_j0"):  # CPU has no bf16 kernel
        check_op(fn, uniform((2, 7), lo, hi, BF16, seed=2))
    check_op(fn, uniform((2, 7), max(lo, -5), min(hi, 5), seed=3).round().to(torch.int64))
    check_op(fn, torch.tensor([True, False]))


def test_gamma_poles_and_infinities():
    x = torch.tensor(
        [0.0, -0.0, -1.0, -2.0, -2.5, 1.0, 2.0, 1e-30, 1e30, INF, -INF, NAN, 0.5, -0.5]
    )
    check_op(torch.lgamma, x)
    check_op(torch.digamma, x)
    check_op(torch.lgamma, x[5:11].double())


def test_polygamma():
    x = uniform((40,), 0.1, 20).requires_grad_()
    for n in range(4):
        check_op(lambda t: torch.polygamma(n, t), x, grad=True)
    check_op(lambda t: torch.polygamma(1, t), uniform((40,), -6, 0.5, seed=4))
    check_op(lambda t: S.polygamma(2, t), uniform((40,), 0.5, 9, seed=5))
    check_op(
        lambda t: torch.polygamma(3, t), uniform((40,), -60, 0, seed=6)
    )  # shifted up to q >= 0


def test_zeta():
    s = uniform((32,), 1.01, 12)
    q = uniform((32,), 0.05, 20, seed=1)
    check_op(S.zeta, s, q)
    check_op(
        S.zeta,
        torch.tensor([1.0, 0.5, 2.0, 2.0, 2.0, 3.0, 2.0]),
        torch.tensor([1.0, 1.0, 0.0, -1.0, -1.5, -2.5, INF]),
    )
    check_op(S.zeta, torch.tensor([4.0, 3.0, 2.5]), torch.tensor([-30.25, -100.0, -3.5]))


def test_bessel_special_values():
    x = torch.tensor([0.0, -0.0, -1.0, INF, -INF, NAN, 1e-30, 100.0, 8.0, 2.0])
    for name in sorted(UNARY):
        if name in ("ndtri", "entr", "lgamma", "digamma"):
            continue
        check_op(UNARY[name][0], x)


def test_erf_family_special_values():
    check_op(S.erfcx, torch.tensor([-10.0, -9.0, 0.0, 1e30, INF, -INF, NAN, 26.0]))
    check_op(S.ndtri, torch.tensor([0.0, 1.0, -0.1, 0.5, 1e-20, 1 - 2**-24, 1.5, NAN]))
    check_op(S.log_ndtr, torch.tensor([-40.0, -1.0, 0.0, 10.0, INF, -INF, NAN]))
    check_op(S.entr, torch.tensor([0.0, -1.0, NAN, INF]))


def test_xlog1py():
    x = uniform((5, 6), -3, 3).requires_grad_()
    y = uniform((5, 6), -0.9, 5, seed=1).requires_grad_()
    check_op(S.xlog1py, x, y, grad=True)
    check_op(S.xlog1py, torch.tensor([0.0, 0.0, 1.0, 0.0]), torch.tensor([NAN, -1.0, -1.0, -2.0]))
    check_op(S.xlog1py, uniform((4,), 0, 3, BF16), uniform((4,), 0, 3, BF16, seed=2))


def test_nextafter():
    x = torch.tensor([0.0, 1.0, -0.0, INF, 1.0, -1.0, 3.5, NAN, -INF, 1e-45])
    y = torch.tensor([1.0, 2.0, -1.0, 0.0, 1.0, -2.0, -INF, 1.0, 0.0, 0.0])
    check_op(torch.nextafter, x, y)
    check_op(torch.nextafter, x.double(), y.double())
    check_op(torch.nextafter, x.bfloat16(), y.bfloat16())


def test_frexp():
    x = torch.tensor([0.0, -0.0, INF, -INF, NAN, 3.0, -0.75, 1e-40, 1e38, 1.0])
    check_op(torch.frexp, x)
    check_op(torch.frexp, x.double())
    check_op(torch.frexp, x.bfloat16())
    check_op(torch.frexp, uniform((6,), -100, 100).requires_grad_(), grad=True)


def test_mvlgamma():
    for p in (1, 3, 5):
        x = uniform((4, 5), (p - 1) / 2 + 0.1, 10, seed=p)
        check_op(lambda t: torch.mvlgamma(t, p), x)
    with pytest.raises(RuntimeError, match="greater than"):  # device-side check
        torch.mvlgamma(torch.zeros(3, device="tpu"), 3).cpu()


POLYNOMIALS = [
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
]


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_orthogonal_polynomials(name):
    fn = getattr(S, name)
    x = torch.cat(
        [uniform((30,), -1.5, 1.5), torch.tensor([-1.0, 1.0, 0.0, 0.5, 0.25, 2.0])]
    )  # CPU leaves NaN x undefined
    n = torch.cat(
        [uniform((30,), -2, 14, seed=1).trunc(), torch.tensor([3.0, 4.0, 5.0, 12.0, 2.0, 9.0])]
    )
    check_op(fn, x, n)
    if name in ("chebyshev_polynomial_t", "hermite_polynomial_h"):
        check_op(fn, x[:6], 3)  # Python scalar degree
        check_op(fn, torch.arange(-2, 4), torch.arange(6))  # integer tensors


@pytest.mark.parametrize("fn", [torch.igamma, torch.igammac], ids=["igamma", "igammac"])
def test_incomplete_gamma(fn):
    a = torch.cat([uniform((40,), 0.001, 40), torch.tensor([0.5, 120.0])])
    x = torch.cat([uniform((40,), 0, 60, seed=1), torch.tensor([0.5, 110.0])])
    check_op(fn, a, x)
    edges = [0.0, -1.0, INF, NAN, 1.0]
    check_op(
        fn,
        torch.tensor([p for p in edges for q in edges]),
        torch.tensor([q for p in edges for q in edges]),
    )
    if fn is torch.igamma:
        check_op(fn, uniform((3, 4), 0.1, 5, BF16), uniform((4,), 0, 5, BF16, seed=2))
