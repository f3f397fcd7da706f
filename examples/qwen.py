"""Qwen2: a small `transformers` Qwen2ForCausalLM trained on synthetic arithmetic progressions,
then asked for a greedy continuation with a static KV cache.

    python examples/qwen.py [--mode strict|fused|compile] [--steps 150] [--dtype f32|bf16]
"""

from common import main
from hf_causal_lm import SMALL, show_generation
from hf_causal_lm import workload as causal_lm_workload
from transformers import Qwen2Config, Qwen2ForCausalLM


def workload(args):
    return causal_lm_workload(Qwen2ForCausalLM(Qwen2Config(**SMALL)), args)


if __name__ == "__main__":
    args, w, result = main("Qwen2", workload, __doc__, steps=150)
    show_generation(w.model, args)
