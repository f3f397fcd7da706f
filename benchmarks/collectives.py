"""Collectives of the `tpu_dist` backend (issue 18): bus bandwidth of all_reduce and
all_gather_into_tensor on tpu tensors against torch's Gloo on CPU tensors in the same run, where
the staging costs of tpu_dist are broken down, and DDP scaling of a small GPT training step.

    python benchmarks/collectives.py [--nproc 2] [--mode fused]

The script launches torchrun itself (loopback, a free port, GLOO_SOCKET_IFNAME=lo) and then runs
as its worker. Bandwidths follow NCCL-tests: algbw = bytes / time, busbw = algbw * 2(n-1)/n for
all_reduce and algbw * (n-1)/n for all_gather, where `bytes` is the tensor that all_reduce
reduces and the gathered output of all_gather. Each collective is timed alone: a barrier, the
clock, the collective, torch.tpu.synchronize(), the clock; the time of an iteration is the
slowest rank's, and a size's time is the median over iterations. Gloo and tpu_dist iterations
alternate, so load from other processes on this shared machine hits both alike.
"""

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.distributed as dist
from common import free_port

MiB = 1 << 20
RESULT = "RESULT "  # prefix of the lines a worker hands back to the launcher


def sizes(lo, hi):
    s = lo
    while s <= hi:
        yield s
        s *= 4


def human(nbytes):
    for unit, scale in (("MiB", MiB), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.4g} {unit}"
    return f"{nbytes} B"


# ---------------------------------------------------------------------------------------------
# worker (under torchrun)


def tpu_sync():
    torch.tpu.synchronize()


def nosync():
    pass


