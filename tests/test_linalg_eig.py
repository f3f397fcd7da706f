"""torch.linalg.eig / eigvals on tpu compared with LAPACK's geev on the CPU.

Eigenvalues come out in another order than LAPACK's and eigenvectors are unique only up to a
complex phase (and, for a repeated eigenvalue, up to a basis of its eigenspace), so results are
compared the way that is invariant to that: eigenvalues as multisets (each matched to the
nearest free one), eigenvectors through A V = V diag(L), unit 2-norms and, for simple eigenvalues,
|<v_tpu, v_cpu>| = 1."""

import pytest
import torch
from op_check import noncontiguous

# Every op test runs in each eager mode (strict, debug, fused).
pytestmark = pytest.mark.usefixtures("each_mode")

DTYPES = (torch.float32, torch.float64, torch.complex64, torch.complex128)
# Backward error of the QR algorithm: a few hundred ulps of the matrix norm for these sizes.
TOL = {
    torch.float32: 2e-5,
    torch.complex64: 2e-5,
    torch.float64: 1e-12,
    torch.complex128: 1e-12,
}


def randn(*shape, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_complex:
        return torch.complex(
            torch.randn(*shape, generator=g, dtype=torch.float64),
            torch.randn(*shape, generator=g, dtype=torch.float64),
        ).to(dtype)
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype)


