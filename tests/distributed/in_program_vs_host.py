"""torchrun worker (every process with TORCH_TPU_CPU_DEVICE_COUNT = world size): the in-program
collectives, run by rank 0 over its local devices on every rank's input, equal what the
host-staged tpu_dist collectives give each rank."""

import torch
import torch.distributed as dist
from common import assert_same, check, finish

from torch_tpu.distributed import in_program

R = dist.ReduceOp
dist.init_process_group("tpu_dist")
rank, size = dist.get_rank(), dist.get_world_size()
assert torch.tpu.device_count() == size, "run with TORCH_TPU_CPU_DEVICE_COUNT = world size"


def make(r, dtype, shape=(4 * 2, 3)):
    g = torch.Generator().manual_seed(100 + r)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(-9, 10, shape, generator=g).to(dtype)


def gathered(result):
    """Every rank's host-staged result, on rank 0 (as CPU tensors)."""
    out = [torch.empty_like(result) for _ in range(size)] if rank == 0 else None
    dist.gather(result, out, dst=0)
    return [o.cpu() for o in out] if rank == 0 else None


def compare(host_results, in_program_results, exact, what):
    if rank == 0:
        for r, (h, p) in enumerate(zip(host_results, in_program_results, strict=True)):
            assert p.device == torch.device("tpu", r), p.device
            assert_same(p, h, exact, f"{what}, replica {r}")


def on_devices(dtype, shape=(4 * 2, 3)):
    return [make(r, dtype, shape).to(f"tpu:{r}") for r in range(size)]


for dtype in (torch.float32, torch.bfloat16, torch.int32):
    ops = [R.SUM, R.MAX, R.MIN, R.PRODUCT] + ([R.AVG] if dtype.is_floating_point else [R.BXOR])
    for op in ops:

        @check(f"all_reduce {dtype} {op}")
        def _():
            t = make(rank, dtype).to("tpu")
            dist.all_reduce(t, op=op)
            host = gathered(t)
            if rank == 0:
                xs = on_devices(dtype)
                in_program.all_reduce(xs, op)
            compare(host, xs if rank == 0 else None, not dtype.is_floating_point, "all_reduce")

        @check(f"reduce_scatter_tensor {dtype} {op}")
        def _():
            out = torch.empty(make(0, dtype).shape[0] // size, 3, dtype=dtype, device="tpu")
            dist.reduce_scatter_tensor(out, make(rank, dtype).to("tpu"), op=op)
            host = gathered(out)
            if rank == 0:
                xs = on_devices(dtype)
                outs = [torch.empty_like(out, device=f"tpu:{r}") for r in range(size)]
                in_program.reduce_scatter_tensor(outs, xs, op)
            compare(
                host, outs if rank == 0 else None, not dtype.is_floating_point, "reduce_scatter"
            )

    @check(f"all_gather_into_tensor and all_to_all_single {dtype}")
    def _():
        out = torch.empty(size * 8, 3, dtype=dtype, device="tpu")
        dist.all_gather_into_tensor(out, make(rank, dtype).to("tpu"))
        host = gathered(out)
        a2a = torch.empty(8, 3, dtype=dtype, device="tpu")
        dist.all_to_all_single(a2a, make(rank, dtype).to("tpu"))
        host_a2a = gathered(a2a)
        if rank == 0:
            outs = [torch.empty(size * 8, 3, dtype=dtype, device=f"tpu:{r}") for r in range(size)]
            in_program.all_gather_into_tensor(outs, on_devices(dtype))
            compare(host, outs, True, "all_gather_into_tensor")
            outs = [torch.empty(8, 3, dtype=dtype, device=f"tpu:{r}") for r in range(size)]
            in_program.all_to_all_single(outs, on_devices(dtype))
            compare(host_a2a, outs, True, "all_to_all_single")


finish()
