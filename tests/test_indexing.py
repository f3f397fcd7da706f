"""Indexing by integer tensors (advanced indexing, index_put, index_select/add/copy/fill, take,
put), gather/scatter, embedding, masked_scatter, compared with CPU, gradients included."""

import pytest
import torch
import torch.nn.functional as F
from op_check import check_op, noncontiguous

# Every op test runs in each eager mode (strict, debug, fused).
pytestmark = pytest.mark.usefixtures("each_mode")

DTYPES = [torch.float32, torch.bfloat16, torch.float64, torch.int64, torch.bool]


def make(*shape, dtype=torch.float32, requires_grad=False):
    g = torch.Generator().manual_seed(sum(shape) * 7 + len(shape))
    t = torch.randn(*shape, generator=g, dtype=torch.float64)
    if dtype == torch.bool:
        return t > 0
    if not dtype.is_floating_point:
        return (t * 10).to(dtype)
    return t.to(dtype).requires_grad_(requires_grad)


def idx(*values):
    return torch.tensor(values, dtype=torch.long)


# ---- advanced indexing --------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_index_single(dtype):
    grad = dtype.is_floating_point
    x = make(5, 4, dtype=dtype, requires_grad=grad)
    check_op(lambda t, i: t[i], x, idx(0, 4, -1, 2, 2), grad=grad)
    check_op(lambda t, i: t[:, i], x, idx(3, -4, 1), grad=grad)


@pytest.mark.parametrize(
    "fn",
    [
        lambda t, i, j: t[i, j],  # adjacent, broadcast index tensors
        lambda t, i, j: t[:, i, j],  # adjacent after a slice: stays in place
        lambda t, i, j: t[i, :, j],  # non-adjacent: batch dims go first
        lambda t, i, j: t[i, 1:3, j],
        lambda t, i, j: t[..., j],
        lambda t, i, j: t[i][:, j],
        lambda t, i, j: t[None, i, None, j],
        lambda t, i, j: t[i, 2],  # integer + tensor: adjacent advanced indices
        lambda t, i, j: t[1, :, j],  # integer and tensor separated by a slice
    ],
)
def test_index_patterns(fn):
    x = make(4, 5, 6, requires_grad=True)
    i = idx([0, 3], [-1, 2])
    j = idx(1, 0)
    check_op(fn, x, i, j, grad=True)


def test_index_bool_mask():
    # Reading x[mask] has a data-dependent shape: the glue turns the mask into long indices.
    x = make(4, 5, requires_grad=True)
    check_op(lambda t: t[t > 0], x, grad=True)
    check_op(lambda t, m: t[m], x, torch.tensor([True, False, True, True]), grad=True)


def test_index_int32_and_noncontiguous():
    x = make(4, 5, requires_grad=True)
    check_op(lambda t, i: t[i], x, torch.tensor([3, 0], dtype=torch.int32), grad=True)
    check_op(lambda t, i: t[i, i], noncontiguous(make(4, 4)), idx(1, 2))
    check_op(lambda t, i: t[i], make(4, 5).t(), idx(0, 4))


def test_index_0d_index_and_empty():
    x = make(4, 5, requires_grad=True)
    check_op(lambda t, i: t[i], x, torch.tensor(2), grad=True)
    check_op(lambda t, i: t[i], x, torch.zeros(0, dtype=torch.long))


# ---- index_put / setitem --------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_index_put(dtype):
    x, v = make(5, 3, dtype=dtype), make(2, 3, dtype=dtype)
    check_op(lambda t, i, val: t.index_put((i,), val), x, idx(4, -5), v)
    if dtype != torch.bool:
        check_op(lambda t, i, val: t.index_put((i,), val, accumulate=True), x, idx(1, 1), v)


def test_index_put_patterns_and_broadcast_values():
    x = make(4, 5, 6)
    i, j = idx([0, 3], [2, 2]), idx(1, 4)
    index_put = torch.ops.aten.index_put.default
    check_op(lambda t, a, b, v: index_put(t, [a, None, b], v, True), x, i, j, make(2, 2, 5))
    check_op(lambda t, a, b, v: index_put(t, [None, a, b], v), x, i, j, make(4, 1, 2))
    check_op(lambda t, a, v: t.index_put((a,), v), x, i, torch.tensor(3.0))


