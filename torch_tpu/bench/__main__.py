"""python -m torch_tpu.bench MODEL [MODEL ...]: each example family (examples/MODEL.py) trained in
every variant — tpu strict, fused and compiled, native PyTorch CPU eager and inductor — each in
fresh processes: a cold one (empty compile cache) and a warm one (the cache it filled).

Reported per variant: import and device start-up, workload set-up, first step cold and warm,
steady-state steps/s and tokens (samples, images) per second, peak device memory, and MFU = model
FLOP/s (torch.utils.flop_counter) / the device's peak (the vendor figure on TPUs and GPUs; on
XLA:CPU the measured FLOP/s of a large matmul, stated as such). Prints a table and writes
DIR/bench_MODEL.json and DIR/bench_MODEL.png (step time over steps, compiling steps marked).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from torch_tpu.bench import report
from torch_tpu.bench.run import VARIANTS, example_args, flops_per_step, load_example

FAMILIES = ("llama", "qwen", "resnet", "dlrm", "mingpt", "unet")
REPO_EXAMPLES = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples"
)


def child(model, variant, args, cache_dir):
    env = dict(
        os.environ,
        TORCH_TPU_CACHE_DIR=cache_dir,
        TORCHINDUCTOR_CACHE_DIR=os.path.join(cache_dir, "inductor"),
    )
    env.pop("TORCH_TPU_EAGER_MODE", None)
    command = [
        sys.executable,
        "-m",
        "torch_tpu.bench.run",
        model,
        variant,
        "--examples",
        args.examples,
    ]
    command += [
        "--steps",
        str(args.steps),
        "--dtype",
        args.dtype,
        "--spawned-at",
        repr(time.time()),
    ]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=args.timeout)
    for line in proc.stdout.splitlines():
        if line.startswith("BENCH "):
            return json.loads(line[len("BENCH ") :])
    tail = "\n".join((proc.stderr or proc.stdout).splitlines()[-15:])
    return {"variant": variant, "error": f"exit {proc.returncode}: {tail}"}


def measure(model, args, peak):
    import torch

    module = load_example(args.examples, model)
    torch.manual_seed(0)
    flops = flops_per_step(
        module.workload(example_args(module, model, args.steps, args.dtype, "cpu", "strict"))
    )
    record = {
        "model": model,
        "dtype": args.dtype,
        "steps": args.steps,
        "flops_per_step": flops,
        "peak_flops": peak[0],
        "peak_source": peak[1],
        "machine": report.machine(),
        "date": time.strftime("%Y-%m-%d"),
        "variants": {},
    }
    for variant in args.variants:
        with tempfile.TemporaryDirectory(prefix="torch_tpu_bench_") as cache:
            print(f"  {model}: {variant} (cold)", file=sys.stderr, flush=True)
            cold = child(model, variant, args, cache)
            print(f"  {model}: {variant} (warm)", file=sys.stderr, flush=True)
            warm = child(model, variant, args, cache)
        record["variants"][variant] = report.summarize(cold, warm, flops, peak[0])
    return record


def main():
    p = argparse.ArgumentParser(
        prog="python -m torch_tpu.bench", description=__doc__.splitlines()[0]
    )
    p.add_argument("models", nargs="+", choices=FAMILIES + ("all",))
    p.add_argument(
        "--variants", default=",".join(VARIANTS), help="comma-separated, of: " + ", ".join(VARIANTS)
    )
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--dtype", choices=("f32", "bf16"), default="f32")
    p.add_argument(
        "--out", default="bench_results", help="directory for the JSON records and plots"
    )
    p.add_argument(
        "--examples", default=REPO_EXAMPLES, help="the examples directory (the repository's)"
    )
    p.add_argument("--timeout", type=int, default=900, help="seconds per measured process")
    args = p.parse_args()
    args.variants = [v.strip() for v in args.variants.split(",")]
    unknown = [v for v in args.variants if v not in VARIANTS]
    if unknown:
        p.error(f"unknown variants {unknown}; known: {list(VARIANTS)}")
    models = FAMILIES if "all" in args.models else args.models
    os.makedirs(args.out, exist_ok=True)

    import torch

    from torch_tpu.bench.peak import device_peak

    torch.ones(1, device="tpu").cpu()
    peak = device_peak()
    print(
        f"# torch_tpu.bench ({report.machine()}), {args.dtype}, {args.steps} steps; peak {peak[0] / 1e9:.1f} GFLOP/s ({peak[1]})"
    )
    for model in models:
        record = measure(model, args, peak)
        path = os.path.join(args.out, f"bench_{model}.json")
        with open(path, "w") as f:
            json.dump(record, f, indent=1)
        print(report.table(record))
        plot = report.plot(record, os.path.join(args.out, f"bench_{model}.png"))
        print(
            f"  written: {path}" + (f", {plot}" if plot else " (no plot: pip install matplotlib)")
        )


if __name__ == "__main__":
    main()
