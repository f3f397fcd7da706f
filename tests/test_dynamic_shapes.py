"""Ops whose sizes vary run in programs compiled per bucket (docs/dynamic_shapes.md).

Every case runs at sizes around bucket edges (16 / 17, 32 / 33, with the smallest bucket 16) and is
compared with PyTorch's CPU result on the unpadded inputs: values, dtype, shape and device,
forward and backward. Once sizes have varied (an op's first four sizes compile exactly, a fused
graph's first one), the other sizes of that bucket compile nothing: the ops run padded (counted
in `padded_launches`)."""

import pytest
import torch
import torch.nn.functional as F

import torch_tpu
from torch_tpu import metrics

WARM = (17, 18, 19, 20, 21)  # sizes of the 32 bucket: then every varying dimension is dynamic
SAME_BUCKET = (23, 29, 31)  # compile nothing more
OTHERS = (5, 9, 16, 32, 33, 47)  # other buckets, bucket edges, and back
MODES = ("strict", "fused")


# Each case starts with no program compiled, in buckets 16, 32 and 64 (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("small_buckets")


def to_tpu(t):
    if not isinstance(t, torch.Tensor):
        return t
    out = t.detach().to("tpu")
    return out.requires_grad_(t.requires_grad)


def flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def assert_same(got, want, atol, rtol):
    assert got.device.type == "tpu"
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    torch.testing.assert_close(got.cpu(), want, atol=atol, rtol=rtol, equal_nan=True)


def run_once(fn, make, size, mode, atol, rtol):
    torch.manual_seed(size)
    inputs = make(size)
    want = flat(fn(*inputs))
    tpu_inputs = [to_tpu(t) for t in inputs]
    with torch_tpu.eager_mode(mode):
        got = flat(fn(*tpu_inputs))
        for g, w in zip(got, want):
            assert_same(g, w, atol, rtol)
        differentiable = [w for w in want if w.requires_grad]
        if differentiable:
            cotangents = [torch.randn(w.shape, dtype=w.dtype) for w in differentiable]
            torch.autograd.backward(differentiable, cotangents)
            torch.autograd.backward(
                [g for g in got if g.requires_grad], [to_tpu(c) for c in cotangents]
            )
            for t, x in zip(tpu_inputs, inputs):
                if isinstance(x, torch.Tensor) and x.requires_grad:
                    assert_same(t.grad, x.grad, atol, rtol)


def check_sizes(fn, make, mode, atol=1e-5, rtol=1e-5):
    for size in WARM:
        run_once(fn, make, size, mode, atol, rtol)
    before = metrics.counters()
    for size in SAME_BUCKET:
        run_once(fn, make, size, mode, atol, rtol)
    after = metrics.counters()
    assert after["compiles"] == before["compiles"], "a size of a warm bucket compiled"
    assert after["padded_launches"] > before["padded_launches"]
    for size in OTHERS:
        run_once(fn, make, size, mode, atol, rtol)


def seq(*shape, dtype=torch.float32, grad=True):
    """A maker of one tensor whose dimension 1 is the varying size."""

    def make(n):
        x = torch.randn(*[n if s is None else s for s in shape]).to(dtype)
        return [x.requires_grad_(grad and dtype.is_floating_point)]

    return make


W = torch.randn(8, 6)
EDGES = torch.tensor([-1.5, -0.5, 0.0, 0.25, 1.0, 2.0])  # fewer than the varying size

