"""Activation functions and their backward kernels on tpu against PyTorch's CPU kernels."""

import pytest
import torch
import torch.nn.functional as F
from ew_inputs import INF, NAN, gen, sample
from op_check import check_op, noncontiguous

# Every test here runs in strict, debug and fused mode (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_mode")

F32, BF16, F64 = torch.float32, torch.bfloat16, torch.float64
A = torch.ops.aten

ACTIVATIONS = {
    "relu": F.relu,
    "relu6": F.relu6,
    "threshold": lambda x: F.threshold(x, 0.5, -2.0),
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "mish": F.mish,
    "leaky_relu": lambda x: F.leaky_relu(x, 0.2),
    "elu": lambda x: F.elu(x, alpha=1.5),
    "celu": lambda x: F.celu(x, alpha=0.7),
    "selu": F.selu,
    "softplus": F.softplus,
    "softplus_beta": lambda x: F.softplus(x, beta=2.0, threshold=3.0),
    "hardtanh": lambda x: F.hardtanh(x, -0.5, 2.0),
    "hardsigmoid": F.hardsigmoid,
    "hardswish": F.hardswish,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "logsigmoid": F.logsigmoid,
    "softshrink": lambda x: F.softshrink(x, 0.5),
    "hardshrink": lambda x: F.hardshrink(x, 0.5),
    "logit": lambda x: torch.logit(x.sigmoid()),
    "logit_eps": lambda x: torch.logit(x.sigmoid(), eps=0.05),
    "sinc": torch.sinc,
}

# Points where branches switch (relu at 0, hardswish at +-3, softplus at its threshold, ...)
KINKS = [0.0, -0.0, 0.5, -0.5, 1.5, 2.0, 3.0, -3.0, 6.0, 20.0, -20.0, 1e-4]


def inputs(dtype, n=40, seed=0):
    x = torch.cat([torch.tensor(KINKS, dtype=F64), sample((n,), F64, seed=seed) * 2])
    return x.to(dtype)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_float32_with_grad(name):
    fn = ACTIVATIONS[name]
    x = inputs(F32)
    if name == "sinc":
        # autograd's sinc' = (pi x cos(pi x) - sin(pi x)) / (pi x^2) cancels to noise near 0 in f32
        # (relative error ~ eps / x^2 on CPU too); fused programs round it differently.
        x = x[x.abs() > 1e-2]
    check_op(fn, x.requires_grad_(), grad=True)


@pytest.mark.parametrize("dtype", [BF16, F64], ids=str)
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_dtypes_with_grad(name, dtype):
    check_op(ACTIVATIONS[name], inputs(dtype, seed=1).requires_grad_(), grad=True)


@pytest.mark.parametrize("name", ["relu", "gelu", "silu", "leaky_relu", "hardswish", "softplus"])
def test_activation_layouts(name):
    fn = ACTIVATIONS[name]
    check_op(fn, noncontiguous(sample((4, 6), F32, seed=2)))
    check_op(fn, sample((), F32, seed=3))
    check_op(fn, sample((3, 4), F32, seed=4).t())
    check_op(fn, sample((5,), torch.float16, seed=5))


# 64 elements: CPU runs these fully through its vectorized loops, whose NaN conventions tpu
# follows (the scalar tail loops of a few CPU kernels treat NaN differently).
SPECIAL = torch.tensor([NAN, INF, -INF] + KINKS + [100.0, -100.0, 1e30, -1e30, 0.25])


def special(dtype=F32):
    x = torch.cat([SPECIAL, sample((64 - len(SPECIAL),), F64, seed=6) * 4]).to(dtype)
    return x


@pytest.mark.parametrize("name", sorted(set(ACTIVATIONS) - {"gelu"}))
def test_activation_special_values(name):
    check_op(ACTIVATIONS[name], special())


def test_gelu_special_values():
    x = special()
    # CPU's float32 gelu(inf) is NaN; tpu gives inf like float64 and the limit of x * Phi(x).
    check_op(F.gelu, x[3:])
    check_op(F.gelu, special(F64))
    out = F.gelu(x[:3].to("tpu")).cpu()
    torch.testing.assert_close(out, F.gelu(x[:3].double()).float(), equal_nan=True)


