"""`jax_op`: a JAX function (a Pallas kernel, or any jax.numpy code) as a `torch.library` op.

The op's tpu implementation traces and lowers the function once per (input shapes, dtypes,
constants) and runs the module as `torch_tpu::imported_call`: its own cached executable in
strict mode (the module text is part of the memory and disk cache key), a `func.call` inside the
recorded program in fused mode and in `torch.compile(backend="tpu")` graphs. Its fake
implementation is JAX's abstract evaluation, so Dynamo traces through the op without cutting the
graph.
"""

import torch

from torch_tpu import _C
from torch_tpu.pallas import lowering
from torch_tpu.pallas.signature import parse


class _JaxFunction:
    """An op's implementations, and its traces by (shapes, dtypes, constants)."""

    def __init__(self, name, fn, signature):
        self.name = name
        self.where = f"jax_op {name!r}"
        self.fn = fn
        self.signature = signature
        self.names = [p.name for p in signature.params]
        self.traces = {}

    def _trace(self, values):
        key = tuple(
            (tuple(v.shape), v.dtype) if isinstance(v, torch.Tensor) else (type(v), v)
            for v in values
        )
        traced = self.traces.get(key)
        if traced is None:
            traced = lowering.trace(self.fn, self.signature, values, self.name, self._order(values))
            self.traces[key] = traced
        return traced

    def _donated(self, values):
        return [values[self.names.index(n)] for n in self.signature.donated]

    def _order(self, values):
        """The flat outputs with those written into donated arguments first: each donated
        argument takes the first free output of its shape and dtype, as buffer donation does."""
        if not self.signature.donated:
            return None
        plain = lowering.trace(self.fn, self.signature, values, self.name)
        order, free = [], list(range(len(plain.outputs)))
        for name, t in zip(self.signature.donated, self._donated(values)):
            match = next((k for k in free if plain.outputs[k] == (tuple(t.shape), t.dtype)), None)
            if match is None:
                raise RuntimeError(
                    f"{self.where}: donated argument '{name}' ({t.dtype}{list(t.shape)}) matches no "
                    "output of the same shape and dtype"
                )
            order.append(match)
            free.remove(match)
        return order + free

    def _device(self, values):
        device = next((v.device for v in values if isinstance(v, torch.Tensor)), None)
        if device is None:
            raise RuntimeError(
                f"{self.where}: every array argument is None; a tensor chooses the device"
            )
        return device

    def _results(self, outputs):
        kind = self.signature.op_returns
        if kind == "one":
            return outputs[0]
        return list(outputs) if kind == "list" else tuple(outputs) if outputs else None

    def run(self, *args, **kwargs):
        values = self.signature.bind(args, kwargs)
        self._device(values)
        tensors = []
        for p, v in zip(self.signature.params, values):
            if p.array and v is not None:
                if v.device.type != "tpu":
                    raise RuntimeError(
                        f"{self.where}: argument '{p.name}' must be a tpu tensor, got a {v.device.type} tensor"
                    )
                tensors.append(v)
        traced = self._trace(values)
        if traced.module is None:
            lowering.lower(traced)
        outputs = _C._run_imported(traced.module, tensors, traced.metas, self._donated(values))
        return self._results(outputs)

    def fake(self, *args, **kwargs):
        values = self.signature.bind(args, kwargs)
        device = self._device(values)
        traced = self._trace(values)
        kept = traced.outputs[len(self.signature.donated) :]
        return self._results([torch.empty(s, dtype=d, device=device) for s, d in kept])


def jax_op(name, fn=None, /, *, donate_argnums=None):
    """Makes the JAX function `fn` the torch op `name` ("namespace::op_name"); a decorator when
    `fn` is omitted. Returns the `torch.library.custom_op` (call it, `register_autograd` on it).

    Arguments annotated `jax.Array` (or `jax.Array | None`) take tensors; arguments annotated
    int, float, bool or str are compile-time constants (a new value traces and compiles anew).
    The return annotation is jax.Array (the default), tuple[jax.Array, ...] or list[jax.Array].

    `donate_argnums` are positions of array arguments whose buffers the outputs reuse, as in
    `jax.jit`: each donated argument receives, in place, the first output of its shape and dtype
    (the op is declared to mutate it), and the op returns the other outputs.
    """
    if fn is None:
        return lambda f: jax_op(name, f, donate_argnums=donate_argnums)
    jax = lowering.import_jax()
    signature = parse(fn, name, jax.Array, tuple(donate_argnums or ()))
    state = _JaxFunction(name, fn, signature)
    op = torch.library.custom_op(
        name, state.run, mutates_args=signature.donated, schema=signature.schema
    )
    op.register_fake(state.fake)
    op._jax_function = state  # its traces, for tests and debugging
    return op
