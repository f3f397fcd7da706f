"""torch_tpu.debug.compare: a model's tpu and CPU runs compared module by module; a planted
difference in one layer is reported at that layer (not at the blocks after it), with its size."""

import pytest
import torch
import torch.nn as nn
from models import GPT, CausalSelfAttention

import torch_tpu
from torch_tpu.debug import compare


def _gpt():
    torch.manual_seed(0)
    return GPT(vocab=64, width=32, layers=3, heads=4, context=16).eval()


@pytest.mark.parametrize("on", ["cpu", "tpu"])
def test_matching_model_reports_no_difference(on):
    model = _gpt().to(on)
    idx = torch.randint(0, 64, (2, 16))
    result = compare(model, idx)
    assert result.first is None, str(result)
    # every module that runs was compared (the ModuleList of blocks is iterated, never called)
    assert len(result.modules) == len(list(model.modules())) - 1
    assert "all" in str(result) and "match" in str(result)


def test_planted_difference_is_found_at_its_layer(monkeypatch):
    original = CausalSelfAttention.forward

    def off_by_a_bit_on_tpu(self, x):
        y = original(self, x)
        return y + 1e-3 if x.device.type == "tpu" and getattr(self, "planted", False) else y

    model = _gpt()
    model.blocks[1].attn.planted = True  # copied with the model to the other device
    monkeypatch.setattr(CausalSelfAttention, "forward", off_by_a_bit_on_tpu)
    result = compare(model, torch.randint(0, 64, (2, 16)))
    first = result.first
    assert (
        first is not None and first.name == "blocks.1.attn" and first.kind == "CausalSelfAttention"
    )
    assert first.max_abs == pytest.approx(1e-3, rel=1e-2)
    # everything that ran before it matched, including block 1's own layer norm
    before = result.modules[: result.modules.index(first)]
    assert before and all(m.ok for m in before)
    assert any(m.name == "blocks.1.ln1" for m in before)
    assert "blocks.1.attn" in str(result) and "x the tolerance" in str(result)


def test_dtype_difference_is_reported(monkeypatch):
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    original = nn.ReLU.forward
    monkeypatch.setattr(
        nn.ReLU,
        "forward",
        lambda self, x: original(self, x).double() if x.device.type == "tpu" else original(self, x),
    )
    result = compare(model, torch.randn(3, 4))
    assert (
        result.first.name == "1"
        and "tpu gives torch.float64[3, 4], cpu torch.float32[3, 4]" in str(result)
    )


def test_the_users_model_stays_where_it_is():
    model = _gpt().to("tpu")
    compare(model, torch.randint(0, 64, (1, 8)))
    assert all(p.device.type == "tpu" for p in model.parameters())
    assert torch_tpu.debug.compare is compare


DUMP_SCRIPT = """
import torch, torch_tpu
x = torch.arange(6.0, device="tpu").reshape(2, 3)
y = (x * 3).cpu()                                  # line 4: strict-mode ops
with torch_tpu.eager_mode("fused"):
    z = (torch.sin(x) + x.t().sum()).sum()         # line 6: recorded
    z.cpu()                                        # line 7: runs the fused graph
"""


def _dump(tmp_path, cache, dump="dump"):
    import json
    import os
    import subprocess
    import sys

    script = tmp_path / "dump_me.py"
    script.write_text(DUMP_SCRIPT)
    env = dict(os.environ, TORCH_TPU_DUMP_DIR=str(tmp_path / dump), TORCH_TPU_CACHE_DIR=str(cache))
    env.pop("TORCH_TPU_EAGER_MODE", None)
    proc = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    lines = (tmp_path / dump / "index.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_dump_dir_holds_every_program_with_its_python_line(tmp_path):
    entries = _dump(tmp_path, tmp_path / "cache")
    by_name = {}
    for e in entries:
        by_name.setdefault(e["name"], []).append(e)
        text = (tmp_path / "dump" / e["stablehlo"]).read_text()
        assert (
            text.startswith("module") and "func.func public @main" in text and "stablehlo." in text
        )
        assert e["source"] == "compiled" and e["compile_seconds"] > 0
        if e["optimized_hlo"] is not None:
            assert (tmp_path / "dump" / e["optimized_hlo"]).stat().st_size > 0
    assert "aten::mul.Tensor" in by_name, sorted(by_name)
    assert any(
        line.endswith("dump_me.py:4") for line in by_name["aten::mul.Tensor"][0]["python_lines"]
    )
    graphs = [e for e in entries if e["name"].startswith("fused graph of")]
    assert len(graphs) == 1 and any(
        line.endswith("dump_me.py:6") for line in graphs[0]["python_lines"]
    )
    assert "stablehlo.sine" in (tmp_path / "dump" / graphs[0]["stablehlo"]).read_text()
    # XLA:CPU exposes its optimized HLO; JAX's bindings render it as text
    mul = by_name["aten::mul.Tensor"][0]
    assert mul["optimized_hlo"] is not None
    assert "multiply(" in torch_tpu.debug.hlo_text(str(tmp_path / "dump" / mul["optimized_hlo"]))
    # a warm disk cache still dumps what the process runs, marked as loaded
    warm = _dump(tmp_path, tmp_path / "cache", "dump_warm")
    assert {e["name"] for e in warm} >= {"aten::mul.Tensor", graphs[0]["name"]}
    assert all(e["source"] == "disk cache" for e in warm if e["name"] == "aten::mul.Tensor")
