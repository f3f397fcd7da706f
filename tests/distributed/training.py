"""torchrun worker: 5 AdamW steps of a small GPT trained with DDP / FSDP2 / tensor parallel /
FSDP x TP equal single-device training on the full batch (losses and final parameters).

Environment: PARALLEL (comma list of ddp, fsdp, fsdp_no_reshard, fsdp_bf16, tp, fsdp_tp),
TORCH_TPU_EAGER_MODE (strict / fused), COMPILE=1 to train the model under torch.compile."""

import os
import sys

import torch
import torch.distributed as dist
from common import check, finish

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from models import GPT  # noqa: E402

STEPS, BATCH, CONTEXT, VOCAB = 5, 8, 16, 64
COMPILE = os.environ.get("COMPILE") == "1"

dist.init_process_group("tpu_dist")
rank, size = dist.get_rank(), dist.get_world_size()


def make_model():
    torch.manual_seed(0)
    return GPT(vocab=VOCAB, width=32, layers=2, heads=2, context=CONTEXT)


def batches():
    g = torch.Generator().manual_seed(1)
    for _ in range(STEPS):
        idx = torch.randint(0, VOCAB, (BATCH, CONTEXT + 1), generator=g)
        yield idx[:, :-1], idx[:, 1:]


def adamw(parameters, foreach=None):
    # eps well above float32 noise: the key bias's gradient is zero up to rounding (softmax is
    # shift-invariant), and with the default 1e-8 Adam would turn that noise into lr-sized steps
    # whose sign depends on summation order.
    return torch.optim.AdamW(parameters, lr=1e-2, eps=1e-6, foreach=foreach)


def train(model, shard, foreach=None):
    """Trains `model` (already on tpu) for STEPS steps; `shard` selects this rank's part of each
    batch. Returns the losses (averaged over the ranks that share a batch) and the model."""
    optimizer = adamw(model.parameters(), foreach)
    run = torch.compile(model, backend="tpu") if COMPILE else model
    losses = []
    for idx, targets in batches():
        idx, targets = shard(idx), shard(targets)
        loss = run(idx.to("tpu"), targets.to("tpu"))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.detach())
    return [loss.item() for loss in losses], model


REFERENCE = None


def reference():
    """Single-device training on the full batch (each rank computes it itself)."""
    global REFERENCE
    if REFERENCE is None:
        losses, model = train(make_model().to("tpu"), lambda x: x)
        REFERENCE = losses, {k: v.cpu() for k, v in model.state_dict().items()}
    return REFERENCE


def compare(losses, state, tol=2e-4, loss_tol=None):
    ref_losses, ref_state = reference()
    torch.testing.assert_close(
        torch.tensor(losses), torch.tensor(ref_losses), rtol=loss_tol or tol, atol=loss_tol or tol
    )
    for name, value in state.items():
        torch.testing.assert_close(
            value, ref_state[name], rtol=tol, atol=tol, msg=lambda m, name=name: f"{name}: {m}"
        )


def mean_over_ranks(losses, group=None):
    t = torch.tensor(losses, device="tpu")
    dist.all_reduce(t, op=dist.ReduceOp.AVG, group=group)
    return t.cpu().tolist()


def batch_shard(x):
    return x.chunk(size)[rank]


def full_state(model):
    from torch.distributed.tensor import DTensor

    return {
        k: (v.full_tensor() if isinstance(v, DTensor) else v).cpu()
        for k, v in model.state_dict().items()
    }


PARALLEL = os.environ.get("PARALLEL", "ddp").split(",")

if "ddp" in PARALLEL:

    @check("DDP")
    def _():
        from torch.nn.parallel import DistributedDataParallel as DDP

        # Several buckets in eager; compiled, Dynamo's DDPOptimizer splits the graph at buckets
        # and wants the first one no larger than the rest (the 1 MB default first bucket).
        model = DDP(make_model().to("tpu"), bucket_cap_mb=1 if COMPILE else 0.05)
        losses, model = train(model, batch_shard)
        compare(mean_over_ranks(losses), {k: v.cpu() for k, v in model.module.state_dict().items()})

    @check("DDP gradient_as_bucket_view, no_sync")
    def _():
        from torch.nn.parallel import DistributedDataParallel as DDP

        model = DDP(make_model().to("tpu"), gradient_as_bucket_view=True)
        optimizer = adamw(model.parameters())
        losses = []
        for idx, targets in batches():
            # Two micro-batches per step: the first accumulates locally (no_sync).
            halves = list(zip(batch_shard(idx).chunk(2), batch_shard(targets).chunk(2)))
            with model.no_sync():
                first = model(halves[0][0].to("tpu"), halves[0][1].to("tpu")) / 2
                first.backward()
            second = model(halves[1][0].to("tpu"), halves[1][1].to("tpu")) / 2
            second.backward()
            optimizer.step()
            optimizer.zero_grad()
            losses.append((first + second).item())
        compare(mean_over_ranks(losses), {k: v.cpu() for k, v in model.module.state_dict().items()})


for variant in [p for p in PARALLEL if p.startswith("fsdp") and p != "fsdp_tp"]:

    @check(f"FSDP2 {variant}")
    def _():
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        kwargs = {"reshard_after_forward": variant != "fsdp_no_reshard"}
        tol = 2e-4
        if variant == "fsdp_bf16":
            kwargs["mp_policy"] = MixedPrecisionPolicy(
                param_dtype=torch.bfloat16, reduce_dtype=torch.float32
            )
            tol = 5e-2
        model = make_model().to("tpu")
        for block in model.blocks:
            fully_shard(block, **kwargs)
        fully_shard(model, **kwargs)
        losses, model = train(model, batch_shard)
        compare(mean_over_ranks(losses), full_state(model), tol=tol)


if "tp" in PARALLEL:

    @check("tensor parallel (Colwise/Rowwise MLPs, loss on the full batch)")
    def _():
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor.parallel import (
            ColwiseParallel,
            RowwiseParallel,
            parallelize_module,
        )

        mesh = init_device_mesh("tpu", (size,))
        model = make_model().to("tpu")
        for block in model.blocks:
            parallelize_module(block.mlp, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
        # Only the MLPs are DTensors: foreach kernels cannot mix them with plain tensors.
        losses, model = train(model, lambda x: x, foreach=False)
        compare(losses, full_state(model))


if "fsdp_tp" in PARALLEL:

    @check("FSDP x TP on a 2-D mesh")
    def _():
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard
        from torch.distributed.tensor.parallel import (
            ColwiseParallel,
            RowwiseParallel,
            parallelize_module,
        )

        mesh = init_device_mesh("tpu", (size // 2, 2), mesh_dim_names=("dp", "tp"))
        model = make_model().to("tpu")
        for block in model.blocks:
            parallelize_module(
                block.mlp, mesh["tp"], {"0": ColwiseParallel(), "2": RowwiseParallel()}
            )
            fully_shard(block, mesh=mesh["dp"])
        fully_shard(model, mesh=mesh["dp"])
        dp_rank, dp_size = mesh["dp"].get_local_rank(), mesh["dp"].size()
        losses, model = train(model, lambda x: x.chunk(dp_size)[dp_rank], foreach=False)
        compare(mean_over_ranks(losses, mesh["dp"].get_group()), full_state(model))


finish()
