"""torchrun worker: torch.distributed.checkpoint saves and loads a sharded (FSDP2) state dict of
tpu DTensors, including loading shards saved by 2 ranks into 4.

PHASE=save writes CKPT_DIR from an FSDP2 model after one training step (and checks a round trip in
the same world); PHASE=load loads CKPT_DIR into a freshly initialized model in the current world and
checks every parameter and optimizer state equals the saved one (saved in full as reference.pt by
rank 0 at save time)."""

import os
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from common import assert_same, check, finish
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from models import GPT  # noqa: E402

dist.init_process_group("tpu_dist")
rank, size = dist.get_rank(), dist.get_world_size()
directory = os.environ["CKPT_DIR"]


def sharded_model(seed):
    torch.manual_seed(seed)
    model = GPT(vocab=64, width=32, layers=2, heads=2, context=16).to("tpu")
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    return model, torch.optim.AdamW(model.parameters(), lr=1e-2)


def full(state):
    """Every tensor of a (nested) state dict as a full CPU tensor."""
    if isinstance(state, dict):
        return {k: full(v) for k, v in state.items()}
    if isinstance(state, list):
        return [full(v) for v in state]
    if isinstance(state, DTensor):
        return state.full_tensor().cpu()
    if isinstance(state, torch.Tensor):
        return state.cpu()
    return state


def assert_state_equal(actual, expected, path=""):
    if isinstance(expected, dict):
        assert actual.keys() == expected.keys(), (path, actual.keys(), expected.keys())
        for k in expected:
            assert_state_equal(actual[k], expected[k], f"{path}.{k}")
    elif isinstance(expected, list):
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_state_equal(a, e, f"{path}[{i}]")
    elif isinstance(expected, torch.Tensor):
        a = actual.full_tensor() if isinstance(actual, DTensor) else actual
        if a.device.type == "cpu":
            a = a.to("tpu")  # a step counter kept on the CPU
        assert_same(a, expected, True, path)
    else:
        assert actual == expected, (path, actual, expected)


def state(model, optimizer):
    model_state, optimizer_state = get_state_dict(model, optimizer)
    return {"model": model_state, "optim": optimizer_state}


if os.environ["PHASE"] == "save":

    @check(f"save a sharded state dict from {size} ranks, load it back")
    def _():
        model, optimizer = sharded_model(0)
        idx = torch.randint(0, 64, (4, 17), generator=torch.Generator().manual_seed(1)).to("tpu")
        model(idx[:, :-1], idx[:, 1:].contiguous()).backward()
        optimizer.step()
        saved = state(model, optimizer)
        dcp.save(saved, checkpoint_id=directory)
        reference = full(saved)
        if rank == 0:
            torch.save(reference, os.path.join(directory, "reference.pt"))
        fresh, fresh_optimizer = sharded_model(123)
        loaded = state(fresh, fresh_optimizer)
        dcp.load(loaded, checkpoint_id=directory)
        set_state_dict(
            fresh,
            fresh_optimizer,
            model_state_dict=loaded["model"],
            optim_state_dict=loaded["optim"],
        )
        assert_state_equal(state(fresh, fresh_optimizer), reference)

else:

    @check(f"load a checkpoint into {size} ranks")
    def _():
        reference = torch.load(os.path.join(directory, "reference.pt"))
        model, optimizer = sharded_model(456)
        # The optimizer state exists only after a step; take one so there is something to load into.
        idx = torch.randint(0, 64, (4, 17), generator=torch.Generator().manual_seed(2)).to("tpu")
        model(idx[:, :-1], idx[:, 1:].contiguous()).backward()
        optimizer.step()
        optimizer.zero_grad()
        loaded = state(model, optimizer)
        dcp.load(loaded, checkpoint_id=directory)
        set_state_dict(
            model, optimizer, model_state_dict=loaded["model"], optim_state_dict=loaded["optim"]
        )
        assert_state_equal(state(model, optimizer), reference)


finish()
