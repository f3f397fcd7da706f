"""One measured run of an example workload in one variant, in its own process (so import time
and the disk cache's cold and warm starts are real): prints one JSON line."""

import argparse
import importlib
import json
import os
import sys
import time

# variant -> (device, mode, torch.compile backend)
VARIANTS = {
    "tpu strict": ("tpu", "strict", "tpu"),
    "tpu fused": ("tpu", "fused", "tpu"),
    "tpu compile": ("tpu", "compile", "tpu"),
    "cpu eager": ("cpu", "strict", None),
    "cpu inductor": ("cpu", "compile", "inductor"),
}


def load_example(examples_dir, model):
    sys.path.insert(0, examples_dir)
    return importlib.import_module(model)


def example_args(module, model, steps, dtype, device, mode):
    from common import parser

    p = parser(module.__doc__ or model, steps)
    if hasattr(module, "add_flags"):
        module.add_flags(p)
    return p.parse_args(
        ["--steps", str(steps), "--dtype", dtype, "--device", device, "--mode", mode]
    )


def flops_per_step(workload):
    """Model FLOPs of one training step (forward and backward) by torch.utils.flop_counter, on
    the CPU: matmuls, convolutions and attention, as MFU counts them."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        workload.loss(workload.model, *workload.batch(0)).backward()
    return counter.get_total_flops()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("variant", choices=tuple(VARIANTS))
    p.add_argument("--examples", required=True)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--dtype", default="f32")
    # time.time() when the parent started this process: import time includes the interpreter's
    # start and `import torch` (which imports torch_tpu, and with it this module's package).
    p.add_argument("--spawned-at", type=float, required=True)
    a = p.parse_args()
    device, mode, backend = VARIANTS[a.variant]

    import torch

    if device == "tpu":
        torch.ones(1, device="tpu").cpu()  # the plugin is loaded on first use
    imported = time.time() - a.spawned_at

    module = load_example(a.examples, a.model)
    from common import train

    torch.manual_seed(0)
    start = time.perf_counter()
    workload = module.workload(example_args(module, a.model, a.steps, a.dtype, device, mode))
    setup = time.perf_counter() - start
    if device == "tpu":
        torch.tpu.reset_peak_memory_stats()
    result = train(
        workload, mode, a.steps, a.dtype, device, progress=False, backend=backend or "tpu"
    )
    record = {
        "variant": a.variant,
        "import_seconds": imported,
        "setup_seconds": setup,
        "step_seconds": result.step_seconds,
        "compiles": result.compiles,
        "losses": result.losses,
        "items_per_step": workload.items,
        "unit": workload.unit,
        "peak_memory_bytes": torch.tpu.max_memory_allocated() if device == "tpu" else None,
        "cache_dir": os.environ.get("TORCH_TPU_CACHE_DIR"),
    }
    print("BENCH " + json.dumps(record))


if __name__ == "__main__":
    main()
