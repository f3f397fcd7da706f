"""torchrun worker: DTensor on a tpu DeviceMesh — distribute_tensor, redistribute between Shard,
Replicate and Partial, SequenceParallel and loss_parallel — equals the same computation on CPU."""

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from common import assert_same, check, finish
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    SequenceParallel,
    loss_parallel,
    parallelize_module,
)

dist.init_process_group("tpu_dist")
rank, size = dist.get_rank(), dist.get_world_size()
mesh = init_device_mesh("tpu", (size,))


def full(shape, seed=0, dtype=torch.float32):
    """The same tensor on every rank."""
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


for dtype in (torch.float32, torch.bfloat16, torch.int64):

    @check(f"distribute_tensor and redistribute, {dtype}")
    def _():
        x = full((4 * size, 2 * size), 1, dtype)
        d = distribute_tensor(x.to("tpu"), mesh, [Shard(0)])
        assert_same(d.to_local(), x.chunk(size)[rank], True, "Shard(0) local")
        assert_same(d.full_tensor(), x, True, "full_tensor")
        assert_same(d.redistribute(mesh, [Replicate()]).to_local(), x, True, "-> Replicate")
        s1 = d.redistribute(mesh, [Shard(1)])
        assert_same(s1.to_local(), x.tensor_split(size, dim=1)[rank], True, "Shard(0) -> Shard(1)")
        r = distribute_tensor(x.to("tpu"), mesh, [Replicate()])
        assert_same(
            r.redistribute(mesh, [Shard(1)]).to_local(),
            x.tensor_split(size, dim=1)[rank],
            True,
            "Replicate -> Shard(1)",
        )
        # Partial: every rank holds a summand; rank r's is x * (r + 1).
        parts = [x * (r + 1) for r in range(size)]
        p = DTensor.from_local(parts[rank].to("tpu"), mesh, [Partial()])
        total = sum(parts)
        assert_same(
            p.redistribute(mesh, [Replicate()]).to_local(), total, False, "Partial -> Replicate"
        )
        assert_same(
            p.redistribute(mesh, [Shard(0)]).to_local(),
            total.chunk(size)[rank],
            False,
            "Partial -> Shard(0)",
        )


@check("DTensor ops: matmul of Shard(1) x Shard(0) gives Partial, sums to the CPU product")
def _():
    a, b = full((5, 4 * size), 2), full((4 * size, 3), 3)
    da = distribute_tensor(a.to("tpu"), mesh, [Shard(1)])
    db = distribute_tensor(b.to("tpu"), mesh, [Shard(0)])
    out = da @ db
    assert out.placements[0].is_partial(), out.placements
    assert_same(out.full_tensor(), a @ b, False, "matmul")


@check("SequenceParallel LayerNorm, forward and backward")
def _():
    torch.manual_seed(0)
    ln = nn.LayerNorm(8)
    with torch.no_grad():
        ln.weight.copy_(full((8,), 4))
        ln.bias.copy_(full((8,), 5))
    x = full((2, 4 * size, 8), 6)
    ref = ln(x.requires_grad_())
    ref.sum().backward()
    model = parallelize_module(nn.LayerNorm(8).to("tpu"), mesh, SequenceParallel())
    with torch.no_grad():
        model.weight.copy_(distribute_tensor(ln.weight.detach().to("tpu"), mesh, [Replicate()]))
        model.bias.copy_(distribute_tensor(ln.bias.detach().to("tpu"), mesh, [Replicate()]))
    local = x.detach().chunk(size, dim=1)[rank].to("tpu").requires_grad_()
    out = model(local)  # input sharded on the sequence dimension
    out_full = out.full_tensor() if isinstance(out, DTensor) else out
    expected = (
        ref.detach() if out_full.shape == ref.shape else ref.detach().chunk(size, dim=1)[rank]
    )
    assert_same(out_full, expected, False, "sequence parallel forward")
    out.sum().backward() if not isinstance(out, DTensor) else out.to_local().sum().backward()
    assert_same(local.grad, x.grad.chunk(size, dim=1)[rank], False, "input grad")
    assert_same(model.weight.grad.full_tensor(), ln.weight.grad, False, "weight grad")


@check("loss_parallel: cross entropy on vocabulary-sharded logits, forward and backward")
def _():
    head = nn.Linear(8, 4 * size, bias=False)
    with torch.no_grad():
        head.weight.copy_(full((4 * size, 8), 7))
    x = full((6, 8), 8)
    targets = torch.randint(0, 4 * size, (6,), generator=torch.Generator().manual_seed(9))
    ref_loss = F.cross_entropy(head(x), targets)
    ref_loss.backward()
    tp_head = nn.Linear(8, 4 * size, bias=False).to("tpu")
    with torch.no_grad():
        tp_head.weight.copy_(head.weight.detach())
    tp_head = parallelize_module(tp_head, mesh, ColwiseParallel(use_local_output=False))
    logits = tp_head(x.to("tpu"))
    assert logits.placements == (Shard(-1),) or logits.placements == (Shard(1),), logits.placements
    with loss_parallel():
        loss = F.cross_entropy(logits, targets.to("tpu"))
        loss.backward()
    assert_same(
        loss.full_tensor() if isinstance(loss, DTensor) else loss, ref_loss.detach(), False, "loss"
    )
    assert_same(tp_head.weight.grad.full_tensor(), head.weight.grad, False, "weight grad")


finish()
