"""Batch norm (training with running stats, eval, no stats), instance norm, group norm, rms norm
and layer norm on tpu against CPU: outputs, updated running stats and gradients."""

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


def make(shape, dtype=torch.float32, grad=True, seed=0, scale=1.0, shift=0.0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=torch.float64) * scale + shift
    return x.to(dtype).requires_grad_(grad)


# bf16: the tpu computes batch statistics, outputs, running-stat updates and gradients in f32 and
# rounds once; CPU's bf16 kernels round some intermediates (the running stats are updated in
# bf16, the backward's sums cancel: gy - mean(gy) - xhat * mean(gy * xhat)). Measured over 3
# seeds: |tpu - cpu| <= 7.8e-3 for outputs up to 1.8 and running stats (1 bf16 ulp at 1-2),
# 1.6e-2 for input gradients up to 2.6, 6.3e-2 for weight gradients up to 9 (1 ulp at 8), with
# the tpu the closer one to a float64 reference every time (e.g. weight gradient: |cpu - f64|
# 5.6e-2, |tpu - f64| 7.0e-3).
BF16_TOL = {"atol": 2e-2, "rtol": 1.6e-2, "grad_atol": 8e-2, "grad_rtol": 2e-2}


def tol(dtype):
    return BF16_TOL if dtype == torch.bfloat16 else {}


def bn_train(x, w, b, rm, rv, momentum=0.1, eps=1e-5):
    """Training-mode batch norm whose result includes the updated running stats."""
    y = F.batch_norm(x, rm, rv, w, b, training=True, momentum=momentum, eps=eps)
    return y, rm, rv


