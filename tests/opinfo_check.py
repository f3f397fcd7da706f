"""Runs PyTorch's OpInfo samples of an op on tpu against CPU: outputs, and the gradients of every
tensor argument (positional or keyword) that requires grad.

`check_sample` is the one comparison used by the op tests and by the OpInfo conformance sweep
(tests/op_conformance.py, tools/op_coverage.py); `run_forward` / `check_backward` are its two
halves, for callers that report forward and backward separately."""

import torch
from device_results import device_results
from op_check import _flat_tensors, _to_tpu, assert_same
from tie_order import tie_invariant
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
    return op, spread(list(op.sample_inputs("cpu", dtype, requires_grad=grad)), limit)


def spread(items, limit):
    """Every k-th item when there are more than `limit` (keeps the first and the spread)."""
    if limit is not None and len(items) > limit:
        step = len(items) / limit
        items = [items[int(i * step)] for i in range(limit)]
    return items


def _clone(x):
    if isinstance(x, torch.Tensor):
        return x.detach().clone().requires_grad_(x.requires_grad)
    if isinstance(x, (list, tuple)):
        return type(x)(_clone(v) for v in x)
    if isinstance(x, dict):
        return {k: _clone(v) for k, v in x.items()}
    return x


class RelToMax(float):
    """A tolerance: atol = this fraction of the largest expected magnitude (rtol 1.3e-6), for
    results whose small elements come out of cancellation between large ones."""


class CloserToFloat64:
    """A rule in place of a tolerance, for reduced-precision entries whose CPU kernel accumulates
    in that precision (the tpu accumulates in float32 and rounds once): every element that misses
    CPU's within the default tolerance must be at least as close as CPU's to a float64 evaluation
    of the same op on the same inputs. A wrong tpu result is far from float64 and still fails."""


def _as_float64(x):
    if isinstance(x, torch.Tensor):
        return x.detach().double() if x.is_floating_point() else x
    if isinstance(x, (list, tuple)):
        return type(x)(_as_float64(v) for v in x)
    if isinstance(x, dict):
        return {k: _as_float64(v) for k, v in x.items()}
    return x


def _compare_closer_to_float64(actual, expected, reference):
    assert actual.device.type == "tpu", actual.device
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (actual, expected)
    a, e, r = (
        actual.detach().cpu().double(),
        expected.detach().double(),
        reference.detach().double(),
    )
    rtol, atol = torch.testing._comparison.default_tolerances(expected.dtype)
    far = ~torch.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
    worse = far & ((a - r).abs() > (e - r).abs())
    assert not worse.any(), (
        f"{int(worse.sum())} of {a.numel()} elements differ from CPU's and are further from float64: "
        f"tpu {a[worse][:4].tolist()}, cpu {e[worse][:4].tolist()}, float64 {r[worse][:4].tolist()}"
    )


def _compare(actual, expected, rel_to_max, tol=None):
    """tol: (atol, rtol) for floating results, a RelToMax, or None for torch.testing's per-dtype
    defaults."""
    if isinstance(tol, RelToMax):
        rel_to_max, tol = float(tol), None
    atol, rtol = tol if tol is not None else (None, None)
    if rel_to_max is None or not expected.is_floating_point() or expected.numel() == 0:
        if not expected.is_floating_point() and not expected.is_complex():
            atol = rtol = None  # integers and bools compare exactly
        assert_same(actual, expected, atol=atol, rtol=rtol)
        return
    # Absolute tolerance relative to the largest expected magnitude (see the caller's comment).
    atol = rel_to_max * expected.abs().max().item()
    assert_same(actual, expected, atol=atol, rtol=1.3e-6)


class CpuReferenceError(Exception):
    """The op raised on CPU itself (e.g. jiterator entries, which need CUDA): nothing to compare."""


def _names_cpu(x):
    return (isinstance(x, str) and x == "cpu") or (isinstance(x, torch.device) and x.type == "cpu")


