"""Convolutions (1-3d, transposed, grouped, strided, dilated, padded) on tpu against CPU:
values and the gradients of input, weight and bias."""

import copy

import pytest
import torch
import torch.nn.functional as F
from op_check import assert_same, check_op, noncontiguous
from opinfo_check import check_sample, samples

import torch_tpu

# Every test here runs in strict, debug and fused mode (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_mode")

FLOATS = (torch.float32, torch.bfloat16, torch.float64)


def make(shape, dtype=torch.float32, grad=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype).requires_grad_(grad)


# bf16: the tpu computes in f32 and rounds once, as CPU's oneDNN kernels do, but the two sum in
# different orders; an f32 sum that lands next to a bf16 rounding boundary rounds the other way
# (1 bf16 ulp = 2**-7 relative). Measured over these cases: at most 1 ulp of the largest output
# (|diff| <= 0.016 for outputs up to 4, 0.06 for weight gradients up to 12).
BF16_TOL = {"atol": 2e-2, "rtol": 1.6e-2, "grad_atol": 8e-2, "grad_rtol": 2e-2}


def tol(dtype):
    return BF16_TOL if dtype == torch.bfloat16 else {}


# (input shape, weight shape, kwargs): forward convolutions with the argument combinations that
# change the lowering (stride, asymmetric padding, dilation, groups, depthwise, strings).
CONV_CASES = [
    ((2, 4, 9), (6, 4, 3), {}),
    ((2, 4, 9), (6, 2, 3), {"stride": 2, "padding": 1, "groups": 2}),
    ((2, 4, 10), (4, 1, 3), {"dilation": 2, "padding": 3, "groups": 4}),
    ((2, 4, 9), (6, 4, 4), {"padding": "same", "dilation": 2}),
    ((1, 3, 7, 6), (5, 3, 3, 2), {"stride": (2, 1), "padding": (1, 0)}),
    ((2, 4, 7, 7), (6, 2, 3, 3), {"stride": 2, "dilation": (1, 2), "padding": (0, 2), "groups": 2}),
    ((2, 4, 6, 5), (8, 1, 3, 3), {"groups": 4, "padding": 1}),
    ((2, 3, 6, 6), (4, 3, 2, 4), {"padding": "same"}),
    ((2, 3, 6, 6), (4, 3, 3, 3), {"padding": "valid", "stride": 3}),
    # Negative padding inside the gradient convolutions: input rows no window reaches (weight
    # gradient), padding beyond the kernel extent (input gradient).
    ((2, 3, 7), (4, 3, 3), {"stride": 3}),
    ((2, 3, 4, 5), (4, 3, 1, 2), {"padding": (1, 2)}),
    ((1, 2, 5, 4, 4), (3, 2, 2, 3, 2), {"stride": (1, 2, 1), "padding": (1, 0, 1)}),
    ((2, 4, 4, 5, 3), (4, 2, 3, 2, 2), {"groups": 2, "dilation": (1, 2, 1), "padding": 1}),
]


@pytest.mark.parametrize("x_shape,w_shape,kw", CONV_CASES)
@pytest.mark.parametrize("bias", [True, False])
def test_conv(x_shape, w_shape, kw, bias):
    fn = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[len(x_shape)]
    x, w = make(x_shape), make(w_shape, seed=1)
    b = make((w_shape[0],), seed=2) if bias else None
    check_op(lambda a, ww, bb: fn(a, ww, bb, **kw), x, w, b, grad=True)


@pytest.mark.parametrize("dtype", FLOATS)
# Grouped 1-d, 2-d and 3-d cases.
@pytest.mark.parametrize("x_shape,w_shape,kw", [CONV_CASES[1], CONV_CASES[5], CONV_CASES[-1]])
def test_conv_dtypes(dtype, x_shape, w_shape, kw):
    fn = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[len(x_shape)]
    x, w, b = make(x_shape, dtype), make(w_shape, dtype, seed=1), make((w_shape[0],), dtype, seed=2)
    check_op(lambda a, ww, bb: fn(a, ww, bb, **kw), x, w, b, grad=True, **tol(dtype))


# (input shape, weight shape, kwargs) of transposed convolutions: weight is (C_in, C_out/g, k).
TRANSPOSED_CASES = [
    ((2, 4, 6), (4, 3, 3), {}),
    ((2, 4, 6), (4, 2, 3), {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}),
    ((2, 2, 5), (2, 3, 2), {"stride": 3, "dilation": 2, "output_padding": 1}),
    ((1, 3, 4, 5), (3, 2, 3, 2), {"stride": (2, 1), "padding": (1, 0)}),
    ((2, 3, 7), (3, 4, 1), {"padding": 2}),  # negative padding in the forward convolution
    (
        (2, 4, 4, 3),
        (4, 1, 3, 3),
        {"stride": 2, "padding": 1, "output_padding": (1, 0), "groups": 2},
    ),
    # output_padding may exceed the stride when it is below the dilation.
    (
        (1, 2, 3, 4),
        (2, 2, 2, 3),
        {"stride": (3, 2), "padding": (1, 2), "output_padding": (2, 3), "dilation": 4},
    ),
    (
        (1, 2, 3, 4, 3),
        (2, 2, 2, 2, 3),
        {"stride": 2, "padding": (0, 1, 1), "output_padding": (1, 0, 1)},
    ),
]


