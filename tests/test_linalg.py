"""torch.linalg basics (Cholesky, triangular solves, LU and what is built on it, QR, eigh, SVD)
compared with LAPACK on the CPU, gradients included, batched and non-contiguous inputs."""

import pytest
import torch
from op_check import check_op, noncontiguous

# Every op test runs in each eager mode (strict, debug, fused).
pytestmark = pytest.mark.usefixtures("each_mode")

# The factorizations round differently from LAPACK (order of operations), by a few ulps of
# the matrix norm.
TOL = {"atol": 1e-4, "rtol": 1e-4}


def randn(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype)


def spd(*shape, dtype=torch.float32):
    a = randn(*shape, dtype=torch.float64, seed=1)
    n = shape[-1]
    return (a @ a.mT + n * torch.eye(n, dtype=torch.float64)).to(dtype)


def tri(*shape, upper=False, dtype=torch.float32):
    a = randn(*shape, dtype=torch.float64, seed=2)
    n = shape[-1]
    a = a + 3 * torch.eye(n, dtype=torch.float64)
    return (a.triu() if upper else a.tril()).to(dtype)


@pytest.mark.parametrize("dtype,upper", [(torch.float32, False), (torch.float64, True)])
def test_cholesky(dtype, upper):
    a = spd(2, 4, 4, dtype=dtype).requires_grad_()
    check_op(lambda x: torch.linalg.cholesky(x, upper=upper), a, grad=True, **TOL)
    check_op(lambda x: torch.cholesky(x, upper=upper), a, grad=True, **TOL)


def test_cholesky_ex_info():
    a = spd(3, 4, 4)
    a[1, 2, 2] = -100.0  # the leading minor of order 3 is not positive-definite
    L, info = torch.linalg.cholesky_ex(a.to("tpu"))
    assert info.cpu().tolist() == torch.linalg.cholesky_ex(a).info.tolist() == [0, 3, 0]
    with pytest.raises(torch.linalg.LinAlgError, match="positive-definite"):
        torch.linalg.cholesky(a)
    # Device-side check: raised at the op in debug mode, at the next sync otherwise, as the
    # same LinAlgError.
    with pytest.raises(torch.linalg.LinAlgError, match="positive-definite"):
        torch.linalg.cholesky(a.to("tpu"))
        torch.tpu.synchronize()
    singular = torch.ones(3, 3)
    with pytest.raises(torch.linalg.LinAlgError, match="singular"):
        torch.linalg.inv(singular)
    with pytest.raises(torch.linalg.LinAlgError, match="singular"):
        torch.linalg.inv(singular.to("tpu"))
        torch.tpu.synchronize()


def test_cholesky_solve_inverse():
    L = torch.linalg.cholesky(spd(2, 3, 3)).requires_grad_()
    b = randn(2, 3, 2).requires_grad_()
    check_op(torch.cholesky_solve, b, L, grad=True, **TOL)
    check_op(torch.cholesky_inverse, L[0].detach().requires_grad_(), grad=True, **TOL)


@pytest.mark.parametrize(
    "upper,left,unit", [(False, True, False), (True, False, True), (True, True, False)]
)
def test_solve_triangular(upper, left, unit):
    a = tri(2, 3, 3, upper=upper).requires_grad_()
    b = (randn(2, 3, 4) if left else randn(1, 4, 3)).requires_grad_()
    check_op(
        lambda x, y: torch.linalg.solve_triangular(
            x, y, upper=upper, left=left, unitriangular=unit
        ),
        a,
        b,
        grad=True,
        **TOL,
    )


def test_triangular_solve():
    a = tri(3, 3, upper=True).requires_grad_()
    b = noncontiguous(randn(3, 2)).requires_grad_()
    check_op(
        lambda x, y: torch.triangular_solve(x, y, upper=True, transpose=True),
        b,
        a,
        grad=True,
        **TOL,
    )


@pytest.mark.parametrize("shape", [(2, 5, 3), (3, 5)])
def test_lu_factor_and_unpack(shape):
    a = randn(*shape).requires_grad_()
    lu, piv = check_op(torch.linalg.lu_factor, a, **TOL)
    check_op(torch.linalg.lu, a, grad=True, **TOL)
    check_op(torch.lu_unpack, lu.cpu(), piv.cpu(), **TOL)


