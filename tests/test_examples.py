"""Every model-family example runs: two training steps with its own flags (modes and dtypes
spread over the families), a loss in the summary line, and what the example does afterwards
(generation, sampling, denoising, evaluation) finishing cleanly. Each runs in a fresh process,
as a user runs it."""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

RUNS = [
    ("llama", ["--mode", "fused"]),
    ("qwen", ["--mode", "compile", "--dtype", "bf16"]),
    ("resnet", ["--mode", "strict"]),
    ("dlrm", ["--mode", "compile"]),
    ("mingpt", ["--dtype", "bf16"]),
    ("unet", ["--mode", "fused"]),
]


@pytest.mark.parametrize("example,flags", RUNS, ids=[r[0] for r in RUNS])
def test_example_trains_two_steps(example, flags):
    env = dict(os.environ)
    env.pop("TORCH_TPU_EAGER_MODE", None)
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", f"{example}.py"), "--steps", "2", *flags],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = re.search(
        r"loss (\d+\.\d+) -> (\d+\.\d+) over 2 steps \((\w+), (\w+)\).*device tpu:0", proc.stdout
    )
    assert summary, proc.stdout[-2000:]
    mode = dict(zip(flags[::2], flags[1::2]))
    assert summary.group(3) == mode.get("--mode", "fused") and summary.group(4) == mode.get(
        "--dtype", "f32"
    )