def cases(n, dtype):
    """[8, n, n]: dense, permutation cycle (eigenvalues on the unit circle, conjugate pairs),
    diagonal with repeats, upper and lower triangular, Hermitian, a diagonalizable matrix with
    repeated eigenvalues, a block of 2x2 rotations (complex pairs in a real matrix)."""
    wide = torch.complex128 if dtype.is_complex else torch.float64
    dense = randn(n, n, dtype=wide, seed=1)
    cycle = torch.roll(torch.eye(n, dtype=wide), 1, 0)
    diag = torch.diag(torch.tensor([float(i // 2) for i in range(n)], dtype=wide))
    h = randn(n, n, dtype=wide, seed=2)
    s = torch.linalg.qr(randn(n, n, dtype=wide, seed=3)).Q + 0.3 * randn(n, n, dtype=wide, seed=4)
    vals = torch.tensor([(-1.0) ** (i // 2) * (1 + i // 2) for i in range(n)], dtype=wide)
    repeated = s @ torch.diag(vals) @ torch.linalg.inv(s)
    rot = torch.zeros(n, n, dtype=wide)
    for k in range(0, n - 1, 2):
        c, sn = 0.5 * (k + 1), 1.5
        rot[k : k + 2, k : k + 2] = torch.tensor([[c, -sn], [sn, c]], dtype=wide)
    mats = [dense, cycle, diag, h.triu(), h.tril(), h + h.mH, repeated, rot]
    return torch.stack(mats).to(dtype)


def match(actual, expected):
    """perm with expected[perm[i]] the eigenvalue paired with actual[i]: each actual one takes
    the nearest expected one still free (eigenvalues within a cluster are interchangeable)."""
    cost = (actual[:, None] - expected[None, :]).abs()
    perm = torch.empty(len(actual), dtype=torch.long)
    for i in cost.min(dim=1).values.argsort():
        j = int(cost[i].argmin())
        perm[i] = j
        cost[:, j] = float("inf")
    return perm


def check_eig(a, L, V, check_vectors=True):
    """L, V (tpu) against the CPU's eig of a (cpu)."""
    Lc, Vc = torch.linalg.eig(a)
    assert L.device.type == "tpu" and V.device.type == "tpu"
    assert (L.dtype, L.shape, V.dtype, V.shape) == (Lc.dtype, Lc.shape, Vc.dtype, Vc.shape)
    L, V = L.cpu(), V.cpu()
    n = a.shape[-1]
    if a.numel() == 0:
        return
    tol = TOL[a.dtype]
    flat_a = a.reshape(-1, n, n).to(torch.complex128)
    flat = zip(
        flat_a, L.reshape(-1, n), V.reshape(-1, n, n), Lc.reshape(-1, n), Vc.reshape(-1, n, n)
    )
    for m, lam, vec, lam_c, vec_c in flat:
        scale = 1 + torch.linalg.matrix_norm(m, 2).item()
        perm = match(lam, lam_c)
        torch.testing.assert_close(lam, lam_c[perm], atol=tol * scale * n, rtol=0)
        vec = vec.to(torch.complex128)
        residual = (m @ vec - vec * lam.to(torch.complex128)).abs().max().item()
        assert residual <= tol * scale * n, residual
        torch.testing.assert_close(
            vec.norm(dim=0), torch.ones(n, dtype=torch.float64), atol=tol * n, rtol=0
        )
        if not check_vectors:
            continue
        # Simple, well separated eigenvalues have one eigenvector up to phase.
        gaps = (lam_c[:, None] - lam_c[None, :]).abs() + torch.eye(n) * 1e30
        simple = gaps.min(dim=1).values > 1e-3 * scale
        overlap = (vec_c[:, perm].to(torch.complex128).conj() * vec).sum(0).abs()
        torch.testing.assert_close(
            overlap[simple[perm]],
            torch.ones(int(simple.sum()), dtype=torch.float64),
            atol=1e3 * tol,
            rtol=0,
        )


# Compiling an eig program takes about a second, so the tests share programs: the same
# batched shape per dtype (non-contiguous for the single precisions, where the strides are part
# of the program) and one 2x2 float32 program for the small cases.
def batch_input(dtype):
    a = cases(6, dtype).reshape(2, 4, 6, 6)
    if dtype in (torch.float32, torch.complex64):
        a = a.mT.contiguous().mT  # column-major, as LAPACK leaves matrices
    return a


def to_tpu(x):
    """x on tpu with the same strides."""
    return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="tpu").copy_(x)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eig_matches_cpu(dtype):
    a = batch_input(dtype)
    L, V = torch.linalg.eig(to_tpu(a))
    check_eig(a, L, V)
    # The largest component of every eigenvector is real and positive, as zgeev leaves it (one
    # of the largest up to rounding: the cycle's eigenvectors have equal magnitudes).
    Vh = V.cpu()
    near_max = Vh.abs() >= Vh.abs().amax(dim=-2, keepdim=True) * (1 - 1e-3)
    assert (near_max & (Vh.imag == 0) & (Vh.real > 0)).any(dim=-2).all()
    # eigvals finds the same eigenvalues (the QR iteration does not depend on the vectors).
    torch.testing.assert_close(torch.linalg.eigvals(to_tpu(a)).cpu(), L.cpu(), atol=0, rtol=0)


def test_noncontiguous_slice():
    x = noncontiguous(cases(6, torch.float64).reshape(2, 4, 6, 6))
    xt = to_tpu(x)
    assert not xt.is_contiguous()
    L, V = torch.linalg.eig(xt)
    check_eig(x, L, V)


def test_large():
    a = randn(2, 64, 64, dtype=torch.complex64, seed=5)
    L, V = torch.linalg.eig(a.to("tpu"))
    check_eig(a, L, V)


def test_small_and_empty():
    for shape in ((3, 1, 1), (0, 0), (2, 0, 0), (0, 3, 3), (2, 2)):
        a = randn(*shape, dtype=torch.float32, seed=6)
        L, V = torch.linalg.eig(a.to("tpu"))
        check_eig(a, L, V)
        Lc = torch.linalg.eigvals(a)
        L = torch.linalg.eigvals(a.to("tpu"))
        assert (L.dtype, L.shape, L.device.type) == (Lc.dtype, Lc.shape, "tpu")
    # A 2x2 rotation: the exact pair +-i.
    L = torch.linalg.eigvals(torch.tensor([[0.0, -1.0], [1.0, 0.0]], device="tpu")).cpu()
    torch.testing.assert_close(L[L.imag.argsort()], torch.tensor([-1j, 1j]), atol=1e-7, rtol=0)
    # The same at 1e-32, where every entry is below the QR iteration's negligible size: found
    # only because the matrix is scaled first, as geev does.
    L = torch.linalg.eigvals(torch.tensor([[0.0, -1e-32], [1e-32, 0.0]], device="tpu")).cpu()
    torch.testing.assert_close(
        L[L.imag.argsort()], torch.tensor([-1e-32j, 1e-32j]), atol=1e-39, rtol=0
    )


def test_out():
    a = batch_input(torch.float32)
    L = torch.empty(0, dtype=torch.complex64, device="tpu")
    V = torch.empty(0, dtype=torch.complex64, device="tpu")
    res = torch.linalg.eig(to_tpu(a), out=(L, V))
    assert res[0] is L and res[1] is V
    check_eig(a, L, V)
    out = torch.empty(0, dtype=torch.complex128, device="tpu")
    assert torch.linalg.eigvals(to_tpu(a), out=out) is out
    torch.testing.assert_close(out.cpu(), L.cpu().to(torch.complex128), atol=0, rtol=0)


def test_errors():
    def same_error(fn, x):
        with pytest.raises(RuntimeError) as cpu_err:
            fn(x)
        with pytest.raises(RuntimeError) as tpu_err:
            fn(x.to("tpu"))
        assert str(tpu_err.value) == str(cpu_err.value)

    for fn in (torch.linalg.eig, torch.linalg.eigvals):
        same_error(fn, torch.zeros(3, 4))
        # PyTorch's meta kernel words this one differently (and raises AssertionError).
        with pytest.raises((RuntimeError, AssertionError), match="must have at least 2 dimensions"):
            fn(torch.zeros(3, device="tpu"))
    out = torch.empty(0, device="tpu")
    with pytest.raises(RuntimeError, match="safely castable from ComplexFloat dtype"):
        torch.linalg.eigvals(torch.zeros(2, 2, device="tpu"), out=out)
    # Integer input: the CPU's kernel and PyTorch's meta kernel (which tpu runs) both refuse
    # it, the meta kernel with a KeyError.
    with pytest.raises(RuntimeError, match="Unknown Complex ScalarType for Long"):
        torch.linalg.eig(torch.zeros(2, 2, dtype=torch.long))
    with pytest.raises(KeyError):
        torch.linalg.eig(torch.zeros(2, 2, dtype=torch.long, device="tpu"))
    # Half input: the CPU has no kernel; tpu cannot compute in complex32 at all.
    with pytest.raises(NotImplementedError):
        torch.linalg.eig(torch.zeros(2, 2, dtype=torch.half, device="tpu"))


def test_non_finite():
    a = torch.tensor([[1.0, float("nan")], [2.0, 1.0]])
    with pytest.raises(RuntimeError, match="should not contain infs or NaNs"):
        torch.linalg.eig(a)
    # On tpu the check runs on the device: it is raised at the op in debug mode and at the next
    # synchronization otherwise.
    with pytest.raises(RuntimeError, match="should not contain infs or NaNs"):
        torch.linalg.eig(a.to("tpu"))
        torch.tpu.synchronize()
    # eigvals does not check (LAPACK may crash on such input); tpu answers NaN.
    assert torch.linalg.eigvals(a.to("tpu")).cpu().isnan().all()


@pytest.mark.parametrize("dtype", (torch.float64, torch.complex128))
def test_backward(dtype):
    a = randn(2, 4, 6, 6, dtype=dtype, seed=7)  # the forward program of test_eig_matches_cpu
    weights = torch.arange(6.0, dtype=torch.float64)[:, None]
    grads = []
    for device in ("cpu", "tpu"):
        x = a.detach().to(device).requires_grad_()
        L, V = torch.linalg.eig(x)
        # Phase-invariant losses: eigenvalues, and |V|^2 weighted by row.
        loss = L.real.sum() + (V.abs() ** 2 * weights.to(device)).sum()
        loss.backward()
        y = a.detach().to(device).requires_grad_()
        torch.linalg.eigvals(y).real.sum().backward()
        grads += [x.grad.cpu(), y.grad.cpu()]
    torch.testing.assert_close(grads[2], grads[0], atol=1e-8, rtol=1e-8)
    torch.testing.assert_close(grads[3], grads[1], atol=1e-8, rtol=1e-8)
