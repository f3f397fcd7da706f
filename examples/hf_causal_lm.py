"""What examples/llama.py and examples/qwen.py share: a small `transformers` causal LM trained on
synthetic token sequences, then asked for a greedy continuation with a static KV cache.
"""

import torch
from common import Workload

VOCAB, BATCH, SEQ = 512, 8, 64
PROMPT, NEW_TOKENS = 16, 16
# Ids 0-2 are pad, bos and eos; the data never uses them, so an eos can't end generation early.
FIRST_ID = 3
STRIDES = (1, 2, 3)

# Keyword arguments for LlamaConfig, Qwen2Config and the like: small enough that a step takes
# milliseconds, with grouped-query attention (4 query heads sharing 2 key-value heads).
SMALL = dict(
    vocab_size=VOCAB,
    hidden_size=128,
    intermediate_size=256,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=256,
    pad_token_id=0,
    bos_token_id=1,
    eos_token_id=2,
    attn_implementation="sdpa",
)


def progressions(seed, rows, length):
    """Arithmetic progressions modulo the vocabulary, each with its own start and stride: the
    next token follows from the last one and the stride the context shows. The same seed gives
    the same rows, whatever ran before."""
    generator = torch.Generator().manual_seed(seed)
    start = torch.randint(0, VOCAB - FIRST_ID, (rows, 1), generator=generator)
    stride = torch.tensor(STRIDES)[torch.randint(0, len(STRIDES), (rows, 1), generator=generator)]
    return FIRST_ID + (start + stride * torch.arange(length)) % (VOCAB - FIRST_ID)


def _seed(args, step):
    # Steps and seeds never share a generator seed below a million steps.
    return args.seed * 1_000_003 + step


def workload(model, args):
    """Trains `model` (a `...ForCausalLM`) on BATCH progressions of SEQ tokens per step."""

    def batch(step):
        return (progressions(_seed(args, step), BATCH, SEQ),)

    def loss(model, ids):
        # The model shifts the labels itself; float32 so that a bf16 autocast run reports the
        # loss at the precision an f32 run does.
        return model(input_ids=ids, labels=ids).loss.float()

    return Workload(model, batch, loss, items=BATCH * SEQ, unit="tokens", lr=3e-3)


@torch.no_grad()
def show_generation(model, args):
    """Greedy continuation of a progression no training step saw; prints the prompt, the new
    tokens and how many of them continue the progression."""
    model.eval()
    device = next(model.parameters()).device
    sequence = progressions(_seed(args, args.steps), 1, PROMPT + NEW_TOKENS)
    prompt, expected = sequence[:, :PROMPT], sequence[0, PROMPT:]
    # A static cache keeps every decoding step at one shape, so it compiles once; a dynamic
    # cache grows by a token each step and would make each length a program of its own.
    out = model.generate(
        prompt.to(device),
        max_new_tokens=NEW_TOKENS,
        do_sample=False,
        cache_implementation="static",
    )
    new = out[0, PROMPT:].cpu()
    follows = int((new == expected[: len(new)]).sum())
    print(f"prompt:    {prompt[0].tolist()}")
    print(f"generated: {new.tolist()}")
    print(
        f"{follows} of {len(expected)} generated tokens continue the progression "
        f"(stride {int(prompt[0, 1] - prompt[0, 0]) % (VOCAB - FIRST_ID)})"
    )
    return new
