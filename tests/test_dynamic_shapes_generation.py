"""transformers' generate() with shapes that grow every token (docs/dynamic_shapes.md): the same
tokens as CPU in strict and fused mode and under torch.compile(dynamic=True), greedy with the
default cache, a left-padded batch and a static cache, sampling with the numbers of unpadded
programs, and a bounded number of compiles: a second generate whose lengths fall in buckets
already compiled compiles nothing."""

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

import torch_tpu
from torch_tpu import metrics

MODES = ("strict", "fused", "compile")


# Buckets 16, 32, 64 (tests/conftest.py): a generate of 20 tokens after 6 crosses one edge.
pytestmark = pytest.mark.usefixtures("small_buckets")


def llama_pair(mode):
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        pad_token_id=0,
    )
    cpu = LlamaForCausalLM(cfg).eval()
    tpu = LlamaForCausalLM(cfg).eval()
    tpu.load_state_dict(cpu.state_dict())
    tpu.to("tpu")
    if mode == "compile":
        tpu.forward = torch.compile(tpu.forward, backend="tpu", dynamic=True)
    return cpu, tpu


def generate(model, ids, mode, **kw):
    if ids.device.type == "cpu":
        return model.generate(ids, **kw)
    with torch_tpu.eager_mode("fused" if mode == "compile" else mode):
        return model.generate(ids, **kw).cpu()


def prompt(length, batch=1, seed=3):
    return torch.randint(1, 128, (batch, length), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("mode", MODES)
def test_greedy_generate_matches_cpu_and_reuses_its_buckets(mode):
    cpu, tpu = llama_pair(mode)
    kw = dict(do_sample=False, max_new_tokens=20, min_new_tokens=20)
    ids = prompt(6)
    got = generate(tpu, ids.to("tpu"), mode, **kw)
    assert torch.equal(got, generate(cpu, ids, mode, **kw))
    assert metrics.counters()["padded_launches"] > 0
    # Lengths 6..27: every one in a bucket the first generate compiled.
    kw.update(max_new_tokens=21, min_new_tokens=21)
    ids = prompt(6, seed=4)
    before = metrics.counters()["compiles"]
    got = generate(tpu, ids.to("tpu"), mode, **kw)
    assert metrics.counters()["compiles"] == before
    assert torch.equal(got, generate(cpu, ids, mode, **kw))


@pytest.mark.parametrize("mode", MODES)
def test_left_padded_batch_matches_cpu(mode):
    cpu, tpu = llama_pair(mode)
    ids = prompt(7, batch=2)
    mask = torch.ones_like(ids)
    ids[0, :3], mask[0, :3] = 0, 0  # the first prompt is 4 tokens, padded on the left
    kw = dict(do_sample=False, max_new_tokens=14, min_new_tokens=14)
    got = generate(tpu, ids.to("tpu"), mode, attention_mask=mask.to("tpu"), **kw)
    assert torch.equal(got, generate(cpu, ids, mode, attention_mask=mask, **kw))


@pytest.mark.parametrize("mode", ("strict", "fused"))
def test_static_cache_generate_matches_cpu(mode):
    # transformers compiles the forward of a static cache itself (the tpu backend).
    cpu, tpu = llama_pair(mode)
    ids = prompt(6)
    kw = dict(do_sample=False, max_new_tokens=14, cache_implementation="static")
    assert torch.equal(generate(tpu, ids.to("tpu"), mode, **kw), generate(cpu, ids, mode, **kw))


@pytest.mark.parametrize("mode", MODES)
def test_sampled_generate_draws_the_tokens_of_unpadded_programs(mode):
    _, tpu = llama_pair(mode)
    ids = prompt(6).to("tpu")
    # Lengths 6..18: the second generate runs padded in buckets 16 and 32.
    kw = dict(do_sample=True, top_k=20, temperature=1.3, max_new_tokens=12, min_new_tokens=12)

    def sample():
        torch.manual_seed(11)
        return generate(tpu, ids, mode, **kw)

    sample()  # sizes vary: later calls run padded
    before = metrics.counters()["padded_launches"]
    padded = sample()
    assert metrics.counters()["padded_launches"] > before
    torch_tpu._C._cache_clear()
    torch._dynamo.reset()
    with torch_tpu.dynamism.disabled():
        exact = sample()
    assert torch.equal(padded, exact)
    assert not torch.equal(
        padded[:, 6:], generate(tpu, ids, mode, do_sample=False, max_new_tokens=20)[:, 6:]
    )
