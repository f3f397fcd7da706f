"""Shapes that change (docs/dynamic_shapes.md): generation and variable-length training, each
variant in fresh processes, cold (empty compile cache) and warm (the cache the cold run left).

    python benchmarks/dynamic_shapes.py [--tokens 128] [--steps 40] [--only generate|train]

Generation: LlamaForCausalLM (4 layers, hidden 256, 4 heads, vocab 1000) from a small config,
`generate(max_new_tokens=N)`, greedy, default DynamicCache, prompt of 8 tokens; per variant the
compiles and compile seconds of the first generate, its wall time, then steady tokens/s
against CPU eager's in the same process, the two alternated for five rounds (medians; ratio =
tpu / CPU tokens/s). The tokens must equal CPU's.
Training: a 2-layer transformer LM on batches of 8 sequences whose lengths are drawn from
16..512; per variant the programs compiled for the steps and the steps/s of the second half as
it first runs (with the compiles of buckets first met there), then steady steps/s (the second
half's lengths again) against the same run with every batch padded by hand to 512 (ratio =
dynamic / padded, both steady).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

from common import machine

GENERATE = r"""
import copy, json, statistics, sys, time, torch
mode, tokens = sys.argv[1], int(sys.argv[2])
from transformers import LlamaConfig, LlamaForCausalLM
torch.manual_seed(0)
cfg = LlamaConfig(vocab_size=1000, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
                  num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=1024)
model = LlamaForCausalLM(cfg).eval()
cpu_model = copy.deepcopy(model)
prompt = torch.randint(0, 1000, (1, 8))
want = cpu_model.generate(prompt, max_new_tokens=tokens, do_sample=False, min_new_tokens=tokens)
device = "cpu"
if mode != "cpu":
    import torch_tpu
    device = "tpu"
    torch_tpu.set_eager_mode("fused" if mode == "compile" else mode)
    model = model.to("tpu")
    if mode == "compile":
        model.forward = torch.compile(model.forward, backend="tpu", dynamic=True)
def generate(m, dev):
    t0 = time.perf_counter()
    out = m.generate(prompt.to(dev), max_new_tokens=tokens, do_sample=False, min_new_tokens=tokens)
    out = out.cpu()
    return out, time.perf_counter() - t0
out, first = generate(model, device)
result = {"first_s": first, "same_tokens": bool(torch.equal(out, want))}
if device == "tpu":
    c = torch_tpu.metrics.counters()
    result.update(compiles=c["compiles"], compile_s=c["compile_seconds"], disk_hits=c["disk_hits"],
                  padded_launches=c["padded_launches"])
# Steady speed against CPU eager in this process, alternating the two so that the machine's
# drift (large on shared machines) weighs on both: medians of 5 rounds.
cpu_s, dev_s = [], []
for _ in range(5):
    cpu_s.append(generate(cpu_model, "cpu")[1])
    dev_s.append(generate(model, device)[1])
result["tokens_per_s"] = tokens / statistics.median(dev_s)
result["cpu_tokens_per_s"] = tokens / statistics.median(cpu_s)
print("RESULT " + json.dumps(result))
"""

TRAIN = r"""
import json, random, sys, time, torch
import torch.nn as nn
mode, steps, pad = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "pad"
torch.manual_seed(0)
random.seed(0)
V, D, MAX = 1000, 128, 512
class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.pos = nn.Embedding(MAX, D)
        layer = nn.TransformerEncoderLayer(D, 4, 4 * D, dropout=0.0, batch_first=True)
        self.body = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(D, V)
    def forward(self, ids, mask):
        n = ids.shape[1]
        h = self.emb(ids) + self.pos.weight[:n]
        h = self.body(h, src_key_padding_mask=~mask)
        return self.head(h)
lengths = [random.randint(16, MAX) for _ in range(steps)]
device = "cpu"
model = LM()
if mode != "cpu":
    import torch_tpu
    device = "tpu"
    torch_tpu.set_eager_mode("fused" if mode == "compile" else mode)
    model = model.to("tpu")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
def step(n):
    width = MAX if pad else n
    ids = torch.randint(0, V, (8, width))
    mask = torch.arange(width)[None, :] < n
    ids, mask = ids.to(device), mask.expand(8, width).contiguous().to(device)
    logits = model(ids, mask)
    loss = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1), reduction="none")
    loss = (loss * mask[:, 1:].reshape(-1)).sum() / mask[:, 1:].sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss.item()
