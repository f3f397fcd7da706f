"""minGPT: a character-level GPT trained on a text the example generates, then sampled.

python examples/mingpt.py [--mode strict|fused|compile] [--steps 300] [--dtype f32|bf16]
"""

import math
import random

import torch
import torch.nn as nn
import torch.nn.functional as F
from common import Workload, main

CONTEXT, WIDTH, LAYERS, HEADS, BATCH = 64, 128, 4, 4, 16


def corpus(sentences=400, seed=0):
    """Sentences from a small grammar: regular enough that a few steps visibly lower the loss."""
    rng = random.Random(seed)
    subjects = ["the cat", "a dog", "my sister", "the old man", "a small bird", "our teacher"]
    verbs = ["sees", "likes", "follows", "paints", "finds", "remembers"]
    objects = [
        "the river",
        "a red kite",
        "the moon",
        "an open door",
        "the tall trees",
        "a quiet song",
    ]
    endings = [".", " today.", " again.", " at night.", " in the rain."]
    return " ".join(
        f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)}{rng.choice(endings)}"
        for _ in range(sentences)
    )


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, HEADS, c // HEADS).transpose(1, 2) for z in self.qkv(x).split(c, 2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.attn = CausalSelfAttention()
        self.mlp = nn.Sequential(
            nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH)
        )

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.tok = nn.Embedding(vocab, WIDTH)
        self.pos = nn.Parameter(torch.zeros(1, CONTEXT, WIDTH))
        self.blocks = nn.Sequential(*[Block() for _ in range(LAYERS)])
        self.ln = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, vocab, bias=False)
        for p in self.parameters():
            if p.dim() == 2:
                nn.init.normal_(
                    p, std=0.02 / math.sqrt(2 * LAYERS) if p.shape[0] == WIDTH else 0.02
                )

    def forward(self, idx):
        x = self.tok(idx) + self.pos[:, : idx.shape[1]]
        return self.head(self.ln(self.blocks(x)))


def workload(args):
    text = corpus()
    chars = sorted(set(text))
    data = torch.tensor([chars.index(c) for c in text])
    generator = torch.Generator().manual_seed(args.seed)

    def batch(step):
        starts = torch.randint(0, len(data) - CONTEXT - 1, (BATCH,), generator=generator)
        x = torch.stack([data[s : s + CONTEXT] for s in starts])
        y = torch.stack([data[s + 1 : s + CONTEXT + 1] for s in starts])
        return x, y

    def loss(model, x, y):
        return F.cross_entropy(model(x).flatten(0, 1).float(), y.flatten())

    w = Workload(GPT(len(chars)), batch, loss, items=BATCH * CONTEXT, unit="tokens", lr=3e-3)
    w.chars = chars
    return w


@torch.no_grad()
def sample(model, chars, prompt, length=80, temperature=0.7):
    """A sampled continuation of `prompt` (at least CONTEXT characters; greedy decoding of a
    small character model falls into loops). The window keeps one shape, so every step runs the
    same compiled program."""
    model.eval()
    device = next(model.parameters()).device
    window = torch.tensor([[chars.index(c) for c in prompt[-CONTEXT:]]], device=device)
    out = []
    for _ in range(length):
        probs = torch.softmax(model(window)[:, -1] / temperature, -1)
        next_id = torch.multinomial(probs, 1)
        window = torch.cat([window[:, 1:], next_id], 1)
        out.append(next_id)
    return "".join(chars[i] for i in torch.cat(out, 1)[0].tolist())


if __name__ == "__main__":
    args, w, result = main("minGPT", workload, __doc__, steps=300)
    prompt = corpus(seed=1)[:CONTEXT]
    print(f"sample: {prompt!r} -> {sample(w.model, w.chars, prompt)!r}")