def test_lu_singular_pivots_and_info():
    a = torch.tensor([[0.0, 1.0, 2.0], [0.0, 3.0, 4.0], [0.0, 5.0, 7.0]])
    lu, piv, info = torch.linalg.lu_factor_ex(a.to("tpu"))
    elu, epiv, einfo = torch.linalg.lu_factor_ex(a)
    torch.testing.assert_close(lu.cpu(), elu)
    assert piv.cpu().tolist() == epiv.tolist() and info.item() == einfo.item() == 1


@pytest.mark.parametrize("left,adjoint", [(True, False), (False, True)])
def test_lu_solve(left, adjoint):
    a = randn(2, 4, 4)
    lu, piv = torch.linalg.lu_factor(a)
    b = (randn(2, 4, 3) if left else randn(2, 3, 4)).requires_grad_()
    check_op(
        lambda lu_, p, y: torch.linalg.lu_solve(lu_, p, y, left=left, adjoint=adjoint),
        lu.requires_grad_(),
        piv,
        b,
        grad=True,
        **TOL,
    )


def test_inv_solve_det():
    a = (randn(2, 4, 4) + 2 * torch.eye(4)).requires_grad_()
    check_op(torch.linalg.inv, a, grad=True, **TOL)
    check_op(torch.linalg.solve, a, randn(2, 4, 2).requires_grad_(), grad=True, **TOL)
    check_op(torch.linalg.solve, a, randn(4).requires_grad_(), grad=True, **TOL)
    check_op(torch.linalg.det, a, grad=True, **TOL)
    check_op(torch.linalg.slogdet, a, grad=True, **TOL)
    check_op(
        lambda x: torch.linalg.matrix_power(x, -2),
        noncontiguous(randn(3, 3) + 2 * torch.eye(3)),
        **TOL,
    )


@pytest.mark.parametrize(
    "shape,mode", [((5, 3), "reduced"), ((3, 5), "complete"), ((2, 4, 4), "r")]
)
def test_qr(shape, mode):
    a = randn(*shape).requires_grad_(mode != "r")
    check_op(lambda x: torch.linalg.qr(x, mode=mode), a, grad=mode == "reduced", **TOL)


def test_eigh():
    a = randn(2, 5, 5)
    a = (a + a.mT).requires_grad_()
    check_op(lambda x: torch.linalg.eigh(x)[0], a, grad=True, **TOL)
    # Eigenvectors are unique up to sign: compare |V| and the reconstruction.
    W, V = torch.linalg.eigh(a.detach().to("tpu"))
    torch.testing.assert_close(V.abs().cpu(), torch.linalg.eigh(a.detach())[1].abs(), **TOL)
    torch.testing.assert_close((V @ torch.diag_embed(W) @ V.mT).cpu(), a.detach(), **TOL)
    check_op(lambda x: torch.linalg.eigvalsh(x, UPLO="U"), randn(4, 4), **TOL)


@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 5)])
def test_svd(shape):
    a = randn(*shape).requires_grad_()
    check_op(torch.linalg.svdvals, a, grad=True, **TOL)
    U, S, Vh = torch.linalg.svd(a.detach().to("tpu"), full_matrices=True)
    eU, eS, eVh = torch.linalg.svd(a.detach(), full_matrices=True)
    k = S.shape[-1]
    torch.testing.assert_close(U[..., :k].abs().cpu(), eU[..., :k].abs(), **TOL)
    torch.testing.assert_close(Vh[..., :k, :].abs().cpu(), eVh[..., :k, :].abs(), **TOL)
    eye = torch.eye(U.shape[-1])
    torch.testing.assert_close((U.mT @ U).cpu(), eye.expand_as(U.mT @ U), **TOL)
    check_op(torch.linalg.pinv, a, grad=True, **TOL)
    check_op(lambda x: torch.linalg.matrix_norm(x, ord="nuc"), a, grad=True, **TOL)


def test_householder_product():
    a, tau = torch.geqrf(randn(2, 5, 3))
    check_op(torch.linalg.householder_product, a, tau, **TOL)
    check_op(torch.linalg.householder_product, noncontiguous(a[0]), tau[0], **TOL)


@pytest.mark.parametrize("left,transpose", [(True, False), (False, True)])
def test_ormqr(left, transpose):
    a, tau = torch.geqrf(randn(5, 3))
    c = (randn(5, 2) if left else randn(2, 5)).requires_grad_()
    check_op(
        lambda q, t, x: torch.ormqr(q, t, x, left=left, transpose=transpose),
        a,
        tau,
        c,
        grad=True,
        **TOL,
    )