def test_index_put_values_that_do_not_broadcast():
    x, i, v = make(2, 3), idx(0, 1), make(2)
    msg = r"value tensor of shape \[2\] cannot be broadcast to indexing result of shape \[2, 3\]"
    with pytest.raises(RuntimeError, match=msg):
        x.index_put((i,), v)
    with pytest.raises(RuntimeError, match=msg):
        x.to("tpu").index_put((i.to("tpu"),), v.to("tpu"))


def test_setitem_inplace():
    def fn(t, i, v):
        t = t.clone()
        t[i] = v
        t[1, i] = 0.5
        t[:, i] += 1.0
        return t

    check_op(fn, make(4, 4), idx(3, 0), make(4))


def test_setitem_bool_mask():
    # Writing through a boolean mask is static: a select (values broadcast or taken in order).
    def masked(t, m, v):
        t = t.clone()
        t[t > 0] = 2.0
        t[m] = v
        t[:, m[0]] = -1.0
        return t

    m = torch.tensor([[True, False, True, False, False]] * 2 + [[False] * 5] * 2)
    check_op(masked, make(4, 5), m, make(4))
    index_put = torch.ops.aten.index_put.default
    check_op(lambda t, m, v: index_put(t, [m], v, True), make(4, 5), m, make(4))
    check_op(lambda t, m, v: index_put(t, [None, m[0]], v), make(3, 5), m, make(3, 2))


def test_index_put_grad():
    check_op(
        lambda t, i, v: t.index_put((i,), v, accumulate=True),
        make(4, 3, requires_grad=True),
        idx(0, 2),
        make(2, 3, requires_grad=True),
        grad=True,
    )
    check_op(
        lambda t, i, v: t.index_put((i,), v),
        make(4, 3, requires_grad=True),
        idx(3, 1),
        make(2, 3, requires_grad=True),
        grad=True,
    )


# ---- one dimension ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, -1])
def test_index_select(dtype, dim):
    grad = dtype.is_floating_point
    check_op(
        lambda t, i: torch.index_select(t, dim, i),
        make(4, 5, dtype=dtype, requires_grad=grad),
        idx(3, 0, 3),
        grad=grad,
    )


