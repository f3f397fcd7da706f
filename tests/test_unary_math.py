"""Unary math (exp, sin, erf, floor, isnan, ...) on tpu against PyTorch's CPU kernels."""

import pytest
import torch
from ew_inputs import INF, NAN, SPECIAL, sample
from op_check import check_op, noncontiguous

# Every test here runs in strict, debug and fused mode (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_mode")

F32, BF16, F64 = torch.float32, torch.bfloat16, torch.float64


UNARY = {
    # name: (domain, accepts integer inputs, differentiable)
    "neg": ("real", True, True),
    "abs": ("real", True, True),
    "sign": ("real", True, True),
    "sgn": ("real", True, False),  # its real backward needs _efficientzerotensor (not lowered)
    "floor": ("real", True, True),
    "ceil": ("real", True, True),
    "round": ("real", True, True),
    "trunc": ("real", True, True),
    "frac": ("real", False, True),
    "exp": ("real", True, True),
    "exp2": ("real", True, True),
    "expm1": ("real", True, True),
    "log": ("pos", True, True),
    "log2": ("pos", True, True),
    "log10": ("pos", True, True),
    "log1p": ("gtm1", True, True),
    "sqrt": ("pos", True, True),
    "rsqrt": ("pos", True, True),
    "reciprocal": ("pos", True, True),
    "sigmoid": ("real", True, True),
    "sin": ("real", True, True),
    "cos": ("real", True, True),
    "tan": ("real", True, True),
    "asin": ("unit", True, True),
    "acos": ("unit", True, True),
    "atan": ("real", True, True),
    "sinh": ("real", True, True),
    "cosh": ("real", True, True),
    "tanh": ("real", True, True),
    "asinh": ("real", True, True),
    "acosh": ("ge1", True, True),
    "atanh": ("unit", True, True),
    "erf": ("real", True, True),
    "erfc": ("real", True, True),
    "erfinv": ("unit", True, True),
    "deg2rad": ("real", False, True),
    "rad2deg": ("real", False, True),
    "angle": ("real", True, False),
    "square": ("real", True, True),
    "positive": ("real", True, True),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_float32_with_grad(name):
    domain, _, diff = UNARY[name]
    x = sample((4, 6), F32, domain).requires_grad_(diff)
    check_op(getattr(torch, name), x, grad=diff)


@pytest.mark.parametrize("dtype", [BF16, F64, torch.int64, torch.bool], ids=str)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_dtypes(name, dtype):
    domain, ints, _ = UNARY[name]
    if not dtype.is_floating_point and not ints:
        pytest.skip("CPU has no integer kernel")
    if dtype == torch.bool and name in (
        "neg",
        "abs",
        "floor",
        "ceil",
        "round",
        "trunc",
        "square",
        "positive",
    ):
        pytest.skip("CPU rejects bool")
    check_op(getattr(torch, name), sample((2, 7), dtype, domain))


@pytest.mark.parametrize("name", ["exp", "sqrt", "floor", "erfinv", "sigmoid", "abs", "neg"])
def test_unary_layouts_and_small_types(name):
    domain = UNARY[name][0]
    fn = getattr(torch, name)
    check_op(fn, noncontiguous(sample((3, 5), F32, domain, seed=1)))
    check_op(fn, sample((3, 5), F32, domain, seed=2).t())
    check_op(fn, sample((), F32, domain, seed=3))
    check_op(fn, sample((2, 0, 3), F32, domain))
    check_op(fn, sample((4,), torch.float16, domain))
    check_op(fn, sample((4,), torch.uint8, domain))


SPECIAL_UNARY = sorted(set(UNARY) - {"angle"}) + [
    "isnan",
    "isinf",
    "isposinf",
    "isneginf",
    "isfinite",
    "signbit",
    "nan_to_num",
]
# Where CPU's float32 results are wrong, tpu gives the right value, so these stay out of the
# special-value comparison: gelu(inf) is NaN on CPU (see test_activations), and CPU's f32
# sinh/cosh overflow already at 88.7 < |x| < 89.4.
F64_SPECIAL = [
    "erf",
    "erfc",
    "erfinv",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "log1p",
    "expm1",
    "exp2",
    "round",
    "frac",
    "sign",
]


@pytest.mark.parametrize("name", SPECIAL_UNARY)
def test_unary_special_values(name):
    x = torch.tensor(SPECIAL + [-3.0, 20.0, -20.0, 80.0, -80.0])
    check_op(getattr(torch, name), x)
    if name in F64_SPECIAL:
        check_op(getattr(torch, name), x.double())


def test_predicates_on_integers_and_bool():
    for dtype in (torch.int32, torch.uint8, torch.bool):
        x = sample((5,), dtype)
        for name in (
            "isnan",
            "isinf",
            "isposinf",
            "isneginf",
            "isfinite",
            "signbit",
            "logical_not",
        ):
            check_op(getattr(torch, name), x)
    check_op(torch.bitwise_not, sample((5,), torch.int16))
    check_op(torch.bitwise_not, sample((5,), torch.bool))
    check_op(torch.logical_not, torch.tensor([0.0, -0.0, NAN, 2.0]))


def test_round_decimals_and_nan_to_num():
    x = sample((40,), F32) * 100
    for d in (0, 2, -1):
        check_op(lambda t, d=d: torch.round(t, decimals=d), x)
    check_op(lambda t: torch.round(t, decimals=1), x.to(F64))
    y = torch.tensor([NAN, INF, -INF, 1.5])
    check_op(torch.nan_to_num, y)
    check_op(lambda t: torch.nan_to_num(t, nan=2.0, posinf=3.0, neginf=-4.0), y)
    check_op(lambda t: torch.nan_to_num(t, posinf=1e5), y.to(torch.float16))
    check_op(torch.nan_to_num, y.to(BF16))
    check_op(torch.nan_to_num, sample((4,), torch.int32))


# erf/erfc/erfinv are approximated with StableHLO arithmetic (special_math.cpp); check a
# dense grid, including erfc's deep tail and erfinv next to +-1, at default tolerances.
@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_erf_family_accuracy(dtype):
    x = torch.linspace(-6, 6, 4001, dtype=dtype)
    check_op(torch.erf, x)
    check_op(torch.erfc, torch.linspace(-3, 26 if dtype == F64 else 9.5, 4001, dtype=dtype))
    tail = 1 - torch.logspace(-15 if dtype == F64 else -7, -0.3, 300, dtype=dtype)
    y = torch.cat([torch.linspace(-1, 1, 2001, dtype=dtype), tail, -tail])
    check_op(torch.erfinv, y)


def test_chain_in_each_mode(each_mode):
    def chain(x):
        return (
            torch.erfinv(torch.tanh(x) * 0.9).exp2()
            + torch.log1p(x.abs()).rsqrt()
            - x.sinh().asinh()
        )

    check_op(chain, sample((6, 5), F32).requires_grad_(), grad=True)