@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 5), (4, 4)])
def test_geqrf(shape):
    a = randn(*shape)
    check_op(torch.geqrf, a, **TOL)
    check_op(torch.geqrf, noncontiguous(a), **TOL)


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize(
    "shapes", [((2, 5, 3), (2, 5, 2)), ((3, 5), (3, 2)), ((4, 3), (4,)), ((2, 3, 3), (1, 3, 2))]
)
def test_lstsq(driver, shapes):
    a = randn(*shapes[0]).requires_grad_()
    b = randn(*shapes[1], seed=3).requires_grad_()
    # Only the solution is differentiable; the other outputs are compared as values.
    check_op(lambda x, y: torch.linalg.lstsq(x, y, driver=driver), a.detach(), b.detach(), **TOL)
    check_op(lambda x, y: torch.linalg.lstsq(x, y, driver=driver).solution, a, b, grad=True, **TOL)


def sym(*shape, seed=4):
    a = randn(*shape, seed=seed)
    return a + a.mT


@pytest.mark.parametrize("shape", [(5, 5), (3, 6, 6), (1, 1)])
def test_ldl_factor(shape):
    # Random symmetric matrices take both 1x1 and 2x2 pivots; the pivots must be LAPACK's.
    a = sym(*shape)
    check_op(torch.linalg.ldl_factor_ex, a, **TOL)
    check_op(torch.linalg.ldl_factor, noncontiguous(a), **TOL)


def test_ldl_factor_singular():
    a = torch.zeros(4, 4)
    a[1:, 1:] = torch.eye(3)
    check_op(torch.linalg.ldl_factor_ex, a)


@pytest.mark.parametrize("shapes", [((5, 5), (5, 3)), ((2, 6, 6), (6, 2)), ((6, 6), (2, 6, 1))])
def test_ldl_solve(shapes):
    a = sym(*shapes[0])
    ld, piv = torch.linalg.ldl_factor(a)
    b = randn(*shapes[1], seed=5)
    check_op(torch.linalg.ldl_solve, ld, piv, b, **TOL)
    check_op(torch.linalg.ldl_solve, ld, piv, noncontiguous(b), **TOL)


def test_matrix_exp():
    g = torch.Generator().manual_seed(11)
    for a in (
        torch.randn(4, 4, generator=g),
        torch.randn(3, 5, 5, generator=g) * 4,
        torch.zeros(2, 2),
        torch.randn(6, 6, generator=g) * 1e-3,
        torch.diag(torch.tensor([1.0, -2.0, 3.0])),
    ):
        # float64 inside: within rounding of the exact exponential (CPU's float32 kernel is a few
        # ulp off), so the comparison is relative to the largest entry.
        exact = torch.linalg.matrix_exp(a.double())
        got = torch.linalg.matrix_exp(a.to("tpu"))
        assert got.dtype == torch.float32 and got.shape == a.shape
        torch.testing.assert_close(
            got.cpu().double(), exact, atol=2e-7 * exact.abs().max().item(), rtol=2e-7
        )
    check_op(
        torch.linalg.matrix_exp,
        torch.randn(3, 3, generator=g, dtype=torch.float64).requires_grad_(),
        grad=True,
    )
    check_op(
        torch.linalg.matrix_exp, noncontiguous(torch.randn(4, 4, generator=g, dtype=torch.float64))
    )


# ---- complex dtypes: LU, solve, inv and triangular solves ------------------------------------
# Gradients are taken of out * w for a fixed complex w, so the cotangent reaching the op is
# complex (check_op's own cotangents are real) and a missing conjugation shows.

CDTYPES = (torch.complex64, torch.complex128)
CTOL = {
    torch.complex64: {"atol": 1e-4, "rtol": 1e-4},
    torch.complex128: {"atol": 1e-10, "rtol": 1e-10},
}


def crandn(*shape, dtype=torch.complex64, seed=0):
    g = torch.Generator().manual_seed(seed)
    re = torch.randn(*shape, generator=g, dtype=torch.float64)
    im = torch.randn(*shape, generator=g, dtype=torch.float64)
    return torch.complex(re, im).to(dtype)


