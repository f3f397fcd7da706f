"""bf16 results that must match PyTorch's CPU kernels bit for bit: the places where CPU rounds
intermediates to bf16 (log_softmax's row sums, layer/batch norm statistics, addr's steps,
binary_cross_entropy_with_logits' composed ops, adaptive_avg_pool3d's window sums)."""

import pytest
import torch
import torch.nn.functional as F
from op_check import check_op, noncontiguous

import torch_tpu  # noqa: F401

# Every test here runs in strict, debug and fused mode (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("each_mode")

BF = torch.bfloat16


def rand(*shape, scale=4.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * scale).to(BF)


def same(fn, *args):
    """fn on tpu equals fn on CPU exactly (each returned tensor: dtype, shape, bits)."""
    want = fn(*args)
    got = fn(*[a.to("tpu") if isinstance(a, torch.Tensor) else a for a in args])
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    for w, g in zip(want, got):
        assert g.device.type == "tpu"
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g.cpu(), w, atol=0, rtol=0, equal_nan=True)


def same_norm(fn, *args, eval_stats=None):
    """A norm's output equals CPU's exactly; its saved statistics keep the meta kernel's float
    dtype and equal CPU's bf16 ones once rounded (tests/device_results.py says why they differ).
    eval_stats: the (mean, invstd) an eval-mode batch norm saves, where CPU returns empty tensors."""
    want = fn(*args)
    got = fn(*[a.to("tpu") if isinstance(a, torch.Tensor) else a for a in args])
    assert got[0].device.type == "tpu"
    assert got[0].dtype == want[0].dtype and got[0].shape == want[0].shape
    torch.testing.assert_close(got[0].cpu(), want[0], atol=0, rtol=0)
    for k in (1, 2):
        assert got[k].dtype == torch.float32
        if eval_stats is not None:
            torch.testing.assert_close(got[k].cpu(), eval_stats[k - 1])
        else:
            torch.testing.assert_close(got[k].cpu().to(want[k].dtype), want[k], atol=0, rtol=0)


@pytest.mark.parametrize(
    "shape,dim",
    [((5, 5), 1), ((5, 5), 0), ((7, 33), 0), ((3, 4, 40), 2), ((3, 4, 40), 1), ((64, 100), 1)],
)
def test_log_softmax_bf16(shape, dim):
    same(lambda x: torch.log_softmax(x, dim), rand(*shape))


def test_log_softmax_f32_and_grad():
    check_op(lambda x: torch.log_softmax(x, -1), rand(4, 9).float().requires_grad_(), grad=True)
    check_op(lambda x: torch.log_softmax(x, 0), noncontiguous(rand(4, 9)))


@pytest.mark.parametrize("affine", [False, True])
def test_native_layer_norm_bf16(affine):
    w = rand(6, seed=1) if affine else None
    b = rand(6, seed=2) if affine else None
    same_norm(lambda x, w, b: torch.native_layer_norm(x, [6], w, b, 1e-5), rand(3, 6), w, b)
    # A single element: (x - mean) is 0 but CPU's fma form leaves a rounding residue.
    same_norm(lambda x, w: torch.native_layer_norm(x, [1], w, None, 1e-5), rand(1), rand(1, seed=3))


def test_native_layer_norm_mixed_keeps_float_stats():
    # bf16 input, float weight: CPU keeps float mean/rstd (equal up to float rounding).
    check_op(lambda x, w: torch.native_layer_norm(x, [6], w, w, 1e-5), rand(3, 6), torch.randn(6))


def test_layer_norm_bf16_grad():
    check_op(lambda x: F.layer_norm(x, [6]), rand(3, 6).requires_grad_(), grad=True)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_bf16(training):
    x = rand(5, 3, 7)
    w, b = rand(3, seed=1), rand(3, seed=2)
    rm, rv = rand(3, seed=3, scale=1.0), rand(3, seed=4, scale=1.0).abs() + 0.5
    stats = None if training else (rm.float(), (rv.double() + 1e-5).rsqrt().float())
    same_norm(
        lambda x, w, b, rm, rv: torch.native_batch_norm(
            x, w, b, rm.clone(), rv.clone(), training, 0.1, 1e-5
        ),
        x,
        w,
        b,
        rm,
        rv,
        eval_stats=stats,
    )
    same_norm(
        lambda x: torch.ops.aten._native_batch_norm_legit(x, None, None, True, 0.1, 1e-5),
        rand(1, 2, 3),
    )


def test_batch_norm_bf16_module_grad():
    check_op(
        lambda x, w: F.batch_norm(x, None, None, w, None, training=True),
        rand(4, 3, 5).requires_grad_(),
        rand(3, seed=5).requires_grad_(),
        grad=True,
    )


@pytest.mark.parametrize("kw", [{}, {"beta": 0.6, "alpha": 0.2}, {"beta": 0.0}])
def test_addr_bf16(kw):
    same(lambda s, a, b: torch.addr(s, a, b, **kw), rand(5, 10), rand(5, seed=1), rand(10, seed=2))
    check_op(
        lambda s, a, b: torch.addr(s, a, b, **kw), noncontiguous(rand(5, 10)), rand(5), rand(10)
    )


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_bce_with_logits_bf16(reduction):
    x, t = rand(5, 5), rand(5, 5, seed=1).float().sigmoid().to(BF)
    same(
        lambda x, t, w, p: F.binary_cross_entropy_with_logits(
            x, t, weight=w, pos_weight=p, reduction=reduction
        ),
        x,
        t,
        rand(5, seed=2),
        rand(5, seed=3).abs(),
    )
    same(lambda x, t: F.binary_cross_entropy_with_logits(x, t, reduction=reduction), x, t)


@pytest.mark.parametrize("out", [(5, 7, 4), (4, 3, 7), (8, 3, 2)])
def test_adaptive_avg_pool3d_bf16(out):
    same(lambda x: F.adaptive_avg_pool3d(x, out), rand(2, 3, 8, 8, 6))
    check_op(
        lambda x: F.adaptive_avg_pool3d(x, out),
        rand(1, 2, 8, 8, 6).float().requires_grad_(),
        grad=True,
    )
