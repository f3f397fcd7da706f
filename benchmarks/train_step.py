"""Training-step throughput of the small GPT and an MLP: strict eager, fused eager and native
PyTorch CPU eager, in one process, after warm-up. Also reports the compiles of 100 steady-state
fused steps (target: 0).

    python benchmarks/train_step.py
"""

import argparse

import torch
from common import machine, time_steps
from models import GPT, MLP

import torch_tpu


def make_step(model, batch, device):
    model = model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = (t.to(device) for t in batch)

    def step():
        loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()  # the loop reads its loss every step, as training loops do

    return step


class MLPLoss(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = MLP(256, 512, 10)

    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(self.net(x), y)


def workloads():
    torch.manual_seed(0)
    idx = torch.randint(0, 256, (8, 64))
    yield "gpt (4x128, batch 8x64)", GPT, (idx, torch.roll(idx, -1, 1))
    yield (
        "mlp (256-512-512-10, batch 64)",
        MLPLoss,
        (torch.randn(64, 256), torch.randint(0, 10, (64,))),
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--steady", type=int, default=100)
    args = p.parse_args()
    print(f"# train_step ({machine()})")
    for name, ctor, batch in workloads():
        torch.manual_seed(0)
        init = ctor().state_dict()
        rates = {}
        for mode in ("cpu", "strict", "fused"):
            model = ctor()
            model.load_state_dict(init)
            device = "cpu" if mode == "cpu" else "tpu"
            with torch_tpu.eager_mode("strict" if mode == "cpu" else mode):
                rates[mode] = time_steps(
                    make_step(model, batch, device), device, args.warmup, args.steps
                )
        model = ctor()
        model.load_state_dict(init)
        with torch_tpu.eager_mode("fused"):
            step = make_step(model, batch, "tpu")
            for _ in range(args.warmup):
                step()
            before = torch_tpu.metrics.counters()["compiles"]
            for _ in range(args.steady):
                step()
            steady_compiles = torch_tpu.metrics.counters()["compiles"] - before
        print(
            f"{name}: steps/s cpu-eager {rates['cpu']:.2f}, strict {rates['strict']:.2f}, "
            f"fused {rates['fused']:.2f}; fused/strict {rates['fused'] / rates['strict']:.2f}x, "
            f"fused/cpu-eager {rates['fused'] / rates['cpu']:.2f}x; "
            f"compiles in {args.steady} steady fused steps: {steady_compiles}"
        )


if __name__ == "__main__":
    main()
