"""Shape-changing copies (cat, stack, flip, roll, repeat, tril/triu, constant_pad_nd,
diag_embed, narrow_copy, split_with_sizes_copy) compared with CPU, gradients included."""

import pytest
import torch
import torch.nn.functional as F
from op_check import assert_same, check_op, noncontiguous

# Every op test runs in each eager mode (strict, debug, fused).
pytestmark = pytest.mark.usefixtures("each_mode")

DTYPES = [torch.float32, torch.bfloat16, torch.float64, torch.int64, torch.bool]


def make(*shape, dtype=torch.float32, requires_grad=False):
    g = torch.Generator().manual_seed(sum(shape) + len(shape))
    t = torch.randn(*shape, generator=g, dtype=torch.float64)
    if dtype == torch.bool:
        return t > 0
    if not dtype.is_floating_point:
        return (t * 10).to(dtype)
    return t.to(dtype).requires_grad_(requires_grad)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat(dtype, dim):
    grad = dtype.is_floating_point
    xs = [make(2, 3, dtype=dtype, requires_grad=grad), make(2, 3, dtype=dtype, requires_grad=grad)]
    check_op(lambda a, b: torch.cat([a, b, a], dim), *xs, grad=grad)


def test_cat_mixed_dtypes_empty_and_noncontiguous():
    check_op(lambda a, b: torch.cat([a, b]), make(2, 3), make(1, 3, dtype=torch.int64))
    check_op(
        lambda a, b: torch.cat([a, b], 1),
        make(2, 3, requires_grad=True),
        torch.zeros(2, 0),
        grad=True,
    )
    # Legacy: 1-d empty tensors are skipped whatever the other ranks.
    check_op(
        lambda a, b: torch.cat([a, b, a]), make(2, 3, requires_grad=True), torch.zeros(0), grad=True
    )
    check_op(lambda a, b: torch.cat([a, b], 1), noncontiguous(make(3, 4)), make(4, 3).t())
    check_op(lambda a: torch.cat([a, a]), make(0, 3))


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_stack(dim):
    check_op(
        lambda a, b: torch.stack([a, b], dim),
        make(2, 3, requires_grad=True),
        make(2, 3, requires_grad=True),
        grad=True,
    )


def test_stack_0d_and_hstack_vstack():
    check_op(lambda a, b: torch.stack([a, b]), torch.tensor(1.0), torch.tensor(2.0))
    check_op(lambda a, b: torch.hstack([a, b]), make(2, 3), make(2, 1))
    check_op(lambda a, b: torch.vstack([a, b]), make(3), make(2, 3))


@pytest.mark.parametrize("dtype", DTYPES)
def test_flip(dtype):
    grad = dtype.is_floating_point
    check_op(
        lambda x: torch.flip(x, [0, -1]), make(3, 4, 2, dtype=dtype, requires_grad=grad), grad=grad
    )
    check_op(lambda x: torch.flip(x, [1]), noncontiguous(make(3, 4, dtype=dtype)))
    check_op(lambda x: torch.flip(x, []), make(3, dtype=dtype))
    check_op(torch.fliplr, make(3, 4, dtype=dtype))


@pytest.mark.parametrize(
    "shifts,dims", [(1, 0), (-2, 1), ((1, 5), (0, 1)), (3, None), (7, -1), (0, 0)]
)
def test_roll(shifts, dims):
    check_op(lambda x: torch.roll(x, shifts, dims), make(3, 4, requires_grad=True), grad=True)


def test_roll_int_and_empty():
    check_op(lambda x: torch.roll(x, 2), make(5, dtype=torch.int64))
    check_op(lambda x: torch.roll(x, 2, 0), torch.zeros(0, 3))


@pytest.mark.parametrize("reps", [(2, 1), (1, 3), (2, 2, 2), (3,), (2, 0)])
def test_repeat(reps):
    x = make(3, requires_grad=True) if len(reps) == 1 else make(2, 3, requires_grad=True)
    check_op(lambda t: t.repeat(*reps), x, grad=True)


