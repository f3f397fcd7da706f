"""Training-step throughput of the small GPT and a ResNet-18 (CIFAR layout) under
torch.compile(backend="tpu"), beside fused and strict eager, native PyTorch CPU eager, PyTorch
inductor on CPU, and, for the GPT, the same model written in JAX (jax.jit on the same XLA:CPU)
as the reference for what XLA itself does here. Steps per second after warm-up, all variants of
a model in one process, plus each variant's first-step time.

    python benchmarks/compile_step.py          # JAX row needs `pip install jax` (skipped if absent)
    python benchmarks/compile_step.py --models gpt   # or resnet18
"""

import argparse
import math
import time
from functools import partial

import torch
from common import machine, sync
from models import GPT, ResNet

import torch_tpu

VOCAB, WIDTH, LAYERS, HEADS, BATCH, CONTEXT = 256, 128, 4, 4, 8, 64
CNN_BATCH, CNN_SIZE = 8, 32


def gpt_model_and_batch():
    idx = torch.randint(0, VOCAB, (BATCH, CONTEXT))
    return GPT(VOCAB, WIDTH, LAYERS, HEADS, CONTEXT), (idx, torch.roll(idx, -1, 1))


def resnet_model_and_batch():
    batch = (torch.randn(CNN_BATCH, 3, CNN_SIZE, CNN_SIZE), torch.randint(0, 10, (CNN_BATCH,)))
    return ResNet(), batch


def torch_step(model_and_batch, device, mode, compile_backend):
    torch.manual_seed(0)
    model, batch = model_and_batch()
    model = model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = (t.to(device) for t in batch)
    run = torch.compile(model, backend=compile_backend) if compile_backend else model

    def opt_step():
        opt.step()

    opt_run = torch.compile(opt_step, backend=compile_backend) if compile_backend else opt_step

    def step():
        with torch_tpu.eager_mode(mode):
            loss = run(x, y)
            opt.zero_grad()
            loss.backward()
            opt_run()
            return loss.item()

    return step


