"""Autocast on tpu (`torch.autocast("tpu")`, the AutocastPrivateUse1 key) against CPU.

Each policy is checked by the dtype and values it produces: lower-precision ops against CPU on
inputs cast to the autocast dtype, float32 ops against CPU in float32, promoting ops against
CPU type promotion; where CPU's own autocast has the same policy, against CPU autocast itself,
forward and backward."""

import pytest
import torch
import torch.nn.functional as F
import torch.tpu.amp  # the module path CUDA code spells torch.cuda.amp
from op_check import assert_same, noncontiguous

pytestmark = pytest.mark.usefixtures("each_mode")

LOW_DTYPES = [torch.bfloat16, torch.float16]


def _rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _cast(args, dtype):
    return [
        a.to(dtype) if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args
    ]


def _tpu(args):
    return [a.to("tpu") if isinstance(a, torch.Tensor) else a for a in args]


# (name, fn, inputs): ops autocast runs in the lower-precision dtype.
LOWER_PRECISION = [
    ("mm", torch.mm, [_rand(3, 4), _rand(4, 5, seed=1)]),
    ("matmul", torch.matmul, [_rand(2, 3, 4), noncontiguous(_rand(4, 5, seed=1))]),
    ("bmm", torch.bmm, [_rand(2, 3, 4), _rand(2, 4, 5, seed=1)]),
    ("addmm", torch.addmm, [_rand(5), _rand(3, 4, seed=1), _rand(4, 5, seed=2)]),
    ("baddbmm", torch.baddbmm, [_rand(2, 3, 5), _rand(2, 3, 4, seed=1), _rand(2, 4, 5, seed=2)]),
    ("addbmm", torch.addbmm, [_rand(3, 5), _rand(2, 3, 4, seed=1), _rand(2, 4, 5, seed=2)]),
    ("linear", F.linear, [_rand(3, 4), _rand(5, 4, seed=1), _rand(5, seed=2)]),
    ("conv2d", F.conv2d, [_rand(1, 2, 6, 6), _rand(3, 2, 3, 3, seed=1)]),
    ("conv1d", F.conv1d, [_rand(1, 2, 7), _rand(3, 2, 3, seed=1)]),
    ("conv_transpose2d", F.conv_transpose2d, [_rand(1, 2, 4, 4), _rand(2, 3, 3, 3, seed=1)]),
    ("einsum", lambda a, b: torch.einsum("ij,jk->ik", a, b), [_rand(3, 4), _rand(4, 5, seed=1)]),
    ("prelu", F.prelu, [_rand(2, 3, 4), torch.full((3,), 0.25)]),
    (
        "sdpa",
        F.scaled_dot_product_attention,
        [_rand(1, 2, 5, 8), _rand(1, 2, 5, 8, seed=1), _rand(1, 2, 5, 8, seed=2)],
    ),
]

# Ops autocast runs in float32, given lower-precision inputs.
FLOAT32 = [
    ("softmax", lambda x: torch.softmax(x, -1)),
    ("log_softmax", lambda x: F.log_softmax(x, -1)),
    ("layer_norm", lambda x: F.layer_norm(x, (6,))),
    ("group_norm", lambda x: F.group_norm(x, 2)),
    ("exp", torch.exp),
    ("log1p", torch.log1p),
    ("pow", lambda x: torch.pow(x, 2.5)),
    ("rsqrt", torch.rsqrt),
    ("sum", torch.sum),
    ("cumsum", lambda x: torch.cumsum(x, 1)),
    ("norm", lambda x: torch.norm(x)),
    ("vector_norm", lambda x: torch.linalg.vector_norm(x, dim=1)),
    ("logsumexp", lambda x: torch.logsumexp(x, 1)),
    ("mse_loss", lambda x: F.mse_loss(x, torch.zeros_like(x))),
    ("softplus", F.softplus),
]


