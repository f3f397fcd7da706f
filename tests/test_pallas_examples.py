"""The JAX-op examples (examples/jax_ops): a fused RMSNorm and the grouped matmul of a
mixture-of-experts layer, each against its torch reference forward and backward, and the MoE
model that uses both trained in eager, fused and compiled mode against the torch-ops model on
the CPU."""

import os
import sys

import pytest
import torch

sys.path.insert(
    0,
    os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "jax_ops"
    ),
)
import moe_demo  # noqa: E402
from grouped_matmul import grouped_matmul, grouped_matmul_reference  # noqa: E402
from rms_norm import rms_norm  # noqa: E402

TOLERANCE = {torch.float32: {}, torch.bfloat16: {"rtol": 2e-2, "atol": 2e-2}}


def _leaf(t, device):
    return t.detach().to(device).requires_grad_()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("noncontiguous", [False, True], ids=["contiguous", "transposed"])
def test_rms_norm_forward_and_backward_equal_torch(dtype, noncontiguous):
    x = torch.randn(5, 16, 12).to(dtype)
    if noncontiguous:
        x = torch.randn(5, 12, 16).to(dtype).transpose(1, 2)
    w = torch.randn(12).to(dtype)
    g = torch.randn(5, 16, 12).to(dtype)
    xc, wc = _leaf(x, "cpu"), _leaf(w, "cpu")
    # torch's RMSNorm computed in float32 and rounded once, as the JAX op does.
    expected = torch.nn.functional.rms_norm(xc.float(), (12,), wc.float(), 1e-5).to(dtype)
    expected.backward(g)
    xt, wt = _leaf(x, "tpu"), _leaf(w, "tpu")
    out = rms_norm(xt, wt, 1e-5)
    out.backward(g.to("tpu"))
    assert out.dtype == dtype
    torch.testing.assert_close(out.cpu(), expected.detach(), **TOLERANCE[dtype])
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, **TOLERANCE[dtype])
    torch.testing.assert_close(wt.grad.cpu(), wc.grad, **TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("sizes", [[3, 0, 7, 2], [12, 0, 0, 0], [1, 2, 3, 6]], ids=str)
def test_grouped_matmul_forward_and_backward_equal_torch(dtype, sizes):
    x = torch.randn(12, 8).to(dtype)
    w = torch.randn(4, 8, 6).to(dtype)
    g = torch.randn(12, 6).to(dtype)
    group_sizes = torch.tensor(sizes)
    xc, wc = _leaf(x, "cpu"), _leaf(w, "cpu")
    expected = grouped_matmul_reference(xc, wc, group_sizes)
    expected.backward(g)
    xt, wt = _leaf(x, "tpu"), _leaf(w, "tpu")
    out = grouped_matmul(xt, wt, group_sizes.to("tpu"))
    out.backward(g.to("tpu"))
    assert out.dtype == dtype and out.shape == (12, 6)
    torch.testing.assert_close(out.cpu(), expected.detach(), **TOLERANCE[dtype])
    torch.testing.assert_close(xt.grad.cpu(), xc.grad, **TOLERANCE[dtype])
    torch.testing.assert_close(wt.grad.cpu(), wc.grad, **TOLERANCE[dtype])


def test_moe_model_trains_like_torch_ops_in_every_mode():
    expected, results = moe_demo.main(steps=3)
    assert set(results) == {"eager", "fused", "compiled"}
    for mode, losses in results.items():
        torch.testing.assert_close(
            torch.tensor(losses), torch.tensor(expected), rtol=1e-4, atol=1e-4, msg=mode
        )