SHAPES = [(6, 3), (4, 3, 5), (2, 3, 4, 5), (2, 3, 2, 3, 4)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_training(shape, affine):
    c = shape[1]
    x = make(shape, shift=0.5)
    w = make((c,), seed=1) if affine else None
    b = make((c,), seed=2) if affine else None
    rm, rv = make((c,), grad=False, seed=3), make((c,), grad=False, seed=4).abs()
    check_op(
        lambda a, ww, bb, m, v: bn_train(a, ww, bb, m, v, momentum=0.3), x, w, b, rm, rv, grad=True
    )


@pytest.mark.parametrize("dtype", FLOATS)
def test_batch_norm_dtypes(dtype):
    x = make((4, 3, 5, 2), dtype, shift=1.0)
    w, b = make((3,), dtype, seed=1), make((3,), dtype, seed=2)
    rm, rv = make((3,), dtype, grad=False, seed=3), make((3,), dtype, grad=False, seed=4).abs()
    check_op(bn_train, x, w, b, rm, rv, grad=True, **tol(dtype))
    check_op(
        lambda a, ww, bb, m, v: F.batch_norm(a, m, v, ww, bb, training=False),
        x,
        w,
        b,
        rm,
        rv,
        grad=True,
        **tol(dtype),
    )
    check_op(
        lambda a, ww, bb: F.batch_norm(a, None, None, ww, bb, training=True),
        x,
        w,
        b,
        grad=True,
        **tol(dtype),
    )
    if dtype == torch.bfloat16:
        # bf16 input with float parameters and running stats (autocast-style mixed precision).
        w32, b32 = w.detach().float().requires_grad_(), b.detach().float().requires_grad_()
        rm32, rv32 = rm.float(), rv.float()
        check_op(bn_train, x, w32, b32, rm32, rv32, grad=True, **tol(dtype))


@pytest.mark.parametrize("shape", SHAPES[1:])
def test_batch_norm_eval(shape):
    c = shape[1]
    x, w, b = make(shape), make((c,), seed=1), make((c,), seed=2)
    rm, rv = make((c,), grad=False, seed=3), make((c,), grad=False, seed=4).abs()
    check_op(
        lambda a, ww, bb, m, v: F.batch_norm(a, m, v, ww, bb, training=False, eps=0.1),
        x,
        w,
        b,
        rm,
        rv,
        grad=True,
    )
    check_op(lambda a, m, v: F.batch_norm(a, m, v, training=False), x, rm, rv, grad=True)


def test_batch_norm_no_running_stats_and_layouts():
    x, w, b = make((4, 3, 5, 6)), make((3,), seed=1), make((3,), seed=2)
    check_op(
        lambda a, ww, bb: F.batch_norm(a, None, None, ww, bb, training=True), x, w, b, grad=True
    )
    rm, rv = torch.zeros(3), torch.ones(3)
    check_op(bn_train, noncontiguous(x), w, b, rm, rv, grad=True)
    cl = x.detach().to(memory_format=torch.channels_last).requires_grad_()
    check_op(bn_train, cl, w, b, rm, rv, grad=True)
    cl3 = make((2, 3, 2, 3, 4)).detach().to(memory_format=torch.channels_last_3d).requires_grad_()
    check_op(bn_train, cl3, w, b, rm, rv, grad=True)


def test_batch_norm_internal_ops():
    x, w, b = make((4, 3, 5)), make((3,), seed=1), make((3,), seed=2)
    rm, rv = make((3,), grad=False, seed=3), make((3,), grad=False, seed=4).abs()
    aten = torch.ops.aten
    # Training: outputs, save_mean / save_invstd and the in-place running-stat update.
    for op in (aten.native_batch_norm, aten._native_batch_norm_legit):
        check_op(
            lambda a, ww, bb, m, v, op=op: (*op(a, ww, bb, m, v, True, 0.2, 1e-3), m, v),
            x,
            w,
            b,
            rm,
            rv,
            grad=True,
        )
    check_op(
        lambda a, ww, bb: aten._native_batch_norm_legit(a, ww, bb, True, 0.2, 1e-3),
        x,
        w,
        b,
        grad=True,
    )
    check_op(
        lambda a, ww, bb, m, v: (
            *aten._batch_norm_with_update(a, ww, bb, m, v, 0.2, 1e-3)[:3],
            m,
            v,
        ),
        x,
        w,
        b,
        rm,
        rv,
        grad=True,
    )
    # Eval: save_mean / save_invstd are the running mean and 1 / sqrt(running_var + eps) on
    # non-CPU devices (PyTorch's decomposition documents the difference; CPU returns empty
    # tensors), so only the output is compared with CPU.
    y = aten.native_batch_norm(
        x.detach().to("tpu"),
        w.detach().to("tpu"),
        b.detach().to("tpu"),
        rm.to("tpu"),
        rv.to("tpu"),
        False,
        0.2,
        1e-3,
    )
    assert_same(
        y[0],
        aten.native_batch_norm(x.detach(), w.detach(), b.detach(), rm, rv, False, 0.2, 1e-3)[0],
    )
    assert_same(y[1], rm)
    assert_same(y[2], (rv + 1e-3).rsqrt(), atol=1e-6, rtol=1e-6)
    check_op(
        lambda a, ww, bb, m, v: aten._native_batch_norm_legit_no_training(
            a, ww, bb, m, v, 0.2, 1e-3
        )[0],
        x,
        w,
        b,
        rm,
        rv,
        grad=True,
    )
    # Backward ops with several output masks. Only requested outputs are compared: where CPU
    # returns None for an unrequested grad_input, PyTorch's meta kernel (which plans the tpu
    # outputs) returns a tensor, which the tpu fills with zeros.
    gy, xd = make((4, 3, 5), seed=5, grad=False), x.detach()
    mean, invstd = xd.mean((0, 2)), (xd.var((0, 2), unbiased=False) + 1e-3).rsqrt()
    reserve = torch.empty(0, dtype=torch.uint8)
    for train in (True, False):
        for mask in ([True, True, True], [True, False, False], [False, True, True]):
            args = (gy, xd, w.detach(), rm, rv, mean, invstd, train, 1e-3, mask)

            def requested(*a, mask=mask):
                out = aten.native_batch_norm_backward(*a[:10])
                new = aten.batch_norm_backward(*a)
                return [t for t, m in zip(out, mask) if m] + [t for t, m in zip(new, mask) if m]

            check_op(requested, *args, reserve)


def test_batch_norm_modules_train_and_eval():
    # Modules update running stats (and num_batches_tracked, which momentum=None averages by)
    # over several steps, then evaluate with them.
    torch.manual_seed(0)
    cases = [
        (torch.nn.BatchNorm1d(3), (5, 3, 4)),
        (torch.nn.BatchNorm2d(3, momentum=None), (4, 3, 3, 3)),
        (torch.nn.BatchNorm3d(3, affine=False), (2, 3, 2, 2, 3)),
    ]
    for m, shape in cases:
        m_tpu = copy.deepcopy(m).to("tpu")

        def run(a, mm=m, mt=m_tpu):
            return (mm if a.device.type == "cpu" else mt)(a)

        for step in range(3):
            check_op(run, make(shape, seed=step, shift=step), grad=True)
        for (_, t_cpu), (_, t_tpu) in zip(m.state_dict().items(), m_tpu.state_dict().items()):
            assert_same(t_tpu, t_cpu)
        m.eval()
        m_tpu.eval()
        check_op(run, make(shape, seed=9), grad=True)


@pytest.mark.parametrize("dtype", FLOATS)
def test_instance_norm(dtype):
    x, w, b = make((3, 4, 5, 2), dtype), make((4,), dtype, seed=1), make((4,), dtype, seed=2)
    check_op(
        lambda a, ww, bb: F.instance_norm(a, weight=ww, bias=bb), x, w, b, grad=True, **tol(dtype)
    )
    rm, rv = make((4,), dtype, grad=False, seed=3), make((4,), dtype, grad=False, seed=4).abs()

    def with_stats(a, ww, bb, m, v):
        return F.instance_norm(a, m, v, ww, bb, use_input_stats=True, momentum=0.3), m, v

    check_op(with_stats, x, w, b, rm, rv, grad=True, **tol(dtype))
    check_op(
        lambda a, m, v: F.instance_norm(a, m, v, use_input_stats=False),
        x,
        rm,
        rv,
        grad=True,
        **tol(dtype),
    )


def test_group_and_rms_norm_backward():
    x, w, b = make((2, 6, 3, 2)), make((6,), seed=1), make((6,), seed=2)
    check_op(lambda a, ww, bb: F.group_norm(a, 3, ww, bb), x, w, b, grad=True)
    check_op(lambda a, ww, bb: F.group_norm(a, 3, ww, bb), noncontiguous(x), w, b, grad=True)
    check_op(lambda a, ww: F.rms_norm(a, (3, 2), ww), x, make((3, 2), seed=3), grad=True)
    check_op(lambda a: F.rms_norm(a, (2,), eps=1e-3), x, grad=True)


def test_normalization_runs_natively():
    torch_tpu.metrics.reset()
    with torch_tpu.cpu_fallback():
        x = make((4, 3, 5)).detach().to("tpu").requires_grad_()
        w = torch.ones(3, device="tpu", requires_grad=True)
        rm, rv = torch.zeros(3, device="tpu"), torch.ones(3, device="tpu")
        y = (
            F.batch_norm(x, rm, rv, w, training=True).sum()
            + F.batch_norm(x, rm, rv, w, training=False).sum()
        )
        y = y + F.instance_norm(x).sum() + F.group_norm(x, 3, w).sum() + F.rms_norm(x, (5,)).sum()
        y.backward()
        torch.tpu.synchronize()
    assert torch_tpu.metrics.fallback_counts() == {}


def test_batch_norm_errors():
    cases = [
        lambda d: F.batch_norm(
            torch.zeros(4, 3, device=d), torch.zeros(2, device=d), torch.ones(2, device=d)
        ),
        lambda d: F.batch_norm(torch.zeros(1, 3, device=d), None, None, training=True),
        lambda d: torch.ops.aten.native_batch_norm(
            torch.zeros(4, 3, device=d), None, None, torch.zeros(3, device=d), None, True, 0.1, 1e-5
        ),
    ]
    for case in cases:
        with pytest.raises((RuntimeError, ValueError)) as cpu_err:
            case("cpu")
        with pytest.raises(type(cpu_err.value)) as tpu_err:
            case("tpu")
        assert str(tpu_err.value) == str(cpu_err.value)


@pytest.mark.parametrize(
    "name,variant",
    [
        ("nn.functional.batch_norm", ""),
        ("nn.functional.batch_norm", "without_cudnn"),
        ("nn.functional.instance_norm", ""),
        ("nn.functional.group_norm", ""),
        ("nn.functional.rms_norm", ""),
        ("nn.functional.layer_norm", ""),
        ("_batch_norm_with_update", ""),
        ("nn.functional.local_response_norm", ""),  # a composite over avg_pool2d/3d
    ],
)
def test_normalization_opinfo(name, variant):
    op, ss = samples(name, variant=variant)
    for s in ss:
        check_sample(op, s)


@pytest.mark.parametrize("name", ["native_batch_norm", "_native_batch_norm_legit"])
def test_native_batch_norm_opinfo(name):
    # In eval mode (training=False) only the output is compared: see test_batch_norm_internal_ops.
    op, ss = samples(name)
    for s in ss:
        training = next(a for a in s.args if isinstance(a, bool))
        if training:
            check_sample(op, s)
        else:
            check_op(lambda *a: op.op(*a)[0], s.input, *s.args, grad=True)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_double_backward(training):
    def f(a, ww, m, v):
        y = F.batch_norm(a, m, v, ww, training=training)
        gs = torch.autograd.grad(y.pow(2).sum(), (a, ww), create_graph=True)
        return sum(g.pow(2).sum() for g in gs)

    x, w = make((2, 3, 4, 4), torch.float64), make((3,), torch.float64, seed=1)
    rm, rv = (
        make((3,), torch.float64, grad=False, seed=2),
        make((3,), torch.float64, grad=False, seed=3).abs(),
    )
    check_op(f, x, w, rm, rv, grad=True)