@pytest.mark.parametrize("x_shape,w_shape,kw", TRANSPOSED_CASES)
@pytest.mark.parametrize("bias", [True, False])
def test_conv_transpose(x_shape, w_shape, kw, bias):
    fn = {3: F.conv_transpose1d, 4: F.conv_transpose2d, 5: F.conv_transpose3d}[len(x_shape)]
    groups = kw.get("groups", 1)
    x, w = make(x_shape), make(w_shape, seed=1)
    b = make((w_shape[1] * groups,), seed=2) if bias else None
    check_op(lambda a, ww, bb: fn(a, ww, bb, **kw), x, w, b, grad=True)


@pytest.mark.parametrize("dtype", FLOATS)
def test_conv_transpose_dtypes(dtype):
    x_shape, w_shape, kw = next(
        c for c in TRANSPOSED_CASES if c[2].get("groups") == 2 and len(c[0]) == 4
    )
    x, w, b = make(x_shape, dtype), make(w_shape, dtype, seed=1), make((2,), dtype, seed=2)
    check_op(
        lambda a, ww, bb: F.conv_transpose2d(a, ww, bb, **kw), x, w, b, grad=True, **tol(dtype)
    )


def test_conv_layouts():
    # Non-contiguous and channels_last inputs and weights, unbatched inputs.
    x, w, b = make((2, 4, 6, 5)), make((6, 2, 3, 3), seed=1), make((6,), seed=2)
    conv = lambda a, ww, bb: F.conv2d(a, ww, bb, padding=1, groups=2)
    check_op(conv, noncontiguous(x), noncontiguous(w), b, grad=True)
    cl = lambda t: t.detach().to(memory_format=torch.channels_last).requires_grad_()
    check_op(conv, cl(x), cl(w), b, grad=True)
    check_op(
        lambda a, ww: F.conv1d(a, ww, stride=2),
        noncontiguous(make((3, 7))),
        make((4, 3, 2)),
        grad=True,
    )
    check_op(lambda a, ww: F.conv2d(a, ww), make((4, 5, 5)), make((3, 4, 2, 2)), grad=True)
    x3 = make((1, 2, 4, 4, 4)).detach().to(memory_format=torch.channels_last_3d).requires_grad_()
    check_op(lambda a, ww: F.conv3d(a, ww, padding=1), x3, make((2, 2, 3, 3, 3)), grad=True)
    # A permuted 1-d input (PyTorch makes it contiguous before viewing it as 2-d).
    x1 = make((2, 7, 3)).detach().transpose(1, 2).requires_grad_()
    check_op(lambda a, ww: F.conv1d(a, ww, padding=1), x1, make((5, 3, 3)), grad=True)


def test_conv_empty_batch_and_modules():
    # Empty batches take PyTorch's Empty backend (elementwise ops), gradients included.
    check_op(
        lambda a, ww, bb: F.conv2d(a, ww, bb),
        make((0, 3, 5, 5)),
        make((4, 3, 3, 3)),
        make((4,)),
        grad=True,
    )
    torch.manual_seed(0)
    for m in [
        torch.nn.Conv2d(3, 4, 3, padding=1),
        torch.nn.Conv2d(3, 6, 3, padding=2, padding_mode="circular", groups=3),
    ]:
        m_tpu = copy.deepcopy(m).to("tpu")
        check_op(
            lambda a, mm=m, mt=m_tpu: (mm if a.device.type == "cpu" else mt)(a),
            make((2, 3, 5, 6)),
            grad=True,
        )
        for p_cpu, p_tpu in zip(m.parameters(), m_tpu.parameters()):
            assert_same(p_tpu.grad, p_cpu.grad)


def test_conv_double_backward():
    # Gradients of gradients go through convolutions again (PyTorch's double-backward formula).
    x, w = make((1, 2, 5, 5), torch.float64), make((3, 2, 3, 3), torch.float64, seed=1)

    def grad_norm(a, ww):
        y = F.conv2d(a, ww, stride=2, padding=1)
        (gx, gw) = torch.autograd.grad(y.pow(2).sum(), (a, ww), create_graph=True)
        return gx.pow(2).sum() + gw.pow(2).sum()

    check_op(grad_norm, x, w, grad=True)


def test_conv_runs_natively():
    # With the CPU fallback allowed, nothing falls back: every op of forward and backward is lowered.
    torch_tpu.metrics.reset()
    with torch_tpu.cpu_fallback():
        x = make((1, 2, 5, 5)).detach().to("tpu").requires_grad_()
        w = make((3, 2, 3, 3), seed=1).detach().to("tpu").requires_grad_()
        F.conv2d(x, w, padding=1).sum().backward()
        F.conv_transpose2d(x, w.transpose(0, 1), stride=2).sum().backward()
        F.conv1d(x[:, :, 0], w[:, :, 0], padding="same").sum().backward()
        torch.tpu.synchronize()
    assert torch_tpu.metrics.fallback_counts() == {}