def cmat(*shape, dtype, seed=0):
    """A well-conditioned complex matrix (batch): random plus 2 on the diagonal."""
    n = shape[-1]
    return (crandn(*shape, dtype=torch.complex128, seed=seed) + 2 * torch.eye(n)).to(dtype)


def ctri(*shape, upper, dtype, seed=2):
    a = crandn(*shape, dtype=torch.complex128, seed=seed) + 3 * torch.eye(shape[-1])
    return (a.triu() if upper else a.tril()).to(dtype)


def weighted(fn, *shapes, dtype):
    """fn's (first) output times fixed complex weights: (wrapped fn, weights)."""
    ws = [crandn(*s, dtype=dtype, seed=9 + i) for i, s in enumerate(shapes)]

    def wrapped(*args):
        *xs, w = args
        out = fn(*xs)
        return out * w

    return wrapped, ws[0]


@pytest.mark.parametrize("dtype", CDTYPES)
def test_complex_solve(dtype):
    tol = CTOL[dtype]
    # Column-major A (a transposed view) and a strided B: both non-contiguous.
    a = cmat(2, 4, 4, dtype=dtype).mT.requires_grad_()
    assert not a.is_contiguous()
    b = noncontiguous(crandn(2, 4, 3, dtype=dtype, seed=3)).requires_grad_()
    fn, w = weighted(torch.linalg.solve, (2, 4, 3), dtype=dtype)
    check_op(fn, a, b, w, grad=True, **tol)
    # X A = B, and a batch of A broadcast against one B.
    fn, w = weighted(lambda x, y: torch.linalg.solve(x, y, left=False), (2, 3, 4), dtype=dtype)
    check_op(fn, a, b.detach().mT.requires_grad_(), w, grad=True, **tol)
    fn, w = weighted(torch.linalg.solve, (2, 4, 2), dtype=dtype)
    check_op(fn, a, crandn(4, 2, dtype=dtype, seed=4).requires_grad_(), w, grad=True, **tol)
    # Vector right-hand side.
    fn, w = weighted(torch.linalg.solve, (2, 4), dtype=dtype)
    check_op(fn, a, crandn(4, dtype=dtype, seed=5).requires_grad_(), w, grad=True, **tol)
    check_op(lambda x, y: torch.linalg.solve_ex(x, y), a.detach(), b.detach(), **tol)


@pytest.mark.parametrize("dtype", CDTYPES)
def test_complex_inv(dtype):
    tol = CTOL[dtype]
    a = noncontiguous(cmat(3, 4, 4, dtype=dtype, seed=6)).requires_grad_()
    fn, w = weighted(torch.linalg.inv, (3, 4, 4), dtype=dtype)
    check_op(fn, a, w, grad=True, **tol)
    check_op(torch.linalg.inv_ex, a.detach(), **tol)
    # A singular complex matrix: info and the device-side LinAlgError as on the CPU.
    singular = torch.ones(3, 3, dtype=dtype) * (1 + 1j)
    info = torch.linalg.inv_ex(singular).info.item()
    assert info != 0 and torch.linalg.inv_ex(singular.to("tpu")).info.item() == info
    with pytest.raises(torch.linalg.LinAlgError, match="singular"):
        torch.linalg.inv(singular.to("tpu"))
        torch.tpu.synchronize()


@pytest.mark.parametrize("dtype", CDTYPES)
@pytest.mark.parametrize("shape", [(2, 5, 3), (4, 4)])
def test_complex_lu_factor_and_unpack(dtype, shape):
    tol = CTOL[dtype]
    a = crandn(*shape, dtype=dtype, seed=7).requires_grad_()
    lu, piv = check_op(torch.linalg.lu_factor, a.detach(), **tol)
    check_op(torch.linalg.lu_factor_ex, noncontiguous(a.detach()), **tol)
    check_op(torch.linalg.lu, a, grad=True, **tol)
    check_op(torch.lu_unpack, lu.cpu(), piv.cpu(), **tol)


