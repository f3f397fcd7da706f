"""A small mixture-of-experts language model whose RMSNorm and expert matmuls are JAX ops,
trained on tpu in eager (strict), fused and compiled mode; each run's losses are compared with
the same model built from torch ops on the CPU.

    python examples/jax_ops/moe_demo.py [--steps 5]
"""

import argparse
import copy
import os
import sys

import torch

import torch_tpu

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grouped_matmul import MoE  # noqa: E402
from rms_norm import RMSNorm  # noqa: E402


class TorchRMSNorm(RMSNorm):
    def forward(self, x):
        return torch.nn.functional.rms_norm(x, (x.shape[-1],), self.weight, self.eps)


class Block(torch.nn.Module):
    def __init__(self, dim, hidden, experts, reference):
        super().__init__()
        self.norm = (TorchRMSNorm if reference else RMSNorm)(dim)
        self.moe = MoE(dim, hidden, experts, reference)

    def forward(self, x):
        return x + self.moe(self.norm(x))


class MoELM(torch.nn.Module):
    def __init__(self, vocab=64, dim=32, hidden=64, experts=4, layers=2, reference=False):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.blocks = torch.nn.ModuleList(
            Block(dim, hidden, experts, reference) for _ in range(layers)
        )
        self.norm = (TorchRMSNorm if reference else RMSNorm)(dim)
        self.head = torch.nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def as_reference(model):
    """A torch-ops copy of `model` (same parameters) on the CPU."""
    reference = MoELM(reference=True)
    reference.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
    return reference


def train(model, batches, mode, device):
    model = model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def loss_of(tokens, targets):
        logits = model(tokens)
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())

    # Compiled: the forward is one graph (fullgraph: the JAX ops do not cut it), the backward
    # the graph AOTAutograd derives from it.
    run = torch.compile(loss_of, backend="tpu", fullgraph=True) if mode == "compiled" else loss_of
    losses = []
    with torch_tpu.eager_mode("fused" if mode == "fused" else "strict"):
        for tokens, targets in batches:
            loss = run(tokens.to(device), targets.to(device))
            loss.backward()
            opt.step()
            opt.zero_grad()
            losses.append(loss.item())
    return losses


def main(steps=5, modes=("eager", "fused", "compiled")):
    torch.manual_seed(0)
    model = MoELM()
    batches = [(torch.randint(0, 64, (4, 16)), torch.randint(0, 64, (4, 16))) for _ in range(steps)]
    expected = train(as_reference(model), batches, "eager", "cpu")
    results = {}
    for mode in modes:
        losses = train(copy.deepcopy(model), batches, mode, "tpu")
        results[mode] = losses
        worst = max(abs(a - b) for a, b in zip(losses, expected))
        print(
            f"{mode:>8}: losses {[round(v, 4) for v in losses]}  max |tpu - cpu torch ops| {worst:.2e}"
        )
    return expected, results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    main(parser.parse_args().steps)