def test_conv_errors():
    # PyTorch's own argument checks run at the call (aten::_convolution), with its messages.
    cases = [
        lambda d: F.conv2d(torch.zeros(1, 3, 5, 5, device=d), torch.zeros(4, 2, 3, 3, device=d)),
        lambda d: F.conv2d(torch.zeros(1, 3, 5, 5, device=d), torch.zeros(4, 3, 7, 7, device=d)),
        lambda d: F.conv2d(
            torch.zeros(1, 4, 5, 5, device=d), torch.zeros(4, 2, 3, 3, device=d), groups=3
        ),
        lambda d: F.conv2d(
            torch.zeros(1, 3, 5, 5, device=d), torch.zeros(4, 3, 3, 3, device=d), padding=-1
        ),
        lambda d: F.conv2d(
            torch.zeros(1, 3, 5, 5, device=d),
            torch.zeros(4, 3, 3, 3, device=d),
            bias=torch.zeros(3, device=d),
        ),
        lambda d: F.conv2d(torch.zeros(1, 3, 5, 5, device=d), torch.zeros(4, 3, 3, device=d)),
        lambda d: F.conv2d(
            torch.zeros(1, 3, 5, 5, device=d),
            torch.zeros(4, 3, 3, 3, device=d),
            padding="same",
            stride=2,
        ),
        lambda d: F.conv_transpose2d(
            torch.zeros(1, 3, 5, 5, device=d),
            torch.zeros(3, 4, 3, 3, device=d),
            stride=2,
            output_padding=2,
        ),
    ]
    cases += [
        lambda d: F.conv2d(
            torch.zeros(1, 3, 5, 5, device=d),
            torch.zeros(4, 3, 3, 3, device=d, dtype=torch.float64),
        ),
        lambda d: F.conv2d(
            torch.zeros(1, 3, 5, 5, device=d),
            torch.zeros(4, 3, 3, 3, device=d),
            torch.zeros(4, device=d, dtype=torch.float64),
        ),
        lambda d: F.conv_transpose1d(
            torch.zeros(1, 3, 5, device=d),
            torch.zeros(3, 4, 3, device=d),
            stride=2,
            output_padding=2,
        ),
        lambda d: F.conv_transpose3d(
            torch.zeros(1, 3, 4, 4, 4, device=d),
            torch.zeros(3, 4, 3, 3, 3, device=d),
            stride=2,
            output_padding=(1, 2, 1),
        ),
    ]
    for case in cases:
        with pytest.raises(RuntimeError) as cpu_err:
            case("cpu")
        with pytest.raises(RuntimeError) as tpu_err:
            case("tpu")
        assert str(tpu_err.value) == str(cpu_err.value)
    # Bool convolutions are rejected, as on CPU (whose message names its kernel).
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        F.conv2d(
            torch.zeros(1, 3, 5, 5, device="tpu", dtype=torch.bool),
            torch.zeros(4, 3, 3, 3, device="tpu", dtype=torch.bool),
        )


@pytest.mark.parametrize("dtype", (torch.int64, torch.int32, torch.uint8))
def test_conv_integer(dtype):
    # CPU convolves integers too (uint8 wraps around, identically in any summation order).
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 9, (2, 4, 6, 5), generator=g).to(dtype)
    w = torch.randint(-3, 4, (6, 2, 3, 2), generator=g).to(dtype)
    b = torch.randint(-5, 5, (6,), generator=g).to(dtype)
    check_op(lambda a, ww, bb: F.conv2d(a, ww, bb, stride=(2, 1), padding=1, groups=2), x, w, b)
    if dtype == torch.int64:
        # (CPU's transposed kernels take no other integer type; tpu takes them all.)
        check_op(
            lambda a, ww: F.conv_transpose1d(a, ww, stride=2), x[:, :, 0], w[:4, :, 0].contiguous()
        )


@pytest.mark.parametrize(
    "name",
    [
        "nn.functional.conv1d",
        "nn.functional.conv2d",
        "nn.functional.conv3d",
        "nn.functional.conv_transpose1d",
        "nn.functional.conv_transpose2d",
        "nn.functional.conv_transpose3d",
    ],
)
@pytest.mark.parametrize("dtype", (torch.float32, torch.float64))
def test_conv_opinfo(name, dtype):
    # OpInfo samples hold values up to 9 in magnitude, so f32 outputs and gradients are sums of
    # terms up to ~100 with much cancellation and their differences follow summation order:
    # measured max |tpu - cpu| / max |cpu| = 3.7e-6 (the conv_transpose3d bias gradient, an f32
    # sum of ~5000 values: tpu 3.0e-6 and CPU's cascade sum 1.7e-7 from a float64 reference),
    # at most 1.1e-6 elsewhere. float64 checks every sample at the default tolerances.
    op, ss = samples(name, dtype)
    for s in ss:
        check_sample(op, s, rel_to_max=1e-5 if dtype == torch.float32 else None)
