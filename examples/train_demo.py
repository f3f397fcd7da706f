"""A small model training on the `tpu` device: plain PyTorch, nothing framework-specific.

Run: bash scripts/install.sh && python examples/train_demo.py
"""

import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    torch.manual_seed(0)
    device = torch.device("tpu")
    print(f"device: {device} -> {torch.tpu.get_device_name()}")

    # Synthetic classification: 4 Gaussian blobs in 16 dimensions.
    centers = torch.randn(4, 16) * 0.6
    labels = torch.randint(0, 4, (512,))
    inputs = centers[labels] + torch.randn(512, 16)

    model = nn.Sequential(
        nn.Linear(16, 64),
        nn.LayerNorm(64),
        nn.GELU(),
        nn.Dropout(0.1),
        nn.Linear(64, 64),
        nn.GELU(),
        nn.Linear(64, 4),
    ).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    x, y = inputs.to(device), labels.to(device)

    start = time.time()
    for step in range(1, 61):
        for i in range(0, 512, 128):
            loss = F.cross_entropy(model(x[i : i + 128]), y[i : i + 128])
            opt.zero_grad()
            loss.backward()
            opt.step()
        if step == 1 or step % 10 == 0:
            print(f"step {step:3d}  loss {loss.item():.4f}  on {loss.device}")
    model.eval()
    with torch.no_grad():
        accuracy = (model(x).argmax(dim=1) == y).float().mean().item()
    print(f"accuracy {accuracy:.3f}  ({time.time() - start:.1f}s)")
    print("parameters live on", next(model.parameters()).device)


if __name__ == "__main__":
    main()
