"""Compare an op on `tpu` with PyTorch's own CPU result: values, dtype, shape, device, grads."""

import torch

FLOAT_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64)
INT_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + (torch.bool,)


def _to_tpu(x):
    if isinstance(x, torch.Tensor):
        if x.is_contiguous():
            t = x.detach().to("tpu")
        else:
            # Same sizes and strides on tpu, so non-contiguous inputs stay non-contiguous.
            t = torch.empty_strided(x.size(), x.stride(), dtype=x.dtype, device="tpu")
            t.copy_(x.detach())
        t.requires_grad_(x.requires_grad)
        return t
    if isinstance(x, (list, tuple)):
        return type(x)(_to_tpu(v) for v in x)
    if isinstance(x, dict):
        return {k: _to_tpu(v) for k, v in x.items()}
    return x


def _flat_tensors(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _flat_tensors(v)]
    return []


def noncontiguous(t):
    """A non-contiguous tensor with the same values as `t` (a strided slice of a larger one)."""
    if t.dim() == 0:
        return t
    big = torch.zeros(*t.shape[:-1], t.shape[-1] * 2, dtype=t.dtype)
    out = big[..., ::2]
    out.copy_(t)
    return out.requires_grad_(t.requires_grad)


def assert_same(actual, expected, atol=None, rtol=None, check_stride=False):
    """`actual` (tpu) equals `expected` (cpu) in dtype, shape, device type and values."""
    if isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e, atol, rtol, check_stride)
        return
    if not isinstance(expected, torch.Tensor):
        assert actual == expected, (actual, expected)
        return
    assert isinstance(actual, torch.Tensor), type(actual)
    assert actual.device.type == "tpu", actual.device
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    torch.testing.assert_close(
        actual.cpu(), expected, atol=atol, rtol=rtol, equal_nan=True, check_stride=check_stride
    )


def check_op(
    fn, *inputs, grad=False, atol=None, rtol=None, grad_atol=None, grad_rtol=None, **kwargs
):
    """Runs fn on CPU inputs and on tpu copies; compares outputs and, with grad=True, the
    gradients of every floating input that requires grad (backward of sum of outputs
    weighted by a fixed random cotangent)."""
    cpu_inputs = [
        x.detach().clone().requires_grad_(x.requires_grad) if isinstance(x, torch.Tensor) else x
        for x in inputs
    ]
    tpu_inputs = [_to_tpu(x) for x in cpu_inputs]
    cpu_kwargs = kwargs
    tpu_kwargs = _to_tpu(kwargs)
    expected = fn(*cpu_inputs, **cpu_kwargs)
    actual = fn(*tpu_inputs, **tpu_kwargs)
    assert_same(actual, expected, atol, rtol)
    if not grad:
        return actual
    outs_cpu = [o for o in _flat_tensors(expected) if o.requires_grad]
    outs_tpu = [o for o in _flat_tensors(actual) if o.requires_grad]
    assert len(outs_cpu) == len(outs_tpu) and outs_cpu, "no differentiable output"
    gen = torch.Generator().manual_seed(1234)
    cots = [torch.randn(o.shape, generator=gen, dtype=torch.float64).to(o.dtype) for o in outs_cpu]
    torch.autograd.backward(outs_cpu, cots)
    torch.autograd.backward(outs_tpu, [c.to("tpu") for c in cots])
    for c, t in zip(cpu_inputs, tpu_inputs):
        if isinstance(c, torch.Tensor) and c.requires_grad:
            assert t.grad is not None, "missing gradient on tpu"
            assert_same(t.grad, c.grad, grad_atol or atol, grad_rtol or rtol)
    return actual