def test_complex_lu_pivots_like_getrf():
    # LAPACK's izamax picks the pivot of largest |Re| + |Im|, not of largest |z|: in the first
    # column 2+2j wins (4 > 3) although |3| > |2+2j|.
    a = (
        torch.tensor([[1.0, 1.0, 0.0], [3.0, 0.0, 1.0], [2 + 2j, 1j, 1.0]], dtype=torch.complex128)
        .mT.contiguous()
        .mT
    )
    col = a[:, 0]
    assert int(col.abs().argmax()) != int((col.real.abs() + col.imag.abs()).argmax())
    lu, piv, info = torch.linalg.lu_factor_ex(a.to("tpu"))
    elu, epiv, einfo = torch.linalg.lu_factor_ex(a)
    assert piv.cpu().tolist() == epiv.tolist() and info.item() == einfo.item() == 0
    torch.testing.assert_close(lu.cpu(), elu, **CTOL[torch.complex128])
    # A zero column: no pivot to divide by, info names the step as getrf does.
    z = torch.tensor([[0, 1j, 2], [0, 3, 4j], [0, 5, 7]], dtype=torch.complex64)
    lu, piv, info = torch.linalg.lu_factor_ex(z.to("tpu"))
    elu, epiv, einfo = torch.linalg.lu_factor_ex(z)
    torch.testing.assert_close(lu.cpu(), elu)
    assert piv.cpu().tolist() == epiv.tolist() and info.item() == einfo.item() == 1


@pytest.mark.parametrize("dtype", CDTYPES)
@pytest.mark.parametrize(
    "left,adjoint", [(True, False), (True, True), (False, False), (False, True)]
)
def test_complex_lu_solve(dtype, left, adjoint):
    tol = CTOL[dtype]
    lu, piv = torch.linalg.lu_factor(crandn(2, 4, 4, dtype=dtype, seed=8))
    shape = (2, 4, 3) if left else (2, 3, 4)
    b = noncontiguous(crandn(*shape, dtype=dtype, seed=3)).requires_grad_()
    fn, w = weighted(
        lambda lu_, p, y: torch.linalg.lu_solve(lu_, p, y, left=left, adjoint=adjoint),
        shape,
        dtype=dtype,
    )
    check_op(fn, lu.requires_grad_(), piv, b, w, grad=True, **tol)


@pytest.mark.parametrize("dtype", CDTYPES)
@pytest.mark.parametrize(
    "upper,left,unit", [(False, True, False), (True, False, True), (True, True, False)]
)
def test_complex_solve_triangular(dtype, upper, left, unit):
    tol = CTOL[dtype]
    a = ctri(2, 3, 3, upper=upper, dtype=dtype).requires_grad_()
    shape = (2, 3, 4) if left else (1, 4, 3)
    b = noncontiguous(crandn(*shape, dtype=dtype, seed=3)).requires_grad_()
    fn, w = weighted(
        lambda x, y: torch.linalg.solve_triangular(
            x, y, upper=upper, left=left, unitriangular=unit
        ),
        (2, *shape[1:]),
        dtype=dtype,
    )
    check_op(fn, a, b, w, grad=True, **tol)


@pytest.mark.parametrize("dtype", CDTYPES)
@pytest.mark.parametrize("transpose", [False, True])
def test_complex_triangular_solve(dtype, transpose):
    tol = CTOL[dtype]
    a = ctri(3, 3, upper=False, dtype=dtype).requires_grad_()
    b = noncontiguous(crandn(3, 2, dtype=dtype, seed=3)).requires_grad_()
    fn, w = weighted(
        lambda y, x: torch.triangular_solve(y, x, upper=False, transpose=transpose)[0],
        (3, 2),
        dtype=dtype,
    )
    check_op(fn, b, a, w, grad=True, **tol)


@pytest.mark.parametrize("dtype", CDTYPES)
def test_complex_det_slogdet(dtype):
    tol = CTOL[dtype]
    a = noncontiguous(cmat(2, 4, 4, dtype=dtype, seed=10)).requires_grad_()
    fn, w = weighted(torch.linalg.det, (2,), dtype=dtype)
    check_op(fn, a, w, grad=True, **tol)
    # sign is complex (|sign| = 1), logabsdet real; both differentiable.
    check_op(lambda x: torch.linalg.slogdet(x).sign.real, a, grad=True, **tol)
    check_op(lambda x: torch.linalg.slogdet(x).logabsdet, a, grad=True, **tol)
    check_op(torch.linalg.slogdet, a.detach(), **tol)
    # A singular one: det 0, sign 0 and logabsdet -inf as on the CPU.
    singular = torch.ones(2, 3, 3, dtype=dtype) * (1 - 2j)
    check_op(torch.linalg.slogdet, singular, **tol)
    check_op(torch.linalg.det, singular, **tol)