def test_repeat_0d_and_bool():
    check_op(lambda t: t.repeat(2, 3), torch.tensor(1.5))
    check_op(lambda t: t.repeat(2, 1), make(2, 3, dtype=torch.bool))


@pytest.mark.parametrize("diagonal", [0, 1, -1, 5, -5])
@pytest.mark.parametrize("fn", [torch.tril, torch.triu])
def test_tril_triu(fn, diagonal):
    check_op(lambda x: fn(x, diagonal), make(4, 5, requires_grad=True), grad=True)
    check_op(lambda x: fn(x, diagonal), make(2, 3, 3, dtype=torch.int64))
    check_op(lambda x: fn(x, diagonal), make(3, 3, dtype=torch.bool))


@pytest.mark.parametrize("pad", [(1, 2), (1, 0, 2, 3), (-1, 2), (0, 0, -1, -1), (1, 1, 1, 1, 1, 1)])
def test_constant_pad_nd(pad):
    check_op(lambda x: F.pad(x, pad, value=1.5), make(2, 3, 4, requires_grad=True), grad=True)


def test_constant_pad_int_bool():
    check_op(lambda x: F.pad(x, (1, 1), value=7), make(2, 3, dtype=torch.int64))
    check_op(lambda x: torch.constant_pad_nd(x, (1, 1), 1), make(2, 3, dtype=torch.bool))
    check_op(lambda x: F.pad(x, (2, 1)), make(2, 3, dtype=torch.bfloat16))


@pytest.mark.parametrize("offset,dim1,dim2", [(0, -2, -1), (1, 0, 2), (-2, 1, 0), (2, -1, -3)])
def test_diag_embed(offset, dim1, dim2):
    check_op(
        lambda x: torch.diag_embed(x, offset, dim1, dim2), make(2, 3, requires_grad=True), grad=True
    )


def test_narrow_copy_split_with_sizes_copy():
    check_op(lambda x: x.narrow_copy(1, 1, 2), make(3, 4))
    check_op(lambda x: torch.narrow_copy(x, 0, -2, 2), make(3, 4))
    check_op(lambda x: torch.split_with_sizes_copy(x, [1, 3, 0], 1), make(3, 4))
    check_op(lambda x: torch.split_with_sizes_copy(x, [2, 1]), make(3, 4, dtype=torch.int64))


def test_split_chunk_are_views():
    check_op(
        lambda x: [t * 1 for t in torch.split(x, 2, 1)], make(3, 5, requires_grad=True), grad=True
    )
    check_op(lambda x: torch.cat(torch.chunk(x, 3), 1), make(6, 2, requires_grad=True), grad=True)


def test_out_list_ops_write_every_piece():
    # split_with_sizes_copy / unbind_copy write an out= list and return nothing.
    x = torch.randn(6, 4)
    outs = [torch.empty(0, device="tpu") for _ in range(3)]
    assert torch.split_with_sizes_copy(x.to("tpu"), [1, 2, 3], out=outs) is None
    for o, e in zip(outs, torch.split_with_sizes(x, [1, 2, 3])):
        assert_same(o, e)
    outs = [torch.empty(0, device="tpu") for _ in range(4)]
    torch.unbind_copy(x.to("tpu"), 1, out=outs)
    for o, e in zip(outs, torch.unbind(x, 1)):
        assert_same(o, e)
    with pytest.raises(RuntimeError, match="expected an out= argument of size 2, got 1"):
        torch.split_with_sizes_copy(x.to("tpu"), [2, 4], out=[torch.empty(0, device="tpu")])


def test_sgn_gradient_uses_zero_tensors():
    # sgn's backward builds its zero gradient with _efficientzerotensor.
    check_op(torch.sgn, torch.randn(5, dtype=torch.float64).requires_grad_(), grad=True)