# Tensor arguments PyTorch requires on the CPU whatever the op's device (it reads them on the
# host), by entry name and position in [input, *args]; OpInfo makes them CPU tensors for every
# device.
HOST_ARGS = {"tensor_split": {1}}


def _tpu_args(cpu_args, name=None):
    # A device argument that names the CPU (`x.to("cpu", ...)`) names tpu on the tpu side.
    host = HOST_ARGS.get(name, ())
    moved = [a if i in host else _to_tpu(a) for i, a in enumerate(cpu_args)]
    return [("tpu" if _names_cpu(a) else a) for a in moved]


def _tpu_kwargs(cpu_kwargs):
    # Factory entries (arange, full, eye, ...) take the device as a keyword: on the tpu side it
    # names tpu.
    kwargs = _to_tpu(cpu_kwargs)
    if _names_cpu(kwargs.get("device")):
        kwargs["device"] = "tpu"
    return kwargs


def _reference(fn, args, kwargs):
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - any CPU failure means there is no reference
        raise CpuReferenceError(f"{type(exc).__name__}: {exc}") from exc


def _compare_all(op, sample, act_flat, exp_flat, rel_to_max, tol):
    # Indices among equal values are implementation-defined for a few ops (tests/tie_order.py);
    # a few results are CPU-specific by definition (tests/device_results.py).
    act_cmp = tie_invariant(op.name, sample, act_flat)
    if act_cmp is not None:
        act_flat, exp_flat = act_cmp, tie_invariant(op.name, sample, exp_flat)
    pair = device_results(op.name, sample, act_flat, exp_flat)
    if pair is not None:
        act_flat, exp_flat = pair
    for a, e in zip(act_flat, exp_flat):
        _compare(a, e, rel_to_max, tol)


def _outputs(result, sample):
    # output_process_fn_grad: OpInfo's hook for results that are not unique (signs of singular
    # vectors, ...); PyTorch's own CPU-comparison test applies it to both sides.
    fn = getattr(sample, "output_process_fn_grad", None)
    return _flat_tensors(fn(result) if fn is not None else result)


class Forward:
    """State of one sample's forward comparison, for check_backward."""

    def __init__(self, cpu_args, cpu_kwargs, tpu_args, tpu_kwargs, exp_flat, act_flat):
        self.cpu_args, self.cpu_kwargs = cpu_args, cpu_kwargs
        self.tpu_args, self.tpu_kwargs = tpu_args, tpu_kwargs
        self.exp_flat, self.act_flat = exp_flat, act_flat


def run_forward(op, sample, rel_to_max=None, fn=None, tol=None):
    """Runs `fn` (default: the OpInfo's op) on the sample on CPU and tpu and compares every
    output (values, dtype, shape, device). Returns the state check_backward needs."""
    fn = fn or op.op
    cpu_args = _clone([sample.input, *sample.args])
    cpu_kwargs = _clone(dict(sample.kwargs))
    tpu_args, tpu_kwargs = _tpu_args(cpu_args, op.name), _tpu_kwargs(cpu_kwargs)
    expected = _reference(fn, cpu_args, cpu_kwargs)
    actual = fn(*tpu_args, **tpu_kwargs)
    exp_flat, act_flat = _outputs(expected, sample), _outputs(actual, sample)
    assert len(exp_flat) == len(act_flat), (len(act_flat), len(exp_flat))
    if isinstance(tol, CloserToFloat64):
        ref_flat = _outputs(fn(*_as_float64(cpu_args), **_as_float64(cpu_kwargs)), sample)
        for a, e, r in zip(act_flat, exp_flat, ref_flat):
            _compare_closer_to_float64(a, e, r)
    else:
        _compare_all(op, sample, act_flat, exp_flat, rel_to_max, tol)
    return Forward(cpu_args, cpu_kwargs, tpu_args, tpu_kwargs, exp_flat, act_flat)


