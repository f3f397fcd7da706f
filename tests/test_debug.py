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