def test_index_select_0d():
    check_op(lambda t, i: torch.index_select(t, 0, i), torch.tensor(2.5), idx(0))
    check_op(lambda t, i: torch.index_select(t, 1, i), make(3, 4), torch.tensor(1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
@pytest.mark.parametrize("dim", [0, 1])
def test_index_add_copy_fill(dtype, dim):
    grad = dtype.is_floating_point
    x = make(4, 5, dtype=dtype, requires_grad=grad)
    i = idx(3, 1)
    src = make(
        *[2 if d == dim else s for d, s in enumerate((4, 5))], dtype=dtype, requires_grad=grad
    )
    check_op(lambda t, ii, s: t.index_add(dim, ii, s), x, i, src, grad=grad)
    check_op(lambda t, ii, s: t.index_add(dim, ii, s, alpha=2), x, idx(1, 1), src, grad=grad)
    check_op(lambda t, ii, s: t.index_copy(dim, ii, s), x, i, src, grad=grad)
    check_op(lambda t, ii: t.index_fill(dim, ii, 3), x, idx(-1, 0), grad=grad)
    check_op(lambda t, ii, v: t.index_fill(dim, ii, v), x, i, torch.tensor(2, dtype=dtype))


def test_index_inplace_forms():
    def fn(t, i, s):
        t = t.clone()
        t.index_add_(0, i, s)
        t.index_fill_(1, i, -1)
        t.index_copy_(0, i.flip(0), s)
        return t

    check_op(fn, make(4, 4), idx(2, 0), make(2, 4))


# ---- gather / scatter ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, -1])
def test_gather(dtype, dim):
    grad = dtype.is_floating_point
    index = torch.tensor([[0, 2, 1], [3, 0, 0]]) % (4 if dim == 0 else 5)
    check_op(
        lambda t, i: torch.gather(t, dim, i),
        make(4, 5, dtype=dtype, requires_grad=grad),
        index,
        grad=grad,
    )


def test_gather_0d_noncontiguous():
    check_op(lambda t, i: torch.gather(t, 0, i), torch.tensor(1.5), torch.tensor(0))
    check_op(
        lambda t, i: torch.gather(t, 1, i), noncontiguous(make(3, 4)), torch.tensor([[1], [0], [3]])
    )


# Scatter targets without duplicates per destination (duplicates are order-dependent).
UNIQUE = torch.tensor([[0, 2, 1], [3, 1, 0]])
DUPS = torch.tensor([[0, 2, 0], [0, 2, 2], [1, 1, 0]])


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter(dtype):
    grad = dtype.is_floating_point
    x, src = (
        make(4, 5, dtype=dtype, requires_grad=grad),
        make(2, 3, dtype=dtype, requires_grad=grad),
    )
    check_op(lambda t, i, s: torch.scatter(t, 1, i, s), x, UNIQUE, src, grad=grad)
    check_op(lambda t, i: torch.scatter(t, 1, i, 1), x, UNIQUE, grad=grad)
    # src larger than index: only src[:2, :3] is read.
    check_op(lambda t, i, s: torch.scatter(t, 1, i, s), x, UNIQUE, make(3, 4, dtype=dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_scatter_add_and_legacy_reduce(dtype):
    grad = dtype.is_floating_point
    x, src = (
        make(3, 4, dtype=dtype, requires_grad=grad),
        make(3, 3, dtype=dtype, requires_grad=grad),
    )
    check_op(lambda t, i, s: torch.scatter_add(t, 0, i, s), x, DUPS, src, grad=grad)
    check_op(lambda t, i, s: torch.scatter(t, 1, i, s, reduce="add"), x, DUPS, src)
    check_op(lambda t, i, s: torch.scatter(t, 1, i, s, reduce="multiply"), x, DUPS, src)
    check_op(lambda t, i: torch.scatter(t, 1, i, 2.0 if grad else 2, reduce="multiply"), x, DUPS)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(dtype, reduce, include_self):
    x, src = make(3, 4, dtype=dtype), make(3, 4, dtype=dtype)
    check_op(
        lambda t, i, s: torch.scatter_reduce(t, 1, i, s, reduce, include_self=include_self),
        x,
        DUPS,
        src,
    )


def test_scatter_reduce_grad_and_bf16():
    check_op(
        lambda t, i, s: torch.scatter_reduce(t, 0, i, s, "sum"),
        make(3, 4, requires_grad=True),
        DUPS,
        make(3, 3, requires_grad=True),
        grad=True,
    )
    check_op(
        lambda t, i, s: torch.scatter_reduce(t, 0, i, s, "amax"),
        make(3, 4, requires_grad=True),
        DUPS,
        make(3, 3, requires_grad=True),
        grad=True,
    )
    check_op(
        lambda t, i, s: torch.scatter_reduce(t, 0, i, s, "mean", include_self=False),
        make(3, 4, dtype=torch.bfloat16),
        DUPS,
        make(3, 4, dtype=torch.bfloat16),
    )


# ---- flat indexing ------------------------------------------------------------------------------


def test_take_put():
    check_op(
        lambda t, i: torch.take(t, i),
        make(3, 4, requires_grad=True),
        torch.tensor([[0, -1], [5, 11]]),
        grad=True,
    )
    check_op(lambda t, i: torch.take(t, i), make(3, 4, dtype=torch.int64).t(), idx(0, 3, 7))
    check_op(lambda t, i, s: t.put(i, s), make(3, 4), idx(0, -1, 5), make(3))
    check_op(lambda t, i, s: t.put(i, s, accumulate=True), make(3, 4), idx(1, 1, 5), make(3))


def test_masked_scatter():
    mask = torch.tensor([[True, False, True], [False, False, True]])
    check_op(lambda t, m, s: t.masked_scatter(m, s), make(2, 3), mask, make(2, 4))
    check_op(
        lambda t, m, s: t.masked_scatter(m, s),
        make(2, 3, dtype=torch.int64),
        mask[0],
        make(6, dtype=torch.int64),
    )
    check_op(
        lambda t, m, s: t.masked_scatter(m, s),
        make(2, 3),
        torch.zeros(2, 3, dtype=torch.bool),
        make(0),
    )


# ---- embedding --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_embedding(dtype):
    w = make(10, 4, dtype=dtype, requires_grad=True)
    ids = torch.tensor([[1, 3, 3], [9, 0, 1]])
    check_op(F.embedding, ids, w, grad=True)
    check_op(lambda i, t: F.embedding(i, t, padding_idx=3), ids, w, grad=True)
    check_op(
        lambda i, t: F.embedding(i, t, padding_idx=-1, scale_grad_by_freq=True), ids, w, grad=True
    )


def test_embedding_int32_indices_0d_and_module():
    w = make(6, 3, requires_grad=True)
    check_op(F.embedding, torch.tensor([5, 0, 5], dtype=torch.int32), w, grad=True)
    check_op(F.embedding, torch.tensor(2), w, grad=True)
    check_op(
        lambda i, t: torch.ops.aten.embedding_dense_backward(t, i, 6, 1, True),
        idx(1, 2, 2, 5),
        make(4, 3),
    )


def test_setitem_bool_mask_does_not_sync():
    import torch_tpu

    x = torch.randn(4, 5, device="tpu")
    m = (torch.randn(4, 5) > 0).to("tpu")
    x[m] = 1.0
    before = torch_tpu.metrics.counters()["d2h_transfers"]
    x[m] = 2.0
    x[m] = x[0, 0]
    assert torch_tpu.metrics.counters()["d2h_transfers"] == before


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
def test_index_reduce(reduce, include_self, dtype):
    grad = dtype == torch.float32 and reduce in ("prod", "mean")
    x = make(5, 3, dtype=dtype, requires_grad=grad)
    src = make(4, 3, dtype=dtype, requires_grad=grad)
    index = idx(0, 4, 0, 2)  # row 0 twice, rows 1 and 3 untouched
    check_op(
        lambda t, i, s: t.index_reduce(0, i, s, reduce, include_self=include_self),
        x,
        index,
        src,
        grad=grad,
    )
    check_op(
        lambda t, i, s: t.index_reduce(1, i, s, reduce, include_self=include_self),
        noncontiguous(make(3, 5, dtype=dtype)),
        index,
        make(3, 4, dtype=dtype),
    )


def test_masked_select_0d_out_and_empty_gather_take():
    check_op(torch.masked_select, torch.tensor(3.0), torch.tensor(True))
    check_op(torch.masked_select, torch.tensor(3.0), torch.tensor(False))
    x, m = make(4, 3), make(4, 3, dtype=torch.bool)
    out = torch.empty(0, device="tpu")
    torch.masked_select(x.to("tpu"), m.to("tpu"), out=out)
    assert torch.equal(out.cpu(), torch.masked_select(x, m))
    # Ops with only empty results compute nothing (XLA rejects some of these shapes).
    check_op(lambda t, i: torch.gather(t, 0, i), make(5), torch.zeros(2, 0, dtype=torch.long))
    check_op(torch.take, torch.zeros(0), torch.zeros(0, dtype=torch.long))


@pytest.mark.parametrize("size", [0, 2, 3, 6])
def test_nonzero_static_truncates_and_fills(size):
    x = torch.tensor([[0, 1, 0], [2, 0, 3]])
    check_op(lambda t: torch.nonzero_static(t, size=size, fill_value=-7), x)
    check_op(lambda t: torch.nonzero_static(t, size=size), noncontiguous(x.float()))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_repeat_interleave_tensor_repeats(dtype):
    check_op(torch.repeat_interleave, torch.tensor([2, 0, 3, 1], dtype=dtype))
    check_op(torch.repeat_interleave, torch.zeros(0, dtype=dtype))
    check_op(
        lambda r: torch.repeat_interleave(r, output_size=6), torch.tensor([2, 0, 3, 1], dtype=dtype)
    )
    x = make(3, 4, requires_grad=True)
    check_op(
        lambda t, r: torch.repeat_interleave(t, r, dim=1), x, torch.tensor([1, 0, 2, 3]), grad=True
    )
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        torch.repeat_interleave(torch.tensor([2, -1], dtype=dtype, device="tpu"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_unique_and_unique_consecutive(dtype):
    x = torch.tensor([[3, 1, 3, 0], [2, 2, 1, 1]]).to(dtype)
    for fn in (
        lambda t: torch.unique(t),
        lambda t: torch.unique(t, return_inverse=True, return_counts=True),
        lambda t: torch.unique_consecutive(t, return_inverse=True, return_counts=True),
        lambda t: torch.unique_consecutive(t),
    ):
        check_op(fn, x)
        check_op(fn, noncontiguous(x))
        check_op(fn, x[:0])
    check_op(
        lambda t: torch.unique(t, return_counts=True),
        torch.tensor([float("nan"), 1.0, float("nan"), 1.0]),
    )
    rows = torch.tensor([[1, 1, 2, 2, 1], [0, 0, 3, 3, 0], [0, 0, 3, 3, 0]]).to(dtype)
    for dim in (0, 1, -1):
        check_op(
            lambda t: torch.unique_consecutive(t, return_inverse=True, return_counts=True, dim=dim),
            rows,
        )
