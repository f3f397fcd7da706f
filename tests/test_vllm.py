"""vLLM on `tpu` (torch_tpu/vllm): vLLM's own engine, run in the environment that
scripts/vllm_env.sh builds (vLLM pins transformers below ours), picks the `tpu` platform through
torch_tpu's entry point and generates the same greedy tokens as vLLM's CPU platform, on tiny
llama, mistral (sliding window) and qwen3 models made from configs (grouped-query attention,
prompts over several KV-cache blocks, chunked prefill next to decodes), compiling no forward
program after start-up; and the serving features on llama against vLLM CPU: logprobs, stop
strings, sampling with temperature / top-k / top-p (as distributions), seeded and `n > 1`
sampling, prefix-cache hits, requests arriving while others decode, and preemption when the KV
cache is full."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import scipy.stats

ROOT = Path(__file__).resolve().parent.parent
VENV_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"

MAKE_MODELS = r"""
import sys, torch
from pathlib import Path
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM,
                          PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM)
words = ["<unk>", "<s>", "</s>"] + [f"w{i}" for i in range(253)]
tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
common = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
              num_attention_heads=2, num_key_value_heads=1, head_dim=32,
              max_position_embeddings=512, bos_token_id=1, eos_token_id=2)
families = {
    "llama": (LlamaConfig(**common), LlamaForCausalLM),
    # A window shorter than the longer prompts: tokens see only the last 24 positions.
    "mistral": (MistralConfig(**common, sliding_window=24), MistralForCausalLM),
    "qwen3": (Qwen3Config(**common), Qwen3ForCausalLM),  # with q/k RMS norms
}
for name, (config, cls) in families.items():
    out = Path(sys.argv[1]) / name
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>",
                            eos_token="</s>").save_pretrained(out)
    torch.manual_seed(0)
    cls(config).save_pretrained(out)
"""

# Four prompts of 5 to 56 tokens over 32-token KV blocks, scheduled 64 tokens per step: the
# longer prompts are prefilled in chunks, next to the others' decodes.
GENERATE = r"""
import gc, json, sys
def main():
    from vllm import LLM, SamplingParams
    from vllm.platforms import current_platform
    results = {"platform": current_platform.device_type, "tokens": {}, "compiles": {}}
    for model in sys.argv[1:]:
        llm = LLM(model=model, dtype="float32", max_model_len=256, kv_cache_memory_bytes=64 << 20,
                  enforce_eager=True, max_num_seqs=8, max_num_batched_tokens=64, block_size=32,
                  seed=0)
        prompts = [" ".join(f"w{(7 * i + 3 * j) % 250}" for j in range(5 + 17 * i)) for i in range(4)]
        outs = llm.generate(prompts, SamplingParams(temperature=0.0, max_tokens=12, ignore_eos=True))
        results["tokens"][model] = [list(o.outputs[0].token_ids) for o in outs]
        if current_platform.device_type == "tpu":
            results["compiles"][model] = llm.collective_rpc("compiles_since_start_up")
        del llm
        gc.collect()
    print("RESULT " + json.dumps(results))
if __name__ == "__main__":  # vLLM starts its engine by spawn
    main()
