"""Matrix products (mm, bmm, mv, dot, vdot, addmm, baddbmm, addbmm, addmv, addr) and the
composites built on them (linear, matmul), compared with CPU, gradients included."""

import pytest
import torch
import torch.nn.functional as F
from op_check import check_op, noncontiguous

# Every op test runs in each eager mode (strict, debug, fused).
pytestmark = pytest.mark.usefixtures("each_mode")

# Half types: CPU and tpu both accumulate in float32, but round the float32 result once, so
# values agree to within the result type's rounding; sums of 8-16 products give at most one
# ulp of difference from reordering (bf16 ulp at 4.0 is 0.03).
LOW = {torch.bfloat16: {"atol": 3e-2, "rtol": 2e-2}, torch.float16: {"atol": 4e-3, "rtol": 2e-3}}


def randn(*shape, dtype=torch.float32, requires_grad=False):
    g = torch.Generator().manual_seed(hash(shape) % 1000)
    t = torch.randn(*shape, generator=g, dtype=torch.float64)
    if dtype.is_floating_point:
        return t.to(dtype).requires_grad_(requires_grad)
    return (t * 4).to(dtype)


FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


@pytest.mark.parametrize("dtype", FLOATS)
def test_mm(dtype):
    check_op(
        torch.mm,
        randn(5, 8, dtype=dtype, requires_grad=True),
        randn(8, 3, dtype=dtype, requires_grad=True),
        grad=True,
        **LOW.get(dtype, {}),
    )


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_mm_int(dtype):
    check_op(torch.mm, randn(4, 6, dtype=dtype), randn(6, 3, dtype=dtype))


def test_mm_noncontiguous_and_transposed():
    a = randn(8, 5, requires_grad=True)
    b = noncontiguous(randn(8, 3))
    check_op(lambda x, y: x.t() @ y, a, b.requires_grad_(), grad=True)


def test_mm_empty_inner():
    check_op(torch.mm, torch.zeros(3, 0), torch.zeros(0, 4))


def test_bf16_accumulates_in_float32():
    # 256 products of 1.0 + 1/256: a bf16 accumulator would stall; f32 gets it right.
    a = torch.full((1, 256), 1.0, dtype=torch.bfloat16)
    b = torch.full((256, 1), 1.0 + 2**-7, dtype=torch.bfloat16)
    check_op(torch.mm, a, b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_bmm(dtype):
    check_op(
        torch.bmm,
        randn(3, 4, 6, dtype=dtype, requires_grad=True),
        randn(3, 6, 2, dtype=dtype, requires_grad=True),
        grad=True,
        **LOW.get(dtype, {}),
    )


def test_mv_dot_vdot():
    check_op(torch.mv, randn(4, 6, requires_grad=True), randn(6, requires_grad=True), grad=True)
    check_op(torch.dot, randn(7, requires_grad=True), randn(7, requires_grad=True), grad=True)
    check_op(torch.vdot, randn(7, dtype=torch.float64), randn(7, dtype=torch.float64))
    c = torch.randn(5, dtype=torch.complex64)
    d = torch.randn(5, dtype=torch.complex64)
    check_op(torch.vdot, c, d)
    check_op(torch.dot, c, d)


def test_conjugate_and_negative_views_as_inputs():
    # ATen passes conjugate views to mm/bmm/addmm/dot with the bit set (CPU's BLAS reads it).
    a, b = torch.randn(3, 4, dtype=torch.complex64), torch.randn(4, 5, dtype=torch.complex64)
    s = torch.randn(3, 5, dtype=torch.complex64)
    check_op(lambda x, y: x.conj() @ y, a, b)
    check_op(lambda x, y: torch.mm(x, y.conj()), a, b)
    check_op(lambda z, x, y: torch.addmm(z.conj(), x.conj(), y), s, a, b)
    check_op(lambda x, y: torch.bmm(x.conj(), y), a[None], b[None])
    check_op(lambda x, y: torch.dot(x.conj(), y), a[0], b[:, 0])
    check_op(lambda x, y: x._neg_view() @ y.conj(), a, b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0), (0, 1)])
