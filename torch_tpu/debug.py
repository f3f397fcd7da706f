"""`torch_tpu.debug.compare`: where a model's tpu results first leave its CPU results.

The model runs once on each device with a forward hook on every submodule; the outputs are
compared in the order the modules finished (an inner layer finishes before the block holding
it), so the first module reported is the earliest computation that differs, not a later one that
merely inherits the difference.
"""

import copy
import dataclasses

import torch
from torch.utils._pytree import tree_flatten

__all__ = ["compare", "Comparison", "ModuleDifference", "hlo_text"]

# (rtol, atol) per dtype: looser than torch.testing's defaults for float32, since XLA and ATen
# reduce in different orders and a deep model accumulates that.
_TOLERANCES = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-5),
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
}


@dataclasses.dataclass
class ModuleDifference:
    """One module call's outputs compared: `ok` within tolerance."""

    name: str  # qualified name in the model ("" for the model itself)
    kind: str  # the module's class
    call: int  # which call of this module (a shared module runs several times)
    output: int  # which tensor of the call's flattened outputs
    ok: bool
    max_abs: float = 0.0
    # The worst |tpu - cpu| / (atol + rtol * |cpu|): above 1 is beyond tolerance.
    tolerance_ratio: float = 0.0
    index: tuple = ()  # where the largest absolute difference is
    tpu_value: object = None
    cpu_value: object = None
    problem: str = ""  # shape or dtype mismatch, or non-finite values on one side only

    def __str__(self):
        where = f"'{self.name or '<model>'}' ({self.kind}), call {self.call}, output {self.output}"
        if self.problem:
            return f"{where}: {self.problem}"
        return (
            f"{where}: max |tpu - cpu| {self.max_abs:.3g} at {list(self.index)} (tpu {self.tpu_value:.6g}, "
            f"cpu {self.cpu_value:.6g}), {self.tolerance_ratio:.3g}x the tolerance"
        )


@dataclasses.dataclass
class Comparison:
    modules: list  # ModuleDifference per compared output, in the order the modules finished
    rtol: float | None
    atol: float | None

    @property
    def first(self):
        """The earliest module output beyond tolerance, or None when everything matches."""
        return next((m for m in self.modules if not m.ok), None)

    def __str__(self):
        first = self.first
        if first is None:
            return f"torch_tpu.debug.compare: all {len(self.modules)} module outputs match"
        before = self.modules.index(first)
        return (
            f"torch_tpu.debug.compare: first difference in {first} "
            f"({before} module outputs before it match)"
        )


def _record(model, log):
    handles = []
    counts = {}
    for name, module in model.named_modules():

        def hook(module, args, output, name=name):
            counts[name] = counts.get(name, 0) + 1
            tensors = [t for t in tree_flatten(output)[0] if isinstance(t, torch.Tensor)]
            log.append(
                (name, type(module).__name__, counts[name] - 1, [t.detach() for t in tensors])
            )

        handles.append(module.register_forward_hook(hook))
    return handles


def _run(model, inputs, kwargs, device):
    log = []
    handles = _record(model, log)
    move = lambda v: v.to(device) if isinstance(v, torch.Tensor) else v  # noqa: E731
    try:
        with torch.no_grad():
            model(*[move(v) for v in inputs], **{k: move(v) for k, v in kwargs.items()})
    finally:
        for h in handles:
            h.remove()
    return log


