"""What the model-family examples share: their flags, the training loop with a progress bar and
the closing summary. `python -m torch_tpu.bench` runs the same workloads.

An example defines `workload(args) -> Workload` (its model, synthetic batches and loss) and calls
`main(workload, __doc__)`.
"""

import argparse
import contextlib
import dataclasses
import time
from collections.abc import Callable

import torch

MODES = ("strict", "fused", "compile")
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


@dataclasses.dataclass
class Workload:
    """One training step of an example, independent of device and mode."""

    model: torch.nn.Module
    batch: Callable[[int], tuple]  # step index -> the step's inputs, on the CPU
    loss: Callable[..., torch.Tensor]  # (model, *inputs) -> scalar loss
    items: int  # tokens, samples or images per step
    unit: str  # what `items` counts
    lr: float = 1e-3


@dataclasses.dataclass
class Result:
    losses: list
    step_seconds: list  # wall time of each step, the first one including compilation
    device: str
    compiles: list  # programs compiled during each step (tpu only; torch_tpu's metrics)

    def steps_per_second(self, skip=2):
        timed = self.step_seconds[skip:] or self.step_seconds[-1:]
        return len(timed) / sum(timed)


def parser(description, steps):
    p = argparse.ArgumentParser(description=description.strip().splitlines()[0])
    p.add_argument(
        "--mode", choices=MODES, default="fused", help="eager strict, eager fused, or torch.compile"
    )
    p.add_argument("--steps", type=int, default=steps)
    p.add_argument(
        "--dtype", choices=tuple(DTYPES), default="f32", help="bf16: autocast to bfloat16"
    )
    p.add_argument("--device", default="tpu", help="tpu, or cpu for native PyTorch")
    p.add_argument("--seed", type=int, default=0)
    return p


def eager_mode(mode, device):
    """The torch_tpu eager mode an example's `--mode` runs in (training, and what follows it:
    generation, sampling, evaluation); nothing on other devices."""
    if device.type != "tpu":
        return contextlib.nullcontext()
    import torch_tpu

    # A compiled step's graphs are programs of their own; the optimizer around them is fused.
    return torch_tpu.eager_mode("strict" if mode == "strict" else "fused")


def train(
    workload, mode="fused", steps=10, dtype="f32", device="tpu", progress=True, backend="tpu"
):
    """Runs `steps` training steps of `workload`; returns the losses and per-step times."""
    device = torch.device(device)
    model = workload.model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=workload.lr)
    loss_of = torch.compile(workload.loss, backend=backend) if mode == "compile" else workload.loss
    autocast = (
        torch.autocast(device.type, dtype=torch.bfloat16)
        if dtype == "bf16"
        else contextlib.nullcontext()
    )
    losses, seconds, compiles = [], [], []
    counters = _compile_counter(device)
    bar = _progress(steps, progress)
    for step in range(steps):
        inputs = [t.to(device) for t in workload.batch(step)]
        start = time.perf_counter()
        with eager_mode(mode, device):
            with autocast:
                loss = loss_of(model, *inputs)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            losses.append(loss.item())  # waits for the step
        seconds.append(time.perf_counter() - start)
        compiles.append(counters())
        bar.set_postfix(loss=f"{losses[-1]:.4f}")
        bar.update()
    bar.close()
    return Result(losses, seconds, str(loss.device), compiles)


def _compile_counter(device):
    """A function returning the programs compiled since its previous call."""
    if device.type != "tpu":
        return lambda: 0
    import torch_tpu

    last = [torch_tpu.metrics.counters()["compiles"]]

    def since_last():
        now = torch_tpu.metrics.counters()["compiles"]
        delta, last[0] = now - last[0], now
        return int(delta)

    return since_last


def _progress(steps, enabled):
    from tqdm import tqdm

    return tqdm(total=steps, desc="train", unit="step", disable=not enabled, dynamic_ncols=True)


def summary(name, workload, result, args):
    rate = result.steps_per_second()
    device = result.device
    if device.startswith("tpu"):
        device += f" ({torch.tpu.get_device_name()})"
    print(
        f"{name}: loss {result.losses[0]:.4f} -> {result.losses[-1]:.4f} over {len(result.losses)} steps "
        f"({args.mode}, {args.dtype}); {rate:.2f} steps/s, {rate * workload.items:.0f} {workload.unit}/s "
        f"after the first steps; first step {result.step_seconds[0]:.1f} s; device {device}"
    )


def main(name, make_workload, description, steps=20, add_flags=None):
    """Parses the flags (the common ones, and the example's own through `add_flags(parser)`),
    trains the example's workload, prints the summary; returns (args, workload, result) for what
    the example does next (generation, sampling)."""
    p = parser(description, steps)
    if add_flags:
        add_flags(p)
    args = p.parse_args()
    torch.manual_seed(args.seed)
    workload = make_workload(args)
    result = train(workload, args.mode, args.steps, args.dtype, args.device)
    summary(name, workload, result, args)
    return args, workload, result
