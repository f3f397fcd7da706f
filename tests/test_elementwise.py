"""Elementwise binary arithmetic, comparisons, logical/bitwise ops, where, masked_fill, clamp,
lerp and addcmul/addcdiv on tpu against PyTorch's CPU kernels (unary math: test_unary_math.py)."""

import pytest
import torch
from ew_inputs import INF, NAN, SPECIAL, gen, sample
from op_check import check_op, noncontiguous

# Every test here runs in strict, debug and fused mode (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_mode")

F32, BF16, F64 = torch.float32, torch.bfloat16, torch.float64


# --- binary arithmetic -------------------------------------------------------------------------

BINARY = {
    # name: (fn, domain of the second operand, integer inputs, differentiable)
    "add": (torch.add, "real", True, True),
    "add_alpha": (lambda a, b: torch.add(a, b, alpha=2), "real", True, True),
    "sub": (torch.sub, "real", True, True),
    "sub_alpha": (lambda a, b: torch.sub(a, b, alpha=2), "real", True, True),
    "rsub": (lambda a, b: torch.rsub(a, b, alpha=2), "real", True, True),
    "mul": (torch.mul, "real", True, True),
    "div": (torch.div, "pos", True, True),
    "div_trunc": (lambda a, b: torch.div(a, b, rounding_mode="trunc"), "real", True, False),
    "div_floor": (lambda a, b: torch.div(a, b, rounding_mode="floor"), "real", True, False),
    "floor_divide": (torch.floor_divide, "real", True, False),
    "remainder": (torch.remainder, "real", True, True),
    "fmod": (torch.fmod, "real", True, True),
    "pow": (torch.pow, "real", False, True),
    "maximum": (torch.maximum, "real", True, True),
    "minimum": (torch.minimum, "real", True, True),
    "fmax": (torch.fmax, "real", True, True),
    "fmin": (torch.fmin, "real", True, True),
    "atan2": (torch.atan2, "real", True, True),
    "hypot": (torch.hypot, "real", False, True),
    "copysign": (torch.copysign, "real", True, True),
    "xlogy": (torch.xlogy, "pos", True, True),
    "logaddexp": (torch.logaddexp, "real", False, True),
    "logaddexp2": (torch.logaddexp2, "real", False, True),
}


def _nonzero(b):
    return torch.where(b == 0, torch.ones_like(b), b)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_float32_with_grad(name):
    fn, domain, _, diff = BINARY[name]
    a = sample((3, 5), F32, "real").requires_grad_(diff)
    b = sample((3, 5), F32, domain, seed=1).requires_grad_(diff)
    check_op(fn, a, b, grad=diff)
    # broadcasting, a 0-d and a non-contiguous operand
    check_op(
        fn, noncontiguous(sample((2, 3, 5), F32, "real", seed=2)), sample((5,), F32, domain, seed=3)
    )
    check_op(fn, sample((), F32, "real", seed=4), b.detach())


@pytest.mark.parametrize("dtype", [BF16, F64, torch.int64, torch.uint8], ids=str)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_dtypes(name, dtype):
    fn, domain, ints, _ = BINARY[name]
    if not dtype.is_floating_point and not ints:
        pytest.skip("CPU has no integer kernel")
    a = sample((4, 6), dtype, "real")
    b = sample((4, 6), dtype, domain, seed=1)
    if not dtype.is_floating_point and name in (
        "div_trunc",
        "div_floor",
        "floor_divide",
        "remainder",
        "fmod",
    ):
        b = _nonzero(b)  # integer division by zero raises on CPU
    check_op(fn, a, b)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_special_values(name):
    fn = BINARY[name][0]
    vals = SPECIAL[:11] + [7.0, -7.0]
    a = torch.tensor([x for x in vals for _ in vals])
    b = torch.tensor([y for _ in vals for y in vals])
    check_op(fn, a, b)


