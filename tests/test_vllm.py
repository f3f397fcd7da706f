"""vLLM on `tpu` (torch_tpu/vllm): vLLM's own engine, run in the environment that
scripts/vllm_env.sh builds (vLLM pins transformers below ours), picks the `tpu` platform through
torch_tpu's entry point and generates the same greedy tokens as vLLM's CPU platform, on tiny
llama, mistral (sliding window) and qwen3 models made from configs (grouped-query attention,
prompts over several KV-cache blocks, chunked prefill next to decodes), compiling no forward
program after start-up."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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


def generate(models, **env):
    out = run_in_venv(GENERATE, *models, env=env)
    return json.loads(next(line for line in out.splitlines() if line.startswith("RESULT "))[7:])


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


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
