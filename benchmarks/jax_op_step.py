"""A fused training step whose RMSNorm is the JAX op of examples/jax_ops/rms_norm.py, beside
the same step with RMSNorm written in torch ops (the same float32 math, and
torch.nn.functional.rms_norm). Steps per second after warm-up, variants interleaved in rounds
in one process; the ratio is JAX op / torch ops (above 1: the JAX op is faster).

    python benchmarks/jax_op_step.py [--modes fused,compiled] [--rounds 5]
"""

import argparse
import os
import statistics
import sys

import torch
from common import machine, time_steps

import torch_tpu

sys.path.insert(
    0,
    os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "jax_ops"
    ),
)
from rms_norm import rms_norm  # noqa: E402

WIDTH, HIDDEN, LAYERS, BATCH, TOKENS = 256, 1024, 4, 8, 128
EPS = 1e-6


def torch_ops_rms_norm(x, weight, eps):
    x32 = x.float()
    return (x32 * torch.rsqrt((x32 * x32).mean(-1, keepdim=True) + eps) * weight.float()).to(
        x.dtype
    )


def functional_rms_norm(x, weight, eps):
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps)


NORMS = {"jax op": rms_norm, "torch ops": torch_ops_rms_norm, "F.rms_norm": functional_rms_norm}


class Block(torch.nn.Module):
    def __init__(self, norm):
        super().__init__()
        self.norm = norm
        self.weight = torch.nn.Parameter(torch.ones(WIDTH))
        self.up = torch.nn.Linear(WIDTH, HIDDEN)
        self.down = torch.nn.Linear(HIDDEN, WIDTH)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x, self.weight, EPS))))


class Net(torch.nn.Module):
    def __init__(self, norm):
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block(norm) for _ in range(LAYERS))

    def forward(self, x, target):
        for block in self.blocks:
            x = block(x)
        return torch.nn.functional.mse_loss(x, target)


def make_step(norm, mode):
    torch.manual_seed(0)
    model = Net(norm).to("tpu")
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(BATCH, TOKENS, WIDTH, device="tpu")
    target = torch.randn(BATCH, TOKENS, WIDTH, device="tpu")
    run = torch.compile(model, backend="tpu", fullgraph=True) if mode == "compiled" else model

    def step():
        with torch_tpu.eager_mode("fused"):
            loss = run(x, target)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

    return step


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="fused,compiled")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    print(
        f"# jax_op_step ({machine()}): {LAYERS} blocks of RMSNorm + MLP {WIDTH}->{HIDDEN}, "
        f"batch {BATCH}x{TOKENS}, float32, SGD; {args.rounds} rounds of {args.steps} steps"
    )
    for mode in args.modes.split(","):
        steps = {name: make_step(norm, mode) for name, norm in NORMS.items()}
        losses = {name: step().item() for name, step in steps.items()}  # compiles
        rates = {name: [] for name in steps}
        for _ in range(args.rounds):
            for name, step in steps.items():
                rates[name].append(time_steps(step, "tpu", warmup=2, steps=args.steps))
        median = {name: statistics.median(r) for name, r in rates.items()}
        for name in steps:
            print(
                f"{mode:>8} {name:>10}: {median[name]:7.2f} steps/s  "
                f"(jax op / this: {median['jax op'] / median[name]:.2f})  first loss {losses[name]:.6f}"
            )


if __name__ == "__main__":
    main()