CASES = {
    "sum over the dynamic dim": (lambda x: x.sum(1), seq(2, None, 8)),
    "sum over a static dim": (lambda x: x.sum(-1), seq(2, None, 8)),
    "sum of everything": (lambda x: x.sum(), seq(2, None, 8)),
    "prod": (lambda x: (x * 0.1 + 1).prod(1), seq(2, None, 3)),
    "amax": (lambda x: x.amax(1), seq(2, None, 8)),
    "min values and indices": (lambda x: x.min(1), seq(2, None, 8)),
    "argmax": (lambda x: x.argmax(1), seq(2, None, 8, grad=False)),
    "argmax flattened": (lambda x: x.argmax(), seq(1, None, 8, grad=False)),
    "any and all": (lambda x: ((x > 0).any(1), (x > -1).all(1)), seq(2, None, 8, grad=False)),
    "mean": (lambda x: x.mean(1), seq(2, None, 8)),
    "mean of bfloat16": (lambda x: x.mean(1), seq(2, None, 8, dtype=torch.bfloat16)),
    "var": (lambda x: x.var(1), seq(2, None, 8)),
    "std and mean, no correction": (lambda x: torch.std_mean(x, 1, correction=0), seq(2, None, 8)),
    "vector norm": (lambda x: torch.linalg.vector_norm(x, dim=1), seq(2, None, 8)),
    "inf norm": (lambda x: torch.linalg.vector_norm(x, float("inf"), dim=1), seq(2, None, 8)),
    "softmax": (lambda x: torch.softmax(x, 1), seq(2, None, 8)),
    "log_softmax": (lambda x: torch.log_softmax(x, 1), seq(2, None, 8)),
    "softmax over a static dim": (lambda x: torch.softmax(x, -1), seq(2, None, 8)),
    "logsumexp": (lambda x: torch.logsumexp(x, 1), seq(2, None, 8)),
    "cumsum": (lambda x: x.cumsum(1), seq(2, None, 8, grad=False)),
    "matmul contracting the dynamic dim": (lambda x: x.transpose(1, 2) @ x, seq(2, None, 8)),
    "matmul keeping it": (lambda x: x @ W.to(x.device), seq(1, None, 8)),
    "batched matmul merging it with the batch": (lambda x: x @ W.to(x.device), seq(2, None, 8)),
    "attention": (
        lambda x: F.scaled_dot_product_attention(x, x * 0.5, x.flip(-1), is_causal=False),
        seq(2, None, 8),
    ),
    "gather along it": (
        lambda x: x.gather(1, (x.abs() * 100).long() % x.shape[1]),
        seq(2, None, 3, grad=False),
    ),
    "index_select of static rows": (
        lambda x: x.index_select(2, torch.tensor([3, 0, 3], device=x.device)),
        seq(2, None, 8),
    ),
    "cat along it": (lambda x: torch.cat([x, x[:, :1] * 2, x], 1), seq(2, None, 4)),
    "flip along it": (lambda x: x.flip(1) * 2, seq(2, None, 4)),
    "cat along a static dim": (lambda x: torch.cat([x, x * 2], 2), seq(2, None, 4)),
    "stack": (lambda x: torch.stack([x, -x], 0), seq(2, None, 4)),
    "split and narrow views": (lambda x: x[:, 1:] * x[:, :-1] + x.narrow(1, 0, 1), seq(2, None, 4)),
    "last position": (lambda x: x[:, -1] * 3, seq(2, None, 4)),
    "transpose and reshape merging": (
        lambda x: x.transpose(0, 1).reshape(-1, 4).sum(0),
        seq(2, None, 4),
    ),
    "layer norm": (lambda x: F.layer_norm(x, (8,)), seq(2, None, 8)),
    "pointwise chain": (
        lambda x: torch.tanh(x) * torch.sigmoid(x) + x.exp().log1p(),
        seq(2, None, 8),
    ),
    "sort along it": (lambda x: torch.sort(x, 1, descending=True), seq(2, None, 3)),
    "sort with ties and NaN": (
        lambda x: torch.sort(torch.where(x > 1, float("nan"), x.round()), dim=1, stable=True),
        seq(2, None, 3, grad=False),
    ),
    "topk along it": (lambda x: torch.topk(x.transpose(1, 2), 3), seq(2, None, 3)),
    "cross entropy over the samples": (
        lambda x: F.cross_entropy(x[0], (x[1].detach().abs().sum(-1) * 3).long() % 8),
        seq(2, None, 8),
    ),
    "cross entropy over positions, one ignored": (
        lambda x: F.cross_entropy(
            x.transpose(1, 2), (x.detach().abs().sum(-1) * 3).long() % 9 - 1, ignore_index=-1
        ),
        seq(2, None, 8),
    ),
    "searchsorted into fixed edges": (
        lambda x: torch.searchsorted(EDGES.to(x.device), x, right=True) * 2,
        seq(2, None, 4, grad=False),
    ),
    "isin of fixed elements": (
        lambda x: torch.isin(x.round(), EDGES.round().to(x.device)),
        seq(2, None, 4, grad=False),
    ),
    "in-place update of a slice": (
        lambda x: x.clone().index_fill_(2, torch.tensor([0], device=x.device), 1.0).add_(1),
        seq(2, None, 4),
    ),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_case_matches_cpu_at_every_size(case, mode):
    fn, make = CASES[case]
    check_sizes(
        fn,
        make,
        mode,
        atol=2e-2 if "bfloat16" in case else 1e-5,
        rtol=2e-2 if "bfloat16" in case else 1e-5,
    )


@pytest.mark.parametrize("mode", MODES)
def test_upload_whose_source_was_written_after(mode):
    # An upload is padded from its host tensor only while that tensor holds the uploaded values.
    with torch_tpu.eager_mode(mode):
        for n in WARM + SAME_BUCKET:
            host = torch.randn(3, n)
            t = host.to("tpu")
            host[:, ::2].mul_(10)
            torch.testing.assert_close(
                t.sum(1).cpu(), (host[:, ::2] / 10).sum(1) + host[:, 1::2].sum(1)
            )


@pytest.mark.parametrize("mode", MODES)
def test_upload_whose_source_a_cpu_kernel_wrote_uncounted(mode):
    # CPU batch norm updates its running statistics in place without counting a version: a
    # padded upload must hold the values of the `.to` call all the same.
    with torch_tpu.eager_mode(mode):
        for n in WARM + SAME_BUCKET:
            running_mean = torch.randn(n)
            uploaded = running_mean.clone()
            t = running_mean.to("tpu")
            F.batch_norm(torch.randn(4, n), running_mean, torch.ones(n), training=True)
            assert not torch.equal(running_mean, uploaded)
            assert_same(t * 2, uploaded * 2, 0, 0)


@pytest.mark.parametrize("mode", MODES)
def test_uploads_under_inference_mode(mode):
    with torch_tpu.eager_mode(mode), torch.inference_mode():
        for n in WARM + SAME_BUCKET:
            host = torch.randn(3, n)
            assert_same(host.to("tpu").softmax(1), host.softmax(1), 1e-5, 1e-5)


RANDOM = {
    "dropout": lambda x: F.dropout(x, 0.3),
    "rand_like": lambda x: torch.rand_like(x) + x,
    "randn_like": lambda x: torch.randn_like(x) * x,
    "bernoulli": lambda x: torch.bernoulli(x.sigmoid()),
    "normal_": lambda x: x.clone().normal_(1.0, 2.0),
    "exponential_": lambda x: x.clone().exponential_(),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(RANDOM))
def test_random_ops_draw_the_unpadded_numbers(name, mode):
    fn = RANDOM[name]

    def draw(n):
        x = torch.randn(2, n, 8, generator=torch.Generator().manual_seed(n))
        torch.manual_seed(7)
        return fn(x.to("tpu")).cpu()

    with torch_tpu.eager_mode(mode):
        for n in WARM:
            draw(n)
        before = metrics.counters()
        padded = {n: draw(n) for n in SAME_BUCKET}
        after = metrics.counters()
        assert after["compiles"] == before["compiles"]
        assert after["padded_launches"] > before["padded_launches"]
        torch_tpu._C._cache_clear()
        with torch_tpu.dynamism.disabled():
            exact = {n: draw(n) for n in SAME_BUCKET}
        assert metrics.counters()["padded_launches"] == after["padded_launches"]
    for n in SAME_BUCKET:
        assert padded[n].shape == (2, n, 8)
        # The same draws; transcendental transforms of them may round differently by an ulp
        # in the padded program (XLA:CPU vectorizes another loop).
        torch.testing.assert_close(padded[n], exact[n], rtol=1e-6, atol=0)