def slowest(seconds):
    """Per-iteration times, each the slowest rank's."""
    t = torch.tensor(seconds, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.tolist()


def clock(fn, sync):
    """Seconds of fn() on this rank, started together with the other ranks."""
    dist.barrier()
    t0 = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - t0


def median_of(fn, sync, warmup, iters, before=nosync):
    times = []
    for i in range(warmup + iters):
        before()
        t = clock(fn, sync)
        if i >= warmup:
            times.append(t)
    return statistics.median(slowest(times))


def emit(kind, **fields):
    if dist.get_rank() == 0:
        print(RESULT + json.dumps(dict(kind=kind, **fields)), flush=True)


def worker(args):
    import torch_tpu

    torch_tpu.set_eager_mode(args.mode)
    # One group serves both: CPU tensors go to Gloo, tpu tensors to tpu_dist.
    dist.init_process_group("cpu:gloo,tpu:tpu_dist")
    parts = args.parts.split(",")
    if "collectives" in parts and dist.get_world_size() > 1:
        for op in ("all_reduce", "all_gather"):
            for nbytes in sizes(args.min_bytes, args.max_bytes):
                emit("collective", **measure(args, op, nbytes))
    if "ddp" in parts:
        ddp(args)
    emit("done")
    dist.destroy_process_group()


def iterations(args, nbytes):
    """Timed iterations for a size: args.iters up to 4 MiB, fewer above, at least args.min_iters."""
    return max(args.min_iters, min(args.iters, int(args.iters * 4 * MiB / max(nbytes, 1))))


def buffers(op, numel, device):
    """(tensor,) for all_reduce; (output, input) for all_gather_into_tensor, where numel is the
    gathered output and each rank contributes 1/n of it."""
    n, rank = dist.get_world_size(), dist.get_rank()
    if op == "all_reduce":
        return (torch.full((numel,), 1.0 / n, device=device),)
    return torch.empty(numel, device=device), torch.full((numel // n,), float(rank), device=device)


def measure(args, op, nbytes):
    """Median time of `op` on nbytes with Gloo on CPU tensors and tpu_dist on tpu tensors,
    iterations of the two alternating."""
    n = dist.get_world_size()
    requested, numel = nbytes, nbytes // 4
    if op == "all_gather":  # n equal parts (3 ranks: the size rounded down)
        numel -= numel % n
        nbytes = numel * 4
    bufs = {dev: buffers(op, numel, dev) for dev in ("cpu", "tpu")}
    tpu_sync()
    run = {
        dev: (lambda b=b: dist.all_reduce(b[0]))
        if op == "all_reduce"
        else (lambda b=b: dist.all_gather_into_tensor(*b))
        for dev, b in bufs.items()
    }
    sync = {"cpu": nosync, "tpu": tpu_sync}
    times = {"cpu": [], "tpu": []}
    for i in range(args.warmup + iterations(args, nbytes)):
        for dev in ("cpu", "tpu"):
            if op == "all_reduce":
                bufs[dev][0].fill_(1.0 / n)  # keeps the sums bounded; outside the clock
            sync[dev]()
            t = clock(run[dev], sync[dev])
            if i >= args.warmup:
                times[dev].append(t)
    median = {dev: statistics.median(slowest(ts)) for dev, ts in times.items()}
    row = dict(op=op, bytes=nbytes, n=n, gloo_s=median["cpu"], tpu_s=median["tpu"])
    if args.breakdown and requested >= args.breakdown_from:
        row["parts"] = breakdown(args, op, bufs["tpu"])
    return row


def breakdown(args, op, tpu_bufs):
    """Times, each alone, the two parts of a tpu_dist collective that are not host staging: the
    description exchange before every collective (collective_check.cpp: a Gloo all_gather of
    5 + 2n int64) and the Gloo collective on CPU tensors of the same size. What the measured
    tpu_dist time adds to their sum is the staging (device-to-host copy into a pooled buffer, the
    write-back that adopts it) plus the fused-mode sync."""
    n = dist.get_world_size()
    desc = torch.zeros(5 + 2 * n, dtype=torch.long)
    desc_out = torch.empty(n * desc.numel(), dtype=torch.long)
    result, src = tpu_bufs[0], tpu_bufs[-1]
    host_in = src.cpu()
    if op == "all_reduce":
        collective = (lambda: dist.all_reduce(host_in), lambda: host_in.fill_(1.0 / n))
    else:
        host_out = torch.empty(result.numel())
        collective = (lambda: dist.all_gather_into_tensor(host_out, host_in), nosync)
    steps = {
        "describe": (lambda: dist.all_gather_into_tensor(desc_out, desc), nosync, nosync),
        "gloo": (collective[0], nosync, collective[1]),
    }
    return {
        name: median_of(fn, sync, args.warmup, args.min_iters, before)
        for name, (fn, sync, before) in steps.items()
    }


def ddp(args):
    """Steps/s of a small-GPT AdamW training step (tests/models.py GPT, 4x128, per-rank batch
    args.batch x 64) under DDP; with one process also without DDP, the scaling baseline."""
    import common  # noqa: F401  (puts tests/ on the path, for tests/models.py)
    from models import GPT
    from torch.nn.parallel import DistributedDataParallel as DDP
    from train_step import make_step

    g = torch.Generator().manual_seed(dist.get_rank())
    idx = torch.randint(0, 256, (args.batch, 65), generator=g)
    batch = idx[:, :-1], idx[:, 1:]

    def rate(wrap):
        torch.manual_seed(0)
        step = make_step(wrap(GPT().to("tpu")), batch, "tpu")
        for _ in range(args.ddp_warmup):
            step()
        tpu_sync()
        dist.barrier()
        t0, cpu0 = time.perf_counter(), time.process_time()
        for _ in range(args.ddp_steps):
            step()
        tpu_sync()
        # CPU seconds per wall second of this process (all its threads): how many of the
        # machine's cores one rank keeps busy, which bounds what several ranks can gain.
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        t = torch.tensor([wall, cpu / wall], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return dict(steps_per_s=args.ddp_steps / t[0].item(), cores_busy=t[1].item())

    n = dist.get_world_size()
    if n == 1:
        emit("ddp", n=n, wrapped=False, **rate(lambda m: m))
    emit("ddp", n=n, wrapped=True, **rate(lambda m: DDP(m)))
    gc.collect()  # drops the DDP reducers before the process group is destroyed


# ---------------------------------------------------------------------------------------------
# launcher


def torchrun(nproc, worker_args):
    """Runs this script as torchrun's worker; returns the RESULT records of rank 0 and the exit
    status. A worker that fails before its last record ends the benchmark with its output."""
    command = [
        sys.executable, "-m", "torch.distributed.run",
        f"--nproc-per-node={nproc}", "--master-addr=127.0.0.1", f"--master-port={free_port()}",
        os.path.abspath(__file__), "--worker", *worker_args,
    ]  # fmt: skip
    # OMP_NUM_THREADS=1 for every run (torchrun sets it only for several processes), so the
    # 1-process baseline uses the same ATen threading as the ranks it is compared with.
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    output = result.stdout + result.stderr
    records = [
        json.loads(line[len(RESULT) :])
        for line in result.stdout.splitlines()
        if line.startswith(RESULT)
    ]
    if result.returncode != 0 and not any(r["kind"] == "done" for r in records):
        sys.exit(f"torchrun failed ({result.returncode}):\n{output[-8000:]}")
    if result.returncode != 0:
        tail = [line for line in output.splitlines() if "terminate" in line or "exitcode" in line]
        print(
            f"  (note: torchrun --nproc-per-node={nproc} exited with {result.returncode} after "
            f"all results were in: {'; '.join(tail[:2])})"
        )
    return records


def print_collectives(records, target):
    print(
        f"{'op':>10} {'size':>9} | {'gloo us':>9} {'busbw GB/s':>10} | "
        f"{'tpu_dist us':>11} {'busbw GB/s':>10} | {'tpu/gloo':>8}"
    )
    for r in records:
        n = r["n"]
        factor = 2 * (n - 1) / n if r["op"] == "all_reduce" else (n - 1) / n
        bus = {k: r["bytes"] / r[k] * factor / 1e9 for k in ("gloo_s", "tpu_s")}
        ratio = bus["tpu_s"] / bus["gloo_s"]
        flag = "" if r["bytes"] < MiB or ratio >= target else "  < target"
        print(
            f"{r['op']:>10} {human(r['bytes']):>9} | {r['gloo_s'] * 1e6:9.0f} {bus['gloo_s']:10.3f} | "
            f"{r['tpu_s'] * 1e6:11.0f} {bus['tpu_s']:10.3f} | {ratio:7.2f}x{flag}"
        )
    parts = [r for r in records if "parts" in r]
    if parts:
        print(
            "\ntpu_dist time split (us): description exchange and Gloo timed alone, staging = the rest"
        )
        print(
            f"{'op':>10} {'size':>9} | {'describe':>9} {'gloo':>9} {'staging':>9} | {'measured':>8}"
        )
        for r in parts:
            describe, gloo = r["parts"]["describe"], r["parts"]["gloo"]
            staging = r["tpu_s"] - describe - gloo
            print(
                f"{r['op']:>10} {human(r['bytes']):>9} | {describe * 1e6:9.0f} {gloo * 1e6:9.0f} "
                f"{staging * 1e6:9.0f} | {r['tpu_s'] * 1e6:8.0f}"
            )


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--mode", default="fused", choices=("strict", "fused"), help="eager mode")
    p.add_argument("--parts", default="collectives,ddp")
    p.add_argument("--min-bytes", type=int, default=4 << 10)
    p.add_argument("--max-bytes", type=int, default=64 * MiB)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--iters", type=int, default=50, help="timed iterations of sizes up to 4 MiB")
    p.add_argument("--min-iters", type=int, default=15, help="timed iterations of larger sizes")
    p.add_argument("--no-breakdown", dest="breakdown", action="store_false")
    p.add_argument("--breakdown-from", type=int, default=MiB)
    p.add_argument("--batch", type=int, default=8, help="per-rank batch of the DDP step")
    p.add_argument("--ddp-warmup", type=int, default=5)
    p.add_argument("--ddp-steps", type=int, default=100)
    p.add_argument("--target", type=float, default=0.8)
    args = p.parse_args()
    if args.worker:
        return worker(args)

    print(
        f"# collectives ({os.cpu_count()} cores, torch {torch.__version__}, {args.mode} mode, "
        f"load average {os.getloadavg()[0]:.2f} at start)"
    )
    # The worker gets its options spelled out: torchrun's parser, which sees them too, would take
    # an abbreviation such as --nproc for its own --nproc-per-node.
    passthrough = [
        f"--{name.replace('_', '-')}={value}"
        for name, value in vars(args).items()
        if name not in ("worker", "nproc", "breakdown")
    ] + ([] if args.breakdown else ["--no-breakdown"])
    parts = args.parts.split(",")
    t0 = time.perf_counter()
    ddp_records = []
    records = torchrun(args.nproc, passthrough)
    if "collectives" in parts:
        print(f"\n{args.nproc} processes, float32, median of timed iterations, slowest rank:")
        print_collectives([r for r in records if r["kind"] == "collective"], args.target)
    ddp_records += [r for r in records if r["kind"] == "ddp"]
    if "ddp" in parts:
        single = torchrun(1, [*passthrough, "--parts=ddp"])
        ddp_records += [r for r in single if r["kind"] == "ddp"]
        rate = {(r["n"], r["wrapped"]): r for r in ddp_records}
        print(f"\nDDP, GPT 4x128, per-rank batch {args.batch}x64, AdamW, {args.mode} mode:")
        for (n, wrapped), label in (
            ((1, False), "1 process, no DDP"),
            ((1, True), "1 process, DDP"),
            ((args.nproc, True), f"{args.nproc} processes, DDP"),
        ):
            r = rate[(n, wrapped)]
            print(
                f"  {label:>20}: {r['steps_per_s']:6.2f} steps/s per rank, "
                f"{r['cores_busy']:.2f} cores busy per rank"
            )
        base, many = rate[(1, False)], rate[(args.nproc, True)]
        # With c cores and one process keeping b of them busy, nproc ranks can at best reach
        # c / (nproc * b) of linear scaling (when that is below 1).
        bound = min(1.0, os.cpu_count() / (args.nproc * base["cores_busy"]))
        print(
            f"  scaling efficiency throughput({args.nproc}) / ({args.nproc} x throughput(1)) = "
            f"{many['steps_per_s'] / base['steps_per_s']:.2f}; CPU bound on this machine "
            f"{os.cpu_count()} cores / ({args.nproc} x {base['cores_busy']:.2f}) = {bound:.2f}"
        )
    print(
        f"\n# total {time.perf_counter() - t0:.0f} s, load average {os.getloadavg()[0]:.2f} at end"
    )


if __name__ == "__main__":
    main()
