"""torchrun worker: the functional collectives (torch.ops._c10d_functional, used by DTensor,
FSDP2 and torch.compile) on tpu equal the same functions on CPU tensors over Gloo, in strict and
fused eager mode and inside torch.compile(backend="tpu") graphs."""

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from common import assert_same, check, finish

import torch_tpu

dist.init_process_group("cpu:gloo,tpu:tpu_dist")
rank, size = dist.get_rank(), dist.get_world_size()
group = dist.group.WORLD


def chain(x):
    """Computation between collectives, so a compiled graph has work on both sides of each."""
    y = funcol.all_reduce(x * 2, "sum", group)
    z = funcol.all_gather_tensor(y + 1, 0, group)
    w = funcol.reduce_scatter_tensor(z.sin(), "sum", 0, group)
    v = funcol.all_to_all_single(w * 3, None, None, group)
    u = funcol.broadcast(v - 1, 1, group)
    m = funcol.all_reduce(u, "max", group)
    return torch.ops._c10d_functional.wait_tensor(m).cos() + u


def inputs():
    g = torch.Generator().manual_seed(rank)
    return torch.randn(size * 2, 3, generator=g)


expected = chain(inputs())

for mode in ("strict", "fused"):

    @check(f"functional collectives, eager {mode}")
    def _():
        with torch_tpu.eager_mode(mode):
            assert_same(chain(inputs().to("tpu")), expected, False, mode)


@check("functional collectives inside torch.compile(backend='tpu')")
def _():
    compiled = torch.compile(chain, backend="tpu")
    assert_same(compiled(inputs().to("tpu")), expected, False, "compiled")
    # The graph is cut at the collectives: the pieces between them replay on later calls.
    before = torch_tpu.metrics.counters()["graph_replays"]
    assert_same(compiled(inputs().to("tpu")), expected, False, "compiled, second call")
    assert torch_tpu.metrics.counters()["graph_replays"] - before >= 5, "pieces not replayed"


@check("functional collectives with autograd (all_reduce's backward)")
def _():
    x = inputs().requires_grad_()
    (funcol.all_reduce(x * x, "sum", group).sum()).backward()
    t = inputs().to("tpu").requires_grad_()
    (funcol.all_reduce(t * t, "sum", group).sum()).backward()
    assert_same(t.grad, x.grad, False, "grad")


finish()