def jax_step():
    import jax
    import jax.numpy as jnp

    key = jax.random.PRNGKey(0)

    def dense(k, n_in, n_out):
        bound = 1 / math.sqrt(n_in)
        return {
            "w": jax.random.uniform(k, (n_in, n_out), minval=-bound, maxval=bound),
            "b": jnp.zeros(n_out),
        }

    keys = iter(jax.random.split(key, 64))
    params = {
        "tok": jax.random.normal(next(keys), (VOCAB, WIDTH)),
        "pos": jax.random.normal(next(keys), (CONTEXT, WIDTH)),
        "blocks": [
            {
                "ln1": {"g": jnp.ones(WIDTH), "b": jnp.zeros(WIDTH)},
                "qkv": dense(next(keys), WIDTH, 3 * WIDTH),
                "proj": dense(next(keys), WIDTH, WIDTH),
                "ln2": {"g": jnp.ones(WIDTH), "b": jnp.zeros(WIDTH)},
                "fc": dense(next(keys), WIDTH, 4 * WIDTH),
                "out": dense(next(keys), 4 * WIDTH, WIDTH),
            }
            for _ in range(LAYERS)
        ],
        "ln": {"g": jnp.ones(WIDTH), "b": jnp.zeros(WIDTH)},
        "head": jax.random.uniform(next(keys), (WIDTH, VOCAB), minval=-0.09, maxval=0.09),
    }

    def layer_norm(p, x):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-5) * p["g"] + p["b"]

    def linear(p, x):
        return x @ p["w"] + p["b"]

    def loss_fn(params, idx, targets):
        b, t = idx.shape
        x = params["tok"][idx] + params["pos"][:t]
        mask = jnp.tril(jnp.ones((t, t), bool))
        for blk in params["blocks"]:
            h = layer_norm(blk["ln1"], x)
            q, k, v = jnp.split(linear(blk["qkv"], h), 3, axis=-1)
            q, k, v = (
                z.reshape(b, t, HEADS, WIDTH // HEADS).transpose(0, 2, 1, 3) for z in (q, k, v)
            )
            att = (q @ k.transpose(0, 1, 3, 2)) / math.sqrt(WIDTH // HEADS)
            att = jax.nn.softmax(jnp.where(mask, att, -jnp.inf), axis=-1)
            y = (att @ v).transpose(0, 2, 1, 3).reshape(b, t, WIDTH)
            x = x + linear(blk["proj"], y)
            h = layer_norm(blk["ln2"], x)
            x = x + linear(blk["out"], jax.nn.gelu(linear(blk["fc"], h), approximate=True))
        logits = layer_norm(params["ln"], x) @ params["head"]
        logp = jax.nn.log_softmax(logits, -1)
        return -jnp.take_along_axis(logp, targets[..., None], -1).mean()

    @jax.jit
    def train_step(params, m, v, count, idx, targets):
        loss, grads = jax.value_and_grad(loss_fn)(params, idx, targets)
        lr, b1, b2, eps, wd = 1e-3, 0.9, 0.999, 1e-8, 1e-2
        count = count + 1
        m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
        v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
        c1, c2 = 1 - b1**count, 1 - b2**count

        def update(p, m, v):
            return p * (1 - lr * wd) - lr * (m / c1) / (jnp.sqrt(v / c2) + eps)

        return jax.tree.map(update, params, m, v), m, v, count, loss

    idx = jax.random.randint(key, (BATCH, CONTEXT), 0, VOCAB)
    targets = jnp.roll(idx, -1, 1)
    state = [
        params,
        jax.tree.map(jnp.zeros_like, params),
        jax.tree.map(jnp.zeros_like, params),
        jnp.zeros((), jnp.float32),
    ]

    def step():
        *state[:], loss = train_step(*state, idx, targets)
        return float(loss)

    return step


# name: (model and batch, description, warm-up steps, timed steps, JAX reference or None)
MODELS = {
    "gpt": (gpt_model_and_batch, f"gpt {LAYERS}x{WIDTH}, batch {BATCH}x{CONTEXT}", 3, 20, jax_step),
    "resnet18": (
        resnet_model_and_batch,
        f"resnet-18, batch {CNN_BATCH}x3x{CNN_SIZE}x{CNN_SIZE}",
        2,
        5,
        None,
    ),
}


def measure(make, device, warmup, steps):
    t0 = time.perf_counter()
    step = make()
    step()
    sync(device)
    first = time.perf_counter() - t0
    for _ in range(warmup):
        step()
    sync(device)
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    sync(device)
    return steps / (time.perf_counter() - t0), first


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--warmup", type=int, help="warm-up steps (default: per model)")
    p.add_argument("--steps", type=int, help="timed steps (default: per model)")
    args = p.parse_args()
    for name in args.models.split(","):
        model_and_batch, what, warmup, steps, reference = MODELS[name]
        print(f"# compile_step ({machine()}): {what}")
        variants = {
            "cpu-eager": ("cpu", "strict", None),
            "cpu-inductor": ("cpu", "strict", "inductor"),
            "strict": ("tpu", "strict", None),
            "fused": ("tpu", "fused", None),
            "compiled": ("tpu", "strict", "tpu"),
        }
        makers = {k: (partial(torch_step, model_and_batch, *v), v[0]) for k, v in variants.items()}
        if reference:
            try:
                import jax  # noqa: F401

                makers["jax-jit"] = (reference, "cpu")
            except ImportError:
                print("jax not installed: no JAX reference row")
        rates = {}
        for variant, (make, device) in makers.items():
            rate, first = measure(make, device, args.warmup or warmup, args.steps or steps)
            rates[variant] = rate
            print(f"{variant:>13}: {rate:7.2f} steps/s, first step {first:6.2f} s", flush=True)
        c = rates["compiled"]
        line = (
            f"compiled/strict {c / rates['strict']:.2f}x, compiled/cpu-eager "
            f"{c / rates['cpu-eager']:.2f}x, compiled/fused {c / rates['fused']:.2f}x"
        )
        if "jax-jit" in rates:
            line += f", jax step time / compiled step time {c / rates['jax-jit']:.2f}x"
        print(line)


if __name__ == "__main__":
    main()