def _difference(name, kind, call, k, got, want, rtol, atol):
    diff = ModuleDifference(name, kind, call, k, ok=False)
    got = got.cpu()
    if got.shape != want.shape or got.dtype != want.dtype:
        diff.problem = f"tpu gives {got.dtype}{list(got.shape)}, cpu {want.dtype}{list(want.shape)}"
        return diff
    if not (got.is_floating_point() or got.is_complex()):
        diff.ok = torch.equal(got, want)
        if not diff.ok:
            diff.problem = f"{int((got != want).sum())} of {got.numel()} values differ"
        return diff
    r, a = _TOLERANCES.get(got.dtype, (1e-4, 1e-5))
    r, a = rtol if rtol is not None else r, atol if atol is not None else a
    g, w = got.double(), want.double()
    if not torch.equal(torch.isnan(g), torch.isnan(w)) or not torch.equal(
        torch.isinf(g), torch.isinf(w)
    ):
        diff.problem = "non-finite values (nan/inf) at different positions"
        return diff
    finite = torch.isfinite(w)
    abs_diff = torch.where(finite, (g - w).abs(), torch.zeros_like(g))
    if abs_diff.numel() == 0:
        diff.ok = True
        return diff
    flat = int(abs_diff.argmax())
    diff.index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), abs_diff.shape))
    diff.max_abs = float(abs_diff.flatten()[flat])
    diff.tolerance_ratio = float((abs_diff / (a + r * w.abs())).max())
    diff.tpu_value, diff.cpu_value = float(g.flatten()[flat].real), float(w.flatten()[flat].real)
    diff.ok = diff.tolerance_ratio <= 1
    return diff


def compare(model, *inputs, rtol=None, atol=None, **kwargs):
    """Runs `model(*inputs, **kwargs)` on tpu and on the CPU (a copy of the model on the other
    device, made with copy.deepcopy, so instance-level changes such as hooks carry over; no
    gradients) and compares every submodule's outputs. Returns a Comparison whose
    `first` is the earliest module output beyond tolerance (None when all match); printing it
    names the module and the difference. Tolerances default per dtype (float32: rtol 1e-4,
    atol 1e-5). Random layers (dropout) differ between devices: call `model.eval()` first."""
    device = next(
        (t.device for t in list(model.parameters()) + list(model.buffers())), torch.device("cpu")
    )
    if device.type == "tpu":
        tpu_model, cpu_model = model, copy.deepcopy(model).to("cpu")
    else:
        cpu_model, tpu_model = model, copy.deepcopy(model).to("tpu")
    tpu_log = _run(tpu_model, inputs, kwargs, "tpu")
    cpu_log = _run(cpu_model, inputs, kwargs, "cpu")
    cpu_by_call = {(name, call): tensors for name, _, call, tensors in cpu_log}
    modules = []
    for name, kind, call, tensors in tpu_log:
        expected = cpu_by_call.get((name, call))
        if expected is None or len(expected) != len(tensors):
            modules.append(
                ModuleDifference(
                    name, kind, call, 0, ok=False, problem="ran differently on the CPU"
                )
            )
            continue
        for k, (got, want) in enumerate(zip(tensors, expected)):
            modules.append(_difference(name, kind, call, k, got, want, rtol, atol))
    return Comparison(modules, rtol, atol)


def _protobuf_field(data, wanted):
    """The bytes of length-delimited field `wanted` of a serialized protobuf message."""

    def varint(i):
        value, shift = 0, 0
        while True:
            byte = data[i]
            value |= (byte & 0x7F) << shift
            i, shift = i + 1, shift + 7
            if byte < 0x80:
                return value, i

    i = 0
    while i < len(data):
        tag, i = varint(i)
        number, wire = tag >> 3, tag & 7
        if wire == 2:
            size, i = varint(i)
            if number == wanted:
                return data[i : i + size]
            i += size
        elif wire == 0:
            _, i = varint(i)
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:
            break
    raise ValueError(f"field {wanted} not found")


def hlo_text(path):
    """The optimized HLO of a TORCH_TPU_DUMP_DIR entry (`*.hlo.pb` or `*.hlo_with_config.pb`)
    as text, rendered by JAX's XLA bindings (needs `pip install 'torch_tpu[jax]'`)."""
    from jax._src.lib import xla_client

    data = open(path, "rb").read()
    if path.endswith(".hlo_with_config.pb"):  # HloModuleProtoWithConfig: the module is field 1
        data = _protobuf_field(data, 1)
    return xla_client.XlaComputation(data).as_hlo_text()