def check_backward(fwd, rel_to_max=None, tol=None):
    """Backward of the outputs weighted by a fixed random cotangent; compares the gradients of
    every input that requires grad. Returns False when there was nothing to differentiate."""
    inputs_cpu = [
        t for t in _flat_tensors([fwd.cpu_args, list(fwd.cpu_kwargs.values())]) if t.requires_grad
    ]
    inputs_tpu = [
        t for t in _flat_tensors([fwd.tpu_args, list(fwd.tpu_kwargs.values())]) if t.requires_grad
    ]
    outs = [(e, a) for e, a in zip(fwd.exp_flat, fwd.act_flat) if e.requires_grad and e.numel()]
    if not inputs_cpu or not outs:
        return False
    gen = torch.Generator().manual_seed(1234)
    cots = [torch.randn(e.shape, generator=gen, dtype=torch.float64).to(e.dtype) for e, _ in outs]
    torch.autograd.backward([e for e, _ in outs], cots)
    torch.autograd.backward([a for _, a in outs], [c.to("tpu") for c in cots])
    for c, t in zip(inputs_cpu, inputs_tpu):
        if c.grad is None:
            assert t.grad is None
            continue
        assert t.grad is not None, "missing gradient on tpu"
        _compare(t.grad, c.grad, rel_to_max, tol)
    return True


def check_out(op, sample, tol=None):
    """The out= variant: the op writes into tpu tensors of the expected shapes and dtypes and
    returns them; the values equal CPU's functional result."""
    cpu_args = [
        x.detach() if isinstance(x, torch.Tensor) else x
        for x in _clone([sample.input, *sample.args])
    ]
    cpu_kwargs = {
        k: v.detach() if isinstance(v, torch.Tensor) else v
        for k, v in _clone(dict(sample.kwargs)).items()
    }
    expected = _reference(op.op, cpu_args, cpu_kwargs)
    tpu_args, tpu_kwargs = _tpu_args(cpu_args, op.name), _tpu_kwargs(cpu_kwargs)

    def empty(e):
        return (
            torch.empty(e.shape, dtype=e.dtype, device="tpu") if isinstance(e, torch.Tensor) else e
        )

    if isinstance(expected, torch.Tensor):
        out = empty(expected)
    elif isinstance(expected, (tuple, list)) and all(isinstance(e, torch.Tensor) for e in expected):
        out = tuple(empty(e) for e in expected)
    else:
        return False  # no tensor result to write
    try:  # samples whose out= form CPU rejects (nonzero with as_tuple=True) exercise nothing
        cpu_out = out.cpu() if isinstance(out, torch.Tensor) else tuple(o.cpu() for o in out)
        cpu_returned = op.op(*cpu_args, **cpu_kwargs, out=cpu_out)
    except Exception:  # noqa: BLE001
        return False
    returned = op.op(*tpu_args, **tpu_kwargs, out=out)
    outs = [out] if isinstance(out, torch.Tensor) else list(out)
    if returned is not None or cpu_returned is not None:  # ops writing an out= list return nothing
        rets = [returned] if isinstance(returned, torch.Tensor) else list(returned)
        assert len(rets) == len(outs) and all(r is o for r, o in zip(rets, outs)), (
            "out= not returned"
        )
    # Results defined only up to sign (singular vectors, ...) compare through the sample's
    # output_process_fn_grad, as in the forward check.
    fn = getattr(sample, "output_process_fn_grad", None)
    actual = out if isinstance(out, torch.Tensor) else type(expected)(out)
    act_flat = _outputs(actual, sample) if fn else outs
    exp_flat = _outputs(expected, sample) if fn else _flat_tensors(expected)
    _compare_all(op, sample, act_flat, exp_flat, None, tol)
    return True


def check_sample(op, sample, grad=True, rel_to_max=None, fn=None):
    """Runs `fn` (default: the OpInfo's op) on the sample on CPU and tpu; compares every output
    and, with grad, the gradients of a fixed random cotangent. rel_to_max: floating results are
    compared with atol = rel_to_max * max|expected| (for samples whose magnitudes make f32
    summation order matter)."""
    fwd = run_forward(op, sample, rel_to_max, fn)
    if grad:
        check_backward(fwd, rel_to_max)