def test_integer_division_semantics():
    a = torch.tensor([-7, 7, -7, 7, -6, 6, 0, -1, 5, -128])
    b = torch.tensor([2, -2, -2, 2, 3, -3, 5, 4, 7, 3])
    for dtype in (torch.int64, torch.int32, torch.int8):
        x, y = a.to(dtype), b.to(dtype)
        check_op(lambda p, q: torch.div(p, q, rounding_mode="floor"), x, y)
        check_op(lambda p, q: torch.div(p, q, rounding_mode="trunc"), x, y)
        check_op(torch.remainder, x, y)
        check_op(torch.fmod, x, y)
        check_op(torch.div, x, y)  # true division: float result
    check_op(lambda p: p // 3, a)
    check_op(lambda p: p % -3, a)
    check_op(lambda p: 5 % _nonzero(p), a)
    # remainder takes the divisor's sign, fmod the dividend's; ties of floor division of floats
    x = torch.tensor([-7.5, 7.5, -0.0, 1e-30, 5.0, -5.0])
    y = torch.tensor([2.0, -2.0, 3.0, -1.0, 0.0, 0.0])
    for fn in (torch.remainder, torch.fmod, torch.floor_divide):
        check_op(fn, x, y)


def test_pow_variants():
    x = sample((3, 4), F32, "pos").requires_grad_()
    check_op(lambda t: t**2, x, grad=True)
    check_op(lambda t: t**0.5, x, grad=True)
    check_op(lambda t: t**-1.5, x, grad=True)
    check_op(lambda t: 2.0**t, x, grad=True)
    check_op(lambda t: torch.pow(t, 3), sample((3, 4), torch.int64))
    check_op(lambda t: torch.pow(t, 0.5), sample((3, 4), torch.int32, "pos"))
    check_op(lambda t: torch.pow(2, t), sample((3, 4), torch.int64, "pos"))
    base = torch.tensor([2, -1, 1, 3, 0, -2, 5])
    check_op(torch.pow, base, torch.tensor([3, -3, -2, 2, 0, 4, 1]))
    # CPU computes x ** 0.5 as sqrt (NaN at -inf) but f16 through pow (inf).
    s = torch.tensor([-INF, INF, -0.0, 4.0, NAN])
    for dtype in (F32, BF16, torch.float16):
        check_op(lambda t: t**0.5, s.to(dtype))
        check_op(lambda t: t**-0.5, s.to(dtype))


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x + 2,
        lambda x: x + 2.5,
        lambda x: 2.5 - x,
        lambda x: x * 0.1,
        lambda x: x / 3,
        lambda x: 3 / x,
        lambda x: x // 2,
        lambda x: x % 3,
        lambda x: x**2,
        lambda x: torch.add(x, 1.5, alpha=2),
        lambda x: torch.sub(x, 1, alpha=3),
        lambda x: torch.copysign(x, -1.0),
        lambda x: torch.xlogy(2.0, x.abs() + 1),
        lambda x: torch.xlogy(x, 3.0),
        lambda x: x + torch.tensor(2.5, dtype=torch.float64),  # 0-d tensor does not promote
    ],
)
@pytest.mark.parametrize("dtype", [F32, BF16, torch.int64], ids=str)
def test_python_scalars(fn, dtype):
    check_op(fn, sample((3, 4), dtype, "pos"))


def test_promotion_and_bool_arithmetic():
    check_op(torch.add, sample((3,), torch.float16), sample((3,), BF16))
    check_op(torch.mul, sample((3,), torch.int32), sample((3,), F64))
    check_op(torch.add, sample((3,), torch.uint8), sample((3,), torch.int8))
    check_op(torch.add, sample((2, 3), F32), sample((), F64))
    check_op(lambda a, b: a + b, sample((4,), torch.bool), sample((4,), torch.bool, seed=1))
    check_op(lambda a, b: a * b, sample((4,), torch.bool), sample((4,), torch.bool, seed=1))
    check_op(torch.maximum, sample((4,), torch.bool), sample((4,), torch.bool, seed=1))
    check_op(lambda a: a + True, sample((4,), torch.bool))
    check_op(lambda a: a * 2.5, sample((4,), torch.bool))


def test_inplace_and_out_variants():
    a, b = sample((3, 4), F32), sample((3, 4), F32, "pos", seed=1)
    check_op(lambda x, y: x.clone().add_(y, alpha=0.5), a, b)
    check_op(lambda x, y: x.clone().div_(y, rounding_mode="floor"), a, b)
    check_op(lambda x, y: x.clone().mul_(2).sub_(y).pow_(2), a, b)
    check_op(lambda x: x.clone().clamp_(min=-0.5, max=0.5), a)
    check_op(lambda x: x.clone().exp_().sqrt_(), a)
    check_op(lambda x, y: torch.atan2(x, y, out=torch.empty_like(x)), a, b)
    check_op(lambda x: torch.sin(x, out=torch.empty(3, 4, dtype=F64, device=x.device)), a)
    # in-place through a non-contiguous view writes the base
    check_op(lambda x: (x, x[:, ::2].mul_(10))[0], sample((3, 6), F32))
    check_op(lambda x: x.clone().add_(2.5), sample((3,), torch.int64).float())


# --- comparisons, logical, bitwise -------------------------------------------------------------


