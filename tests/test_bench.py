"""python -m torch_tpu.bench: one model family measured in every tpu mode and native CPU eager,
each variant in a cold process (empty compile cache) and a warm one; the JSON record has
steps/s, MFU, first-step times and compile counts per variant, and the plot is written."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VARIANTS = ["tpu strict", "tpu fused", "tpu compile", "cpu eager"]


def test_bench_cli_records_every_mode(tmp_path):
    env = dict(os.environ)
    env.pop("TORCH_TPU_EAGER_MODE", None)
    command = [sys.executable, "-m", "torch_tpu.bench", "mingpt", "--steps", "4"]
    command += ["--variants", ",".join(VARIANTS), "--out", str(tmp_path)]
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = json.loads((tmp_path / "bench_mingpt.json").read_text())
    assert record["flops_per_step"] > 1e8 and record["peak_flops"] > 0
    assert "measured" in record["peak_source"]  # XLA:CPU has no vendor figure
    assert list(record["variants"]) == VARIANTS
    for name, v in record["variants"].items():
        assert "error" not in v, (name, v)
        assert (
            v["steps_per_second"] > 0 and v["items_per_second"] == v["steps_per_second"] * 16 * 64
        )
        assert 0 < v["mfu"] < 1
        assert v["first_step_cold_seconds"] > 0 and v["first_step_warm_seconds"] > 0
        assert v["import_seconds"] > 0 and len(v["step_seconds_warm"]) == 4
        if name.startswith("tpu"):
            # the cold process compiled, the warm one found everything in the disk cache
            assert v["compiles_cold"] > 0 and v["compiles_warm"] == 0, (name, v)
            assert v["peak_memory_bytes"] > 0
    assert (tmp_path / "bench_mingpt.png").stat().st_size > 0
    for name in VARIANTS:
        assert name in proc.stdout  # the table