"""


# Serving features on the llama model, each checked against vLLM CPU by the test. vLLM CPU's own
# sampler fails on seeded requests whose prefill is chunked ("CPU Generator does not use
# offset"), so seeded reproducibility is run on `tpu` only.
FEATURES = r"""
import gc, json, sys
def main():
    from vllm import LLM, SamplingParams
    from vllm.platforms import current_platform
    tpu = current_platform.device_type == "tpu"
    def make_llm(kv_cache_memory_bytes):
        return LLM(model=sys.argv[1], dtype="float32", max_model_len=256, block_size=32,
                   kv_cache_memory_bytes=kv_cache_memory_bytes, enforce_eager=True, max_num_seqs=8,
                   max_num_batched_tokens=64, seed=0, enable_prefix_caching=True,
                   disable_log_stats=False)
    def tokens(outs):
        return [[list(c.token_ids) for c in o.outputs] for o in outs]
    def greedy(n, **kw):
        return SamplingParams(temperature=0.0, max_tokens=n, ignore_eos=True, **kw)
    def counter(llm, name):
        return sum(m.value for m in llm.get_metrics() if m.name == name)
    prompts = [" ".join(f"w{(7 * i + 3 * j) % 250}" for j in range(5 + 17 * i)) for i in range(4)]
    res = {"platform": current_platform.device_type}
    llm = make_llm(64 << 20)
    outs = llm.generate(prompts, greedy(8, logprobs=5, prompt_logprobs=3))
    res["greedy"] = tokens(outs)
    res["logprobs"] = [[{t: p.logprob for t, p in s.items()} for s in o.outputs[0].logprobs]
                       for o in outs]
    res["prompt_logprobs"] = [[s and {t: p.logprob for t, p in s.items()} for s in o.prompt_logprobs]
                              for o in outs]
    # Each request stops at a word of its own greedy output: the text up to it, finish "stop".
    stops = [o.outputs[0].text.split()[2 + i] for i, o in enumerate(outs[:3])]
    outs = llm.generate(prompts[:3], [SamplingParams(temperature=0.0, max_tokens=8, stop=[w])
                                      for w in stops])
    res["stop"] = [(o.outputs[0].text, o.outputs[0].finish_reason) for o in outs]
    # 512 samples of one token at a low temperature, with top-k and top-p: compared with CPU's
    # samples as distributions.
    sampled = SamplingParams(n=512, temperature=0.1, top_k=5, top_p=0.8, max_tokens=1)
    res["samples"] = [c.token_ids[0] for c in llm.generate(prompts[1:2], sampled)[0].outputs]
    # A prompt of three blocks, then two prompts sharing its first two blocks.
    prefix = " ".join(f"w{(5 * j) % 250}" for j in range(70))
    hits = counter(llm, "vllm:prefix_cache_hits")
    outs = llm.generate([prefix + " w1 w2"], greedy(8)) + llm.generate([prefix + " w1 w2", prefix + " w9"], greedy(8))
    res["prefix"] = tokens(outs)
    res["prefix_cache_hits"] = counter(llm, "vllm:prefix_cache_hits") - hits
    if tpu:
        seeded = SamplingParams(n=3, temperature=1.0, top_p=0.9, seed=7, max_tokens=8, ignore_eos=True)
        res["seeded"] = [tokens(llm.generate(prompts, seeded)) for _ in range(2)]
        res["compiles"] = llm.collective_rpc("compiles_since_start_up")[0]
    del llm
    gc.collect()
    # A cache of 12 blocks for 8 requests needing 4 each: the scheduler preempts and recomputes.
    # Requests arrive while others decode.
    llm = make_llm(12 * 2 * 32 * 64 * 4)
    engine = llm.llm_engine
    done = {}
    for step in range(10_000):
        if step % 3 == 0 and step // 3 < 8:
            i = step // 3
            engine.add_request(str(i), " ".join(f"w{(11 * i + j) % 250}" for j in range(30 + 3 * i)),
                               greedy(64))
        for out in engine.step():
            if out.finished:
                done[int(out.request_id)] = list(out.outputs[0].token_ids)
        if len(done) == 8:
            break
    res["arriving"] = [done[i] for i in range(8)]
    res["preemptions"] = counter(llm, "vllm:num_preemptions")
    if tpu:
        res["compiles_small_cache"] = llm.collective_rpc("compiles_since_start_up")[0]
    del llm
    gc.collect()
    print("RESULT " + json.dumps(res))
if __name__ == "__main__":  # vLLM starts its engine by spawn
    main()
