"""torchrun worker: bad input and failures raise clear errors on every rank instead of hanging,
and nothing is written into a tensor whose collective failed."""

import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from common import FAILURES, check

dist.init_process_group("tpu_dist", timeout=timedelta(seconds=20))
rank, size = dist.get_rank(), dist.get_world_size()


def expect_error(fn, *fragments):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        text = str(e)
        for f in fragments:
            assert f in text, f"{f!r} not in the error: {text}"
        return
    raise AssertionError("no error raised")


@check("sizes that disagree")
def _():
    t = torch.arange(4 + rank, dtype=torch.float32, device="tpu")
    before = t.cpu()
    expect_error(lambda: dist.all_reduce(t), "all_reduce", "elements", "rank 1")
    assert torch.equal(t.cpu(), before), "the failed collective wrote into its tensor"


@check("dtypes that disagree")
def _():
    t = torch.ones(4, dtype=torch.float32 if rank == 0 else torch.int64, device="tpu")
    expect_error(lambda: dist.broadcast(t, src=0), "broadcast", "Float", "Long")


@check("different collectives")
def _():
    t = torch.ones(4, device="tpu")
    if rank == 0:
        expect_error(lambda: dist.all_reduce(t), "different collectives", "all_reduce", "broadcast")
    else:
        expect_error(
            lambda: dist.broadcast(t, src=0), "different collectives", "all_reduce", "broadcast"
        )


@check("split sizes that disagree")
def _():
    out = torch.empty(4, device="tpu")
    inp = torch.ones(4, device="tpu")
    send = [2, 2] if rank == 0 else [1, 3]
    expect_error(lambda: dist.all_to_all_single(out, inp, [2, 2], send), "split sizes disagree")


@check("a CPU tensor in a tpu_dist-only group")
def _():
    expect_error(lambda: dist.all_reduce(torch.ones(2)), "cpu")


@check("the group still works after the errors")
def _():
    t = torch.ones(3, device="tpu")
    dist.all_reduce(t)
    assert torch.equal(t.cpu(), torch.full((3,), float(size)))


@check("destroy_process_group and a new group in the same process")
def _():
    dist.destroy_process_group()
    dist.init_process_group("tpu_dist", timeout=timedelta(seconds=5))
    t = torch.ones(2, device="tpu") * rank
    dist.all_reduce(t)
    assert torch.equal(t.cpu(), torch.full((2,), float(sum(range(size)))))


# Last: the highest rank dies; the others must raise (naming the collective) well within the
# group's 5 s timeout plus slack, not hang.
dist.barrier()
if rank == size - 1:
    print(
        f"[rank {rank}] {'FAILED ' + str(FAILURES) if FAILURES else 'all checks passed'}",
        flush=True,
    )
    os._exit(1 if FAILURES else 0)
start = time.monotonic()
t = torch.ones(2, device="tpu")
before = t.cpu()


@check("a rank that died")
def _():
    expect_error(lambda: dist.all_reduce(t), "tpu_dist: all_reduce failed")
    assert time.monotonic() - start < 30, "took longer than the timeout"
    assert torch.equal(t.cpu(), before), "the failed collective wrote into its tensor"


if FAILURES:
    sys.exit(1)
print(f"[rank {rank}] all checks passed")
os._exit(0)  # the group cannot be torn down cleanly without its dead member