@pytest.mark.parametrize("dtype", LOW_DTYPES, ids=str)
@pytest.mark.parametrize("name,fn,inputs", LOWER_PRECISION, ids=[c[0] for c in LOWER_PRECISION])
def test_lower_precision_ops(name, fn, inputs, dtype):
    expected = fn(*_cast(inputs, dtype))
    with torch.autocast("tpu", dtype=dtype):
        actual = fn(*_tpu(inputs))
    assert expected.dtype == dtype
    assert_same(actual, expected, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("dtype", LOW_DTYPES, ids=str)
@pytest.mark.parametrize("name,fn", FLOAT32, ids=[c[0] for c in FLOAT32])
def test_float32_ops(name, fn, dtype):
    x = (_rand(4, 6).abs() + 0.1).to(dtype)  # in every op's domain
    expected = fn(x.float())
    with torch.autocast("tpu", dtype=dtype):
        actual = fn(x.to("tpu"))
    assert_same(actual, expected, atol=1e-5, rtol=1e-5)


def test_promote_and_fallthrough():
    a, b = _rand(2, 3), _rand(2, 3, seed=1).bfloat16()
    with torch.autocast("tpu"):
        assert_same(torch.cat([a.to("tpu"), b.to("tpu")]), torch.cat([a, b.float()]))
        assert_same(torch.stack([b.to("tpu"), a.to("tpu")]), torch.stack([b.float(), a]))
        assert_same(
            torch.addcmul(a.to("tpu"), b.to("tpu"), a.to("tpu")), torch.addcmul(a, b.float(), a)
        )
        i = torch.tensor([0, 1])
        assert_same(
            a.to("tpu").index_put((i.to("tpu"),), b[0].to("tpu")), a.index_put((i,), b[0].float())
        )
        # Not in any list: runs in the input dtype, like outside autocast.
        assert_same(torch.relu(b.to("tpu")), torch.relu(b))
        assert_same(a.to("tpu") + b.to("tpu"), a + b)
        # Integer inputs are never cast.
        n = torch.arange(6).reshape(2, 3)
        assert_same(n.to("tpu") @ n.T.to("tpu"), n @ n.T)


def test_default_dtype_alias_and_nesting():
    assert torch.get_autocast_dtype("tpu") == torch.bfloat16
    assert torch.bfloat16 in torch.tpu.get_amp_supported_dtype()
    x = _rand(3, 3).to("tpu")
    with torch.tpu.amp.autocast():
        assert torch.is_autocast_enabled("tpu") and not torch.is_autocast_enabled("cpu")
        assert (x @ x).dtype == torch.bfloat16
        with torch.autocast("tpu", enabled=False):
            assert (x @ x).dtype == torch.float32
        with torch.tpu.amp.autocast(dtype=torch.float16):
            assert (x @ x).dtype == torch.float16
        assert (x @ x).dtype == torch.bfloat16
        # CPU tensors are not touched by the tpu autocast region.
        assert (x.cpu() @ x.cpu()).dtype == torch.float32
    assert not torch.is_autocast_enabled("tpu")
    assert (x @ x).dtype == torch.float32


def test_binary_cross_entropy_is_refused():
    p = torch.rand(4).to("tpu")
    with torch.autocast("tpu"), pytest.raises(RuntimeError, match="unsafe to autocast"):
        F.binary_cross_entropy(p, p)


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(4 * 4 * 4, 5)
    )


def _train_step(model, x, y, device, dtype):
    with torch.autocast(device, dtype=dtype):
        out = model(x)
        loss = F.mse_loss(out, y)
    loss.backward()
    return out, loss


@pytest.mark.parametrize("dtype", LOW_DTYPES, ids=str)
def test_training_step_matches_cpu_autocast(dtype):
    # conv2d, linear (lower precision) and mse_loss (float32) have the same policy on CPU.
    cpu, tpu = _mlp(), _mlp().to("tpu")
    x, y = _rand(2, 3, 6, 6), _rand(2, 5, seed=1)
    out_c, loss_c = _train_step(cpu, x, y, "cpu", dtype)
    out_t, loss_t = _train_step(tpu, x.to("tpu"), y.to("tpu"), "tpu", dtype)
    assert out_c.dtype == dtype and loss_c.dtype == torch.float32
    assert_same(out_t, out_c, atol=2e-2, rtol=2e-2)
    assert_same(loss_t, loss_c, atol=1e-2, rtol=1e-2)
    for pc, pt in zip(cpu.parameters(), tpu.parameters()):
        assert pt.grad.dtype == torch.float32
        assert_same(pt.grad, pc.grad, atol=5e-2, rtol=5e-2)


def test_custom_fwd_casts_inputs():
    @torch.amp.custom_fwd(device_type="tpu", cast_inputs=torch.float32)
    def f(a):
        return a @ a

    x = _rand(3, 3).to("tpu")
    with torch.autocast("tpu"):
        assert f(x).dtype == torch.float32 and (x @ x).dtype == torch.bfloat16


def test_compiled_autocast_matches_eager():
    model = _mlp().to("tpu")
    x = _rand(2, 3, 6, 6).to("tpu")

    def f(x):
        with torch.autocast("tpu"):
            return torch.softmax(model(x), -1), model(x)

    eager = f(x)
    compiled = torch.compile(f, backend="tpu")(x)
    assert [t.dtype for t in compiled] == [torch.float32, torch.bfloat16]
    assert_same(compiled, [e.cpu() for e in eager], atol=1e-2, rtol=1e-2)
