"""Bag and segment reductions and counting ops: embedding_bag (with max_norm renorm),
segment_reduce, bincount and ctc_loss, compared with CPU, gradients included."""

import pytest
import torch
import torch.nn.functional as F
from op_check import check_op, noncontiguous

# Every op test runs in each eager mode (strict, debug, fused).
pytestmark = pytest.mark.usefixtures("each_mode")


def weights(rows, dim, dtype=torch.float32):
    g = torch.Generator().manual_seed(rows * 31 + dim)
    return torch.randn(rows, dim, generator=g).to(dtype).requires_grad_()


INDICES = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 0, 0])
OFFSETS = torch.tensor([0, 4, 4, 7])  # bag 1 is empty


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_embedding_bag_modes(mode, padding_idx, include_last_offset):
    offsets = torch.cat([OFFSETS, torch.tensor([10])]) if include_last_offset else OFFSETS
    check_op(
        lambda w, i, o: F.embedding_bag(
            i, w, o, mode=mode, padding_idx=padding_idx, include_last_offset=include_last_offset
        ),
        weights(10, 3),
        INDICES,
        offsets,
        grad=True,
    )


def test_embedding_bag_many_bags_with_empty_and_trailing_empty_bags():
    # Offsets counted per position then summed: repeated offsets (empty bags) and offsets equal
    # to the number of indices (empty bags at the end) must land like CPU's.
    g = torch.Generator().manual_seed(5)
    indices = torch.randint(0, 50, (3000,), generator=g)
    offsets = torch.sort(torch.randint(0, 3000, (999,), generator=g)).values
    offsets = torch.cat([torch.tensor([0, 0]), offsets, torch.tensor([3000, 3000])])
    check_op(
        lambda w, i, o: F.embedding_bag(i, w, o, mode="sum"),
        weights(50, 8),
        indices,
        offsets,
        grad=True,
    )


def test_embedding_bag_per_sample_weights_and_2d_input():
    psw = torch.rand(10, generator=torch.Generator().manual_seed(3)).requires_grad_()
    check_op(
        lambda w, i, o, p: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=p),
        weights(10, 4),
        INDICES,
        OFFSETS,
        psw,
        grad=True,
    )
    check_op(
        lambda w, i: F.embedding_bag(i, w, mode="mean"),
        noncontiguous(weights(10, 4)),
        INDICES.view(2, 5),
        grad=True,
    )


# scale_grad_by_freq is not compared: CPU's dense backward divides rows by counts that do not
# match the indices' frequencies (e.g. a twice-used row is not divided at all), so there is no
# consistent reference; the lowering divides each row by its index's frequency.
def test_embedding_bag_bf16():
    check_op(
        lambda w, i, o: F.embedding_bag(i, w, o, mode="sum"),
        weights(10, 3, torch.bfloat16),
        INDICES,
        OFFSETS,
    )


def test_embedding_max_norm_renorms_referenced_rows():
    def fn(w, i):
        w = w.detach().clone() * 3  # embedding_renorm_ works in place on the weight
        out = F.embedding(i, w, max_norm=1.5)
        return out, w

    check_op(fn, weights(10, 3), INDICES)


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("initial", [None, 2.0])
def test_segment_reduce_lengths(reduce, initial):
    g = torch.Generator().manual_seed(5)
    data = torch.randn(8, 3, generator=g)
    data[4, 0] = 0.0  # a zero for prod's gradient
    data.requires_grad_()
    lengths = torch.tensor([3, 0, 2, 3])
    kw = {} if initial is None else {"initial": initial}
    check_op(
        lambda d, ln: torch.segment_reduce(d, reduce, lengths=ln, **kw),
        data,
        lengths,
        grad=initial is not None or reduce != "mean",
    )


@pytest.mark.parametrize("reduce", ["sum", "max", "mean"])
def test_segment_reduce_offsets_axis(reduce):
    g = torch.Generator().manual_seed(6)
    data = torch.randn(2, 6, 2, generator=g).requires_grad_()
    offsets = torch.tensor([[0, 2, 5, 6], [0, 1, 1, 6]])
    check_op(
        lambda d, o: torch.segment_reduce(d, reduce, offsets=o, axis=1, initial=0.5),
        data,
        offsets,
        grad=True,
    )


def test_bincount():
    x = torch.tensor([1, 3, 3, 0, 7])
    check_op(torch.bincount, x)
    check_op(lambda a: torch.bincount(a, minlength=10), x)
    check_op(lambda a, w: torch.bincount(a, w), x, torch.rand(5))
    check_op(lambda a, w: torch.bincount(a, w), x, torch.rand(5, dtype=torch.float64))
    check_op(lambda a: torch.bincount(a, minlength=3), torch.tensor([], dtype=torch.long))
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.bincount(torch.tensor([-1, 2]).to("tpu"))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("flat_targets", [False, True])
def test_ctc_loss(reduction, flat_targets):
    g = torch.Generator().manual_seed(7)
    log_probs = torch.randn(12, 3, 6, generator=g).log_softmax(2).detach().requires_grad_()
    targets = torch.randint(1, 6, (3, 4), generator=g)
    input_lengths, target_lengths = [12, 10, 7], [4, 2, 0]
    if flat_targets:
        targets = torch.cat([targets[i, : target_lengths[i]] for i in range(3)])
    check_op(
        lambda lp, t: F.ctc_loss(lp, t, input_lengths, target_lengths, reduction=reduction),
        log_probs,
        targets,
        grad=True,
        atol=1e-4,
        rtol=1e-4,
        grad_atol=1e-4,
        grad_rtol=1e-4,
    )


def test_ctc_loss_zero_infinity():
    # The second target cannot fit its input (3 labels with a repeat need 4 frames).
    g = torch.Generator().manual_seed(8)
    log_probs = torch.randn(6, 2, 4, generator=g).log_softmax(2).detach().requires_grad_()
    targets = torch.tensor([[1, 2, 3], [2, 2, 3]])
    check_op(
        lambda lp, t: F.ctc_loss(lp, t, [6, 3], [3, 3], reduction="sum", zero_infinity=True),
        log_probs,
        targets,
        grad=True,
        atol=1e-4,
        rtol=1e-4,
        grad_atol=1e-4,
        grad_rtol=1e-4,
    )