"""


def run_in_venv(script, *args, env=None, timeout=900):
    proc = subprocess.run(
        [str(VENV_PYTHON), "-c", script, *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return proc.stdout


@pytest.fixture(scope="module")
def vllm_env():
    # Built on first use, kept between runs (a no-op once complete).
    subprocess.run(["bash", str(ROOT / "scripts" / "vllm_env.sh")], check=True, timeout=1800)
    return VENV_PYTHON


@pytest.fixture(scope="module")
def tiny_models(vllm_env, tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny_models")
    run_in_venv(MAKE_MODELS, str(path))
    return [str(path / name) for name in ("llama", "mistral", "qwen3")]


def run_for_result(script, *args, env=None):
    """The JSON a venv script prints on its "RESULT " line."""
    out = run_in_venv(script, *args, env=env)
    return json.loads(next(line for line in out.splitlines() if line.startswith("RESULT "))[7:])


def generate(models, **env):
    return run_for_result(GENERATE, *models, env=env)


def test_vllm_picks_tpu_unless_told_cpu(vllm_env):
    ask = "from vllm.platforms import current_platform; print(current_platform.device_type)"
    assert run_in_venv(ask).split()[-1] == "tpu"
    assert run_in_venv(ask, env={"VLLM_TARGET_DEVICE": "cpu"}).split()[-1] == "cpu"


def test_greedy_tokens_equal_vllm_cpu(tiny_models):
    want = generate(tiny_models, VLLM_TARGET_DEVICE="cpu")
    got = generate(tiny_models)
    assert want["platform"] == "cpu" and got["platform"] == "tpu"
    for model in tiny_models:
        tokens = got["tokens"][model]
        assert len(tokens) == 4 and all(len(t) == 12 for t in tokens), model
        assert tokens == want["tokens"][model], model
        # Start-up ran every shape of the forward: serving compiled none.
        assert got["compiles"][model][0]["forward"] == 0, (model, got["compiles"][model])


def features(model, **env):
    return run_for_result(FEATURES, model, env=env)


def assert_logprobs_close(got, want):
    for got_step, want_step in zip(got, want, strict=True):
        if want_step is None:  # the first prompt token has none
            assert got_step is None
            continue
        assert got_step.keys() == want_step.keys(), (got_step, want_step)
        for token, logprob in want_step.items():
            assert got_step[token] == pytest.approx(logprob, abs=1e-4), (token, got_step, want_step)


def test_serving_features_match_vllm_cpu(tiny_models):
    llama = tiny_models[0]
    want = features(llama, VLLM_TARGET_DEVICE="cpu")
    got = features(llama)
    assert want["platform"] == "cpu" and got["platform"] == "tpu"
    assert got["greedy"] == want["greedy"]
    for key in ("logprobs", "prompt_logprobs"):
        for got_request, want_request in zip(got[key], want[key], strict=True):
            assert_logprobs_close(got_request, want_request)
    assert got["stop"] == want["stop"]
    assert all(reason == "stop" for _, reason in got["stop"]), got["stop"]
    # Sampled tokens: the two platforms' 512 samples are draws of one distribution (chi-squared
    # test of homogeneity; a wrong temperature, top-k or top-p moves it far past p = 1e-4).
    tokens = sorted(set(got["samples"]) | set(want["samples"]))
    table = [[run.count(t) for t in tokens] for run in (got["samples"], want["samples"])]
    assert len(tokens) > 1 and scipy.stats.chi2_contingency(table).pvalue > 1e-4, (tokens, table)
    assert got["prefix"] == want["prefix"]
    assert got["prefix_cache_hits"] == want["prefix_cache_hits"] > 0
    # Seeded requests repeat exactly, chunked prefills included (a discarded sample's generator
    # is stepped back by vLLM), and n samples of one request differ.
    first, second = got["seeded"]
    assert first == second
    assert all(len({tuple(s) for s in request}) == 3 for request in first), first
    # Requests arriving while others decode, preempted and recomputed when the cache is full.
    assert got["arriving"] == want["arriving"]
    assert got["preemptions"] > 0 and want["preemptions"] > 0
    assert got["compiles"]["forward"] == got["compiles_small_cache"]["forward"] == 0, got


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
