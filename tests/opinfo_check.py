"""Runs PyTorch's OpInfo samples of an op on tpu against CPU: outputs, and the gradients of every
tensor argument (positional or keyword) that requires grad."""

import torch
from op_check import _flat_tensors, _to_tpu, assert_same
from torch.testing._internal.common_methods_invocations import op_db


def opinfo(name, variant=""):
    ops = [o for o in op_db if o.name == name and o.variant_test_name == variant]
    assert len(ops) == 1, (name, variant, len(ops))
    return ops[0]


def samples(name, dtype=torch.float32, limit=None, variant=""):
    """The OpInfo's samples (every k-th one when there are more than `limit`, so the spread of
    cases is kept while compile time stays bounded)."""
    op = opinfo(name, variant)
    grad = op.supports_autograd and dtype.is_floating_point
    s = list(op.sample_inputs("cpu", dtype, requires_grad=grad))
    if limit is not None and len(s) > limit:
        step = len(s) / limit
        s = [s[int(i * step)] for i in range(limit)]
    return op, s


def _clone(x):
    if isinstance(x, torch.Tensor):
        return x.detach().clone().requires_grad_(x.requires_grad)
    if isinstance(x, (list, tuple)):
        return type(x)(_clone(v) for v in x)
    if isinstance(x, dict):
        return {k: _clone(v) for k, v in x.items()}
    return x


def _compare(actual, expected, rel_to_max):
    if rel_to_max is None or not expected.is_floating_point() or expected.numel() == 0:
        assert_same(actual, expected)
        return
    # Absolute tolerance relative to the largest expected magnitude (see the caller's comment).
    atol = rel_to_max * expected.abs().max().item()
    assert_same(actual, expected, atol=atol, rtol=1.3e-6)


def check_sample(op, sample, grad=True, rel_to_max=None, fn=None):
    """Runs `fn` (default: the OpInfo's op) on the sample on CPU and tpu; compares every output
    and, with grad, the gradients of a fixed random cotangent. rel_to_max: floating results are
    compared with atol = rel_to_max * max|expected| (for samples whose magnitudes make f32
    summation order matter)."""
    fn = fn or op.op
    cpu_args = _clone([sample.input, *sample.args])
    cpu_kwargs = _clone(dict(sample.kwargs))
    tpu_args, tpu_kwargs = _to_tpu(cpu_args), _to_tpu(cpu_kwargs)
    expected = fn(*cpu_args, **cpu_kwargs)
    actual = fn(*tpu_args, **tpu_kwargs)
    exp_flat, act_flat = _flat_tensors(expected), _flat_tensors(actual)
    assert len(exp_flat) == len(act_flat)
    for a, e in zip(act_flat, exp_flat):
        _compare(a, e, rel_to_max)
    if not grad:
        return
    inputs_cpu = [
        t for t in _flat_tensors([cpu_args, list(cpu_kwargs.values())]) if t.requires_grad
    ]
    inputs_tpu = [
        t for t in _flat_tensors([tpu_args, list(tpu_kwargs.values())]) if t.requires_grad
    ]
    outs = [(e, a) for e, a in zip(exp_flat, act_flat) if e.requires_grad and e.numel()]
    if not inputs_cpu or not outs:
        return
    gen = torch.Generator().manual_seed(1234)
    cots = [torch.randn(e.shape, generator=gen, dtype=torch.float64).to(e.dtype) for e, _ in outs]
    torch.autograd.backward([e for e, _ in outs], cots)
    torch.autograd.backward([a for _, a in outs], [c.to("tpu") for c in cots])
    for c, t in zip(inputs_cpu, inputs_tpu):
        if c.grad is None:
            assert t.grad is None
            continue
        assert t.grad is not None, "missing gradient on tpu"
        _compare(t.grad, c.grad, rel_to_max)
