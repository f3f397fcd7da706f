"""Llama: a small `transformers` LlamaForCausalLM trained on synthetic arithmetic progressions,
then asked for a greedy continuation with a static KV cache.

    python examples/llama.py [--mode strict|fused|compile] [--steps 150] [--dtype f32|bf16]
"""

from common import main
from hf_causal_lm import SMALL, show_generation
from hf_causal_lm import workload as causal_lm_workload
from transformers import LlamaConfig, LlamaForCausalLM


def workload(args):
    return causal_lm_workload(LlamaForCausalLM(LlamaConfig(**SMALL)), args)


if __name__ == "__main__":
    args, w, result = main("Llama", workload, __doc__, steps=150)
    show_generation(w.model, args)