@pytest.mark.parametrize("name", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_comparisons(name):
    fn = getattr(torch, name)
    vals = torch.tensor(SPECIAL[:8] + [3.0, -7.0])
    a = vals.repeat_interleave(10)
    b = vals.repeat(10)
    for dtype in (F32, BF16, F64):
        check_op(fn, a.to(dtype), b.to(dtype))
    for dtype in (torch.int64, torch.uint8, torch.bool):
        check_op(fn, sample((3, 4), dtype), sample((3, 4), dtype, seed=1))
    check_op(fn, sample((3, 4), torch.int64), sample((4,), F32))  # promote, broadcast
    check_op(lambda x: fn(x, 2.5), sample((3, 4), torch.int64))
    check_op(lambda x: fn(x, 1), sample((3, 4), BF16))
    check_op(lambda x: fn(x, -1), sample((3, 4), torch.uint8))
    check_op(lambda x: fn(x, torch.tensor(0.5)), noncontiguous(sample((3, 4), F32)))


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
def test_logical(name):
    fn = getattr(torch, name)
    check_op(fn, torch.tensor([0.0, -0.0, NAN, 2.0]), torch.tensor([1.0, 0.0, 0.0, NAN]))
    check_op(fn, sample((3, 4), torch.int32), sample((4,), torch.bool))
    check_op(fn, sample((3, 4), torch.bool), sample((3, 4), torch.bool, seed=1))


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor"])
def test_bitwise(name):
    fn = getattr(torch, name)
    for dtype in (torch.int64, torch.int8, torch.uint8, torch.bool):
        check_op(fn, sample((3, 4), dtype), sample((3, 4), dtype, seed=1))
    check_op(lambda x: fn(x, 6), sample((3, 4), torch.int32))
    check_op(lambda x: fn(x, True), sample((3, 4), torch.bool))
    check_op(fn, sample((3, 4), torch.int16), sample((4,), torch.uint8))


@pytest.mark.parametrize(
    "dtype", [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8], ids=str
)
def test_shifts(dtype):
    info = torch.iinfo(dtype)
    g = gen(5)
    a = torch.randint(
        max(info.min, -(2**40)), min(info.max, 2**40), (60,), generator=g, dtype=dtype
    )
    # counts past the width and negative counts follow CPU (0, or sign fill for >>)
    n = torch.randint(
        0 if dtype == torch.uint8 else -3, info.bits + 4, (60,), generator=g, dtype=dtype
    )
    check_op(torch.bitwise_left_shift, a, n)
    check_op(torch.bitwise_right_shift, a, n)
    check_op(lambda x: x << 3, a)
    check_op(lambda x: x >> 2, a)
    check_op(lambda y: torch.bitwise_left_shift(5, y), n.clamp(0, 6))


@pytest.mark.parametrize(
    "dtype", [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8], ids=str
)
@pytest.mark.parametrize("name", ["gcd", "lcm"])
def test_gcd_lcm(name, dtype):
    fn = getattr(torch, name)
    info = torch.iinfo(dtype)
    g = gen(7)
    # lcm's inputs stay below sqrt(max), so that no product overflows.
    top = info.max if name == "gcd" else int(info.max**0.5)
    # Fibonacci neighbours are Euclid's worst case (the most steps for their size).
    fib = [0, 1]
    while fib[-1] + fib[-2] <= top:
        fib.append(fib[-1] + fib[-2])
    hi = min(top, 1000)
    lo = -hi if dtype.is_signed else 0
    a = torch.cat(
        [
            torch.randint(lo, hi, (40,), generator=g, dtype=dtype),
            torch.tensor(fib[1:], dtype=dtype),
            torch.tensor([0, 0, 12], dtype=dtype),
        ]
    )
    b = torch.cat(
        [
            torch.randint(lo, hi, (40,), generator=g, dtype=dtype),
            torch.tensor(fib[2:] + [0], dtype=dtype),
            torch.tensor([0, 5, 0], dtype=dtype),
        ]
    )
    check_op(fn, a, b)
    check_op(fn, noncontiguous(a), noncontiguous(b))
    check_op(fn, a[:40].view(8, 5), b[:5])  # broadcasting


def test_gcd_rejects_floats():
    x = torch.tensor([4.0])
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        torch.gcd(x, x)
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        torch.gcd(x.to("tpu"), x.to("tpu"))


# --- where, masked_fill, clamp, lerp, addcmul, addcdiv -------------------------------------------


def test_where_and_masked_fill():
    a = sample((3, 4), F32).requires_grad_()
    b = sample((3, 4), F32, seed=1).requires_grad_()
    cond = sample((3, 4), torch.bool, seed=2)
    check_op(torch.where, cond, a, b, grad=True)
    check_op(torch.where, cond[:1], sample((3, 4), torch.int64), sample((4,), F64))
    check_op(lambda c, x: torch.where(c, x, 0.0), cond, sample((3, 4), BF16))
    check_op(lambda c, x: torch.where(c, 2, x), cond, sample((3, 4), torch.int32))
    check_op(lambda x: x.masked_fill(x > 0, -1.5), sample((3, 4), F32))
    check_op(lambda x, m: x.masked_fill(m, 7), sample((3, 4), torch.int64), cond[0])
    check_op(lambda x, m: x.masked_fill(m, torch.tensor(2.5)), sample((3, 4), BF16), cond)
    check_op(lambda x, m: x.masked_fill(m, True), sample((3, 4), torch.bool), cond)
    check_op(lambda x, m: x.masked_fill(m, 0.25), a, cond, grad=True)
    check_op(lambda x: x.clone().masked_fill_(x < 0, 0.0), noncontiguous(sample((3, 4), F32)))


def test_clamp():
    x = torch.cat([sample((20,), F32), torch.tensor([NAN, INF, -INF])]).requires_grad_()
    check_op(lambda t: torch.clamp(t, -0.5, 1.0), x, grad=True)
    check_op(lambda t: torch.clamp(t, min=0.2), x, grad=True)
    check_op(lambda t: torch.clamp(t, max=-0.2), x, grad=True)
    check_op(lambda t: torch.clamp(t, 1.0, -1.0), x)  # min > max gives max
    lo, hi = sample((23,), F32, seed=1) - 1, sample((23,), F32, seed=2) + 1
    check_op(torch.clamp, x, lo, hi, grad=True)
    check_op(lambda t, m: torch.clamp(t, min=m), x, lo)
    check_op(lambda t, m: torch.clamp_max(t, m), x, hi)
    check_op(lambda t: torch.clamp_min(t, 0.0), x)
    check_op(lambda t: torch.clamp(t, 2, 5), sample((3, 4), torch.int64))
    check_op(lambda t: torch.clamp(t, 0.5), sample((3, 4), torch.int64))  # promotes to float
    check_op(lambda t: torch.clamp(t, -1, 1), sample((3, 4), BF16))


def test_lerp_addcmul_addcdiv():
    a, b = sample((3, 4), F32).requires_grad_(), sample((3, 4), F32, seed=1).requires_grad_()
    w = (torch.rand(3, 4, generator=gen(2)) * 1.4 - 0.2).requires_grad_()
    check_op(lambda x, y: torch.lerp(x, y, 0.3), a, b, grad=True)
    check_op(lambda x, y: torch.lerp(x, y, 0.8), a, b, grad=True)
    check_op(torch.lerp, a, b, w, grad=True)
    check_op(lambda x, y: torch.lerp(x, y, 0.3), a.detach().to(BF16), b.detach().to(BF16))
    c = sample((3, 4), F32, "pos", seed=3).requires_grad_()
    check_op(lambda x, y, z: torch.addcmul(x, y, z, value=0.5), a, b, c, grad=True)
    check_op(lambda x, y, z: torch.addcdiv(x, y, z, value=-2), a, b, c, grad=True)
    check_op(
        lambda x, y, z: torch.addcmul(x, y, z, value=3),
        *(sample((3, 4), torch.int64, seed=s) for s in range(3)),
    )
    check_op(
        lambda x, y, z: torch.addcdiv(x, y, z),
        *(sample((3, 4), BF16, "pos", seed=s) for s in range(3)),
    )
    check_op(
        lambda x, y: x.clone().addcmul_(y, y, value=0.1), sample((4,), F32), sample((2, 4), F32)[0]
    )


def test_chain_in_each_mode(each_mode):
    def chain(x, y):
        z = torch.where(x > y, torch.atan2(x, y) * y + 2.5, torch.clamp(x - y, -1, 1) ** 2)
        return torch.lerp(z, x.abs().sqrt(), 0.25) / (1 + y.exp()), (x.detach() % 1.5).floor_divide(
            0.5
        )

    a, b = sample((6, 5), F32).requires_grad_(), sample((6, 5), F32, seed=1).requires_grad_()
    check_op(chain, a, b, grad=True)


def test_complex_support_is_explicit():
    a = torch.randn(3, 4, dtype=torch.complex64, generator=gen(12))
    b = torch.randn(3, 4, dtype=torch.complex64, generator=gen(13))
    for fn in (torch.add, torch.sub, torch.mul, torch.div, torch.eq, torch.ne):
        check_op(fn, a, b)
    for fn in (
        torch.neg,
        torch.exp,
        torch.log,
        torch.sqrt,
        torch.sin,
        torch.tanh,
        torch.reciprocal,
    ):
        check_op(fn, a)
    check_op(lambda x: x * 2.5 + 1, a)
    check_op(torch.where, a.real > 0, a, b)
    # Real-only formulas refuse complex inputs with a clear error instead of wrong values.
    with pytest.raises(Exception, match="complex"):
        torch.sinh(a.to("tpu")).cpu()