BACKWARDS = {
    "threshold_backward": lambda g, x: A.threshold_backward(g, x, 0.5),
    "gelu_backward": lambda g, x: A.gelu_backward(g, x),
    "gelu_backward_tanh": lambda g, x: A.gelu_backward(g, x, approximate="tanh"),
    "leaky_relu_backward": lambda g, x: A.leaky_relu_backward(g, x, 0.2, False),
    "elu_backward": lambda g, x: A.elu_backward(g, 1.5, 1.0, 1.0, False, x),
    "elu_backward_result": lambda g, x: A.elu_backward(g, 1.5, 1.0, 1.0, True, F.elu(x, 1.5)),
    "softplus_backward": lambda g, x: A.softplus_backward(g, x, 2.0, 3.0),
    "hardtanh_backward": lambda g, x: A.hardtanh_backward(g, x, -0.5, 2.0),
    "sigmoid_backward": lambda g, x: A.sigmoid_backward(g, torch.sigmoid(x)),
    "tanh_backward": lambda g, x: A.tanh_backward(g, torch.tanh(x)),
    "hardsigmoid_backward": lambda g, x: A.hardsigmoid_backward(g, x),
    "hardswish_backward": lambda g, x: A.hardswish_backward(g, x),
    "softshrink_backward": lambda g, x: A.softshrink_backward(g, x, 0.5),
    "hardshrink_backward": lambda g, x: A.hardshrink_backward(g, x, 0.5),
    "log_sigmoid_backward": lambda g, x: A.log_sigmoid_backward(g, x, A.log_sigmoid_forward(x)[1]),
    "silu_backward": lambda g, x: A.silu_backward(g, x),
    "mish_backward": lambda g, x: A.mish_backward(g, x),
}


@pytest.mark.parametrize("name", sorted(BACKWARDS))
def test_backward_kernels_special_values(name):
    x = special()
    g = torch.randn(x.shape, generator=gen(7))
    check_op(BACKWARDS[name], g, x)


def test_logit_backward():
    # CPU's scalar and vectorized loops disagree at x = 0, 1 and NaN, so those stay out.
    x = torch.cat([torch.rand(60, generator=gen(8)), torch.tensor([-0.5, 1.5, 0.01, 0.99])])
    g = torch.randn(x.shape, generator=gen(9))
    check_op(lambda a, b: A.logit_backward(a, b), g, x)
    check_op(lambda a, b: A.logit_backward(a, b, 0.05), g, x)
    check_op(lambda a, b: A.logit_backward(a, b, 0.05), g.to(BF16), x.to(BF16))


def test_inplace_activations():
    x = sample((3, 8), F32, seed=10)
    for fn in (
        lambda t: F.relu(t, inplace=True),
        lambda t: F.leaky_relu(t, 0.1, inplace=True),
        lambda t: F.elu(t, inplace=True),
        lambda t: F.hardtanh(t, -1.0, 0.5, inplace=True),
        lambda t: F.hardswish(t, inplace=True),
        lambda t: F.silu(t, inplace=True),
        lambda t: F.threshold(t, 0.1, 20.0, inplace=True),
        lambda t: t.sigmoid_(),
    ):
        check_op(lambda t, fn=fn: fn(t.clone()), x)
        check_op(lambda t, fn=fn: (t, fn(t[:, 1::2]))[0], x.clone())  # through a strided view
    # autograd through in-place activations saves the result (elu's is_result=True path)
    y = sample((3, 8), F32, seed=11).requires_grad_()
    check_op(lambda t: F.elu(t * 1, inplace=True), y, grad=True)
    check_op(lambda t: F.relu(t * 1, inplace=True), y, grad=True)


def test_integer_relu_and_heaviside():
    check_op(F.relu, sample((3, 4), torch.int64))
    check_op(F.relu, sample((3, 4), torch.uint8))
    v = torch.tensor([NAN, INF, -INF, 0.0, -0.0, 2.0, -2.0])
    check_op(torch.heaviside, v, torch.tensor(0.5))
    check_op(torch.heaviside, v, torch.full((7,), -1.0))
    check_op(torch.heaviside, sample((5,), torch.int64), torch.tensor(7))


def test_chain_in_each_mode(each_mode):
    def chain(x):
        h = F.gelu(F.hardswish(x) * 2 - 1)
        return F.softplus(F.leaky_relu(h, 0.1) + F.silu(x), beta=2.0) * F.hardtanh(x, -0.5, 0.5)

    check_op(chain, sample((6, 5), F32).requires_grad_(), grad=True)