if mode == "compile":
    step = torch.compile(step, backend="tpu", dynamic=True)
half = steps // 2
t0 = time.perf_counter()
step(lengths[0])
result = {}
if device == "tpu":
    result["first_step_compiles"] = torch_tpu.metrics.counters()["compiles"]
for n in lengths[1:half]:
    step(n)
result["first_half_s"] = time.perf_counter() - t0
if device == "tpu":
    c = torch_tpu.metrics.counters()
    result.update(compiles=c["compiles"], compile_s=c["compile_seconds"])
t0 = time.perf_counter()
for n in lengths[half:]:
    step(n)
result["second_half_steps_per_s"] = (steps - half) / (time.perf_counter() - t0)
if device == "tpu":
    result["compiles_total"] = torch_tpu.metrics.counters()["compiles"]
# Steady: the second half's lengths again, every bucket they need compiled by now (a bucket
# first met in the second half compiles there, seconds against a step's fraction of one).
t0 = time.perf_counter()
for n in lengths[half:]:
    step(n)
result["steps_per_s"] = (steps - half) / (time.perf_counter() - t0)
if device == "tpu":
    result["steady_compiles"] = torch_tpu.metrics.counters()["compiles"] - result["compiles_total"]
print("RESULT " + json.dumps(result))
"""


def run(script, args, cache_dir):
    env = dict(os.environ, TORCH_TPU_CACHE_DIR=cache_dir)
    proc = subprocess.run(
        [sys.executable, "-c", script, *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    return {"error": (proc.stdout + proc.stderr)[-2000:]}


def generate(tokens):
    print(f"generate {tokens} tokens, {machine()}")
    cpu = run(GENERATE, ["cpu", tokens], "")
    print(f"  cpu eager: first {cpu['first_s']:.2f} s, {cpu['tokens_per_s']:.1f} tokens/s")
    for mode in ("strict", "fused", "compile"):
        with tempfile.TemporaryDirectory() as cache:
            for state in ("cold", "warm"):
                r = run(GENERATE, [mode, tokens], cache)
                if "error" in r:
                    print(f"  {mode:7} {state}: failed\n{r['error']}")
                    continue
                ratio = r["tokens_per_s"] / r["cpu_tokens_per_s"]
                print(
                    f"  {mode:7} {state}: first generate {r['first_s']:.2f} s, {r['compiles']} compiles "
                    f"({r['compile_s']:.2f} s), {r['disk_hits']} disk hits, same tokens {r['same_tokens']}; "
                    f"steady {r['tokens_per_s']:.1f} tokens/s = {ratio:.2f}x CPU eager "
                    f"({r['cpu_tokens_per_s']:.1f} tokens/s in the same process)"
                )


def train(steps):
    print(f"training on lengths 16..512, {steps} steps, {machine()}")
    for mode in ("fused", "compile"):
        with tempfile.TemporaryDirectory() as cache:
            dyn = run(TRAIN, [mode, steps, "dynamic"], cache)
        with tempfile.TemporaryDirectory() as cache:
            pad = run(TRAIN, [mode, steps, "pad"], cache)
        if "error" in dyn or "error" in pad:
            print(f"  {mode}: failed\n{dyn.get('error', '')}{pad.get('error', '')}")
            continue
        print(
            f"  {mode:7}: {dyn['compiles_total']} compiles over {steps} steps ({dyn['first_step_compiles']} "
            f"in the first, {dyn['compiles_total'] - dyn['compiles']} in the second half; "
            f"{dyn['compile_s']:.1f} s in the first half); second half {dyn['second_half_steps_per_s']:.2f} "
            f"steps/s, steady {dyn['steps_per_s']:.2f} steps/s ({dyn['steady_compiles']} compiles), "
            f"padded by hand to 512: {pad['steps_per_s']:.2f} steps/s ({pad['compiles_total']} compiles); "
            f"ratio {dyn['steps_per_s'] / pad['steps_per_s']:.2f}"
        )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tokens", type=int, default=128)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--only", choices=["generate", "train"])
    a = p.parse_args()
    if a.only != "train":
        generate(a.tokens)
    if a.only != "generate":
        train(a.steps)


if __name__ == "__main__":
    main()
