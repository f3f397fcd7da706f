"""Cold vs warm start: time from process start to the end of the first training step of the
small GPT, with an empty disk compile cache and then with the cache the first run left.

    python benchmarks/cold_warm_start.py
"""

import os
import subprocess
import sys
import tempfile

from common import machine

CHILD = r"""
import time
t0 = time.perf_counter()
import sys, torch, torch_tpu
sys.path.insert(0, {tests!r})
from models import GPT
torch.manual_seed(0)
model = GPT().to("tpu")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
idx = torch.randint(0, 256, (8, 64)).to("tpu")
loss = model(idx, torch.roll(idx, -1, 1))
loss.backward()
opt.step()
loss.item()
c = torch_tpu.metrics.counters()
print(f"{{time.perf_counter() - t0:.3f}} {{c['compiles']}} {{c['disk_hits']}}")
"""


def run(cache_dir, mode):
    env = dict(os.environ, TORCH_TPU_CACHE_DIR=cache_dir, TORCH_TPU_EAGER_MODE=mode)
    tests = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests")
    out = subprocess.run(
        [sys.executable, "-c", CHILD.format(tests=tests)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    seconds, compiles, hits = out.stdout.split()
    return float(seconds), int(compiles), int(hits)


def main():
    print(f"# cold_warm_start ({machine()})")
    for mode in ("strict", "fused"):
        with tempfile.TemporaryDirectory() as d:
            cold = run(d, mode)
            warm = run(d, mode)
        print(
            f"{mode}: cold {cold[0]:.2f}s ({cold[1]} compiles), warm {warm[0]:.2f}s "
            f"({warm[1]} compiles, {warm[2]} disk hits); warm/cold {warm[0] / cold[0]:.2f}x"
        )


if __name__ == "__main__":
    main()