def test_addmm(dtype, beta, alpha):
    check_op(
        lambda s, a, b: torch.addmm(s, a, b, beta=beta, alpha=alpha),
        randn(4, 3, dtype=dtype, requires_grad=True),
        randn(4, 5, dtype=dtype, requires_grad=True),
        randn(5, 3, dtype=dtype, requires_grad=True),
        grad=True,
        **LOW.get(dtype, {}),
    )


def test_addmm_broadcast_bias_and_beta_zero_ignores_nan():
    check_op(
        torch.addmm,
        randn(3, requires_grad=True),
        randn(4, 5, requires_grad=True),
        randn(5, 3, requires_grad=True),
        grad=True,
    )
    nan_self = torch.full((4, 3), float("nan"))
    check_op(lambda s, a, b: torch.addmm(s, a, b, beta=0), nan_self, randn(4, 5), randn(5, 3))


def test_addmm_int():
    check_op(
        lambda s, a, b: torch.addmm(s, a, b, beta=2, alpha=3),
        randn(4, 3, dtype=torch.int64),
        randn(4, 5, dtype=torch.int64),
        randn(5, 3, dtype=torch.int64),
    )


def test_baddbmm_addbmm_addmv_addr():
    check_op(
        lambda s, a, b: torch.baddbmm(s, a, b, beta=0.5, alpha=2),
        randn(2, 4, 3, requires_grad=True),
        randn(2, 4, 5, requires_grad=True),
        randn(2, 5, 3, requires_grad=True),
        grad=True,
    )
    check_op(
        lambda s, a, b: torch.addbmm(s, a, b, beta=0.5, alpha=2),
        randn(4, 3, requires_grad=True),
        randn(2, 4, 5, requires_grad=True),
        randn(2, 5, 3, requires_grad=True),
        grad=True,
    )
    check_op(
        lambda s, a, b: torch.addmv(s, a, b, alpha=3),
        randn(4, requires_grad=True),
        randn(4, 5, requires_grad=True),
        randn(5, requires_grad=True),
        grad=True,
    )
    check_op(lambda s, a, b: torch.addr(s, a, b, beta=2), randn(4, 5), randn(4), randn(5))


def test_linear():
    w = randn(6, 8, requires_grad=True)
    b = randn(6, requires_grad=True)
    check_op(F.linear, randn(3, 8, requires_grad=True), w, b, grad=True)
    check_op(F.linear, randn(2, 3, 8, requires_grad=True), w, None, grad=True)
    check_op(F.linear, randn(8, requires_grad=True), w, b, grad=True)


@pytest.mark.parametrize(
    "sa,sb",
    [
        ((5,), (5,)),
        ((3, 5), (5,)),
        ((5,), (5, 4)),
        ((3, 5), (5, 4)),
        ((2, 3, 5), (5, 4)),
        ((5,), (2, 5, 4)),
        ((2, 1, 3, 5), (4, 5, 2)),
        ((2, 3, 5), (2, 5, 4)),
    ],
)
def test_matmul_shapes(sa, sb):
    check_op(
        torch.matmul, randn(*sa, requires_grad=True), randn(*sb, requires_grad=True), grad=True
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_addbmm_rounds_per_batch_as_cpu(dtype):
    g = torch.Generator().manual_seed(2)
    b1, b2 = (
        torch.randn(6, 5, 4, generator=g).to(dtype),
        torch.randn(6, 4, 3, generator=g).to(dtype),
    )
    self = torch.randn(5, 3, generator=g).to(dtype)
    check_op(lambda s, x, y: torch.addbmm(s, x, y, beta=0.5, alpha=1.5), self, b1, b2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
def test_cross_and_trace(dtype):
    g = torch.Generator().manual_seed(4)
    grad = dtype == torch.float32
    a = (torch.randn(4, 3, generator=g) * 3).to(dtype).requires_grad_(grad)
    b = (torch.randn(1, 3, generator=g) * 3).to(dtype).requires_grad_(grad)
    check_op(torch.linalg.cross, a, b, grad=grad)
    check_op(
        lambda x, y: torch.cross(x, y, dim=0),
        a.detach().t().contiguous(),
        noncontiguous(a.detach().t()),
    )
    check_op(
        torch.trace, (torch.randn(4, 6, generator=g) * 3).to(dtype).requires_grad_(grad), grad=grad
    )
    check_op(torch.trace, noncontiguous((torch.randn(5, 5, generator=g) * 3).to(dtype)))
