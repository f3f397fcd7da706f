"""`torch.compile(model, backend="tpu")`: each Dynamo graph becomes one StableHLO program.

AOTAutograd splits training graphs into a forward and a backward graph of ATen ops. Each graph
is run through the same kernels and lowerings as eager mode, recorded as one fused graph (no
second set of lowerings) and launched as one program at the end of the call; the compile cache
(memory and disk) keys it like any fused graph, so a warm process compiles nothing.

The backend is found through the `torch_dynamo_backends` entry point, so this module (and
torch._dynamo) is imported only when `torch.compile(..., backend="tpu")` is used; importing
torch_tpu does not change the default backend for other devices.
"""

import linecache
import re
import sys

import torch
from torch._dynamo import device_interface as _di
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func
from torch.fx.passes.split_module import split_module

import torch_tpu
from torch_tpu import _C, aten_graph
from torch_tpu import device as _device
from torch_tpu import streams as _streams

__all__ = ["TpuInterface", "tpu_backend"]


class TpuInterface(_di.DeviceInterface):
    """Dynamo's view of the `tpu` device. Stream and Event subclass torch.Stream / torch.Event,
    as Dynamo requires of a device interface's classes."""

    Stream = _streams.Stream
    Event = _streams.Event

    class device:
        def __new__(cls, device):
            return _device.device(device)

    class Worker:
        @staticmethod
        def set_device(device):
            _device.set_device(device)

        @staticmethod
        def current_device():
            return _device.current_device()

        @staticmethod
        def get_device_properties(device=None):
            return _device.get_device_properties(device)

    current_device = staticmethod(_device.current_device)
    set_device = staticmethod(_device.set_device)
    device_count = staticmethod(_device.device_count)
    is_available = staticmethod(_device.is_available)
    synchronize = staticmethod(_device.synchronize)
    stream = staticmethod(_streams.stream)
    current_stream = staticmethod(_streams.current_stream)
    set_stream = staticmethod(_streams.set_stream)
    _set_stream_by_id = staticmethod(_streams._set_stream_by_id)
    is_bf16_supported = staticmethod(_device.is_bf16_supported)

    @staticmethod
    def maybe_exchange_device(device):
        previous = _device.current_device()
        if device >= 0 and device != previous:
            _device.set_device(device)
        return previous

    exchange_device = maybe_exchange_device

    @staticmethod
    def get_compute_capability(device=None):
        return _C._runtime_info()["device_kind"]

    @staticmethod
    def memory_allocated(device=None):
        return _device.memory_allocated(device)

    @classmethod
    def is_dtype_supported(cls, dtype, including_emulation=False):
        return True


def _capture_tpu_optimizer_state():
    # Dynamo makes a compiled optimizer step "capturable" (step counters on the device, so the
    # step is one device program) only for CUDA and XPU parameters; tpu parameters get the same.
    from torch._dynamo.variables.optimizer import OptimizerVariable

    original = OptimizerVariable._set_capturable

    def set_capturable(self, tx):
        for group in self.value.param_groups:
            params = group.get("params", [])
            if (
                "capturable" in group
                and params
                and all(p.device.type == "tpu" and p not in self.value.state for p in params)
            ):
                group["capturable"] = True
        return original(self, tx)

    OptimizerVariable._set_capturable = set_capturable


def _register_device_interface():
    # torch's own registry maps "tpu" to an interface for another project; it fills the registry
    # lazily, so fill it first and then take the name.
    _di.get_registered_device_interfaces()
    _di.register_interface_for_device("tpu", TpuInterface)
    for i in range(_device.device_count()):
        _di.register_interface_for_device(f"tpu:{i}", TpuInterface)


# FX-generated file name -> {line: "user_file:line"}: an op recorded by a compiled graph (and a
# runtime check failing in it) names the user's line, not the generated code.
_user_lines = {}
_STACK_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _resolve_generated_line(filename, line):
    return _user_lines.get(filename, {}).get(line)


def _user_line(node):
    """The user's line that made an FX node ("file:line"), or None."""
    frames = _STACK_FRAME.findall(node.meta.get("stack_trace") or "")
    return f"{frames[-1][0]}:{frames[-1][1]}" if frames else None


def _index_user_lines(gm):
    if getattr(gm, "_needs_recompile", lambda: False)():
        gm.real_recompile()  # a lazy GraphModule generates its code on first use
    filename = gm.forward.__code__.co_filename
    nodes = {n.name: n for n in gm.graph.nodes}
    table = {}
    for number, text in enumerate(linecache.getlines(filename), start=1):
        node = nodes.get(text.strip().split(" = ", 1)[0])
        line = _user_line(node) if node else None
        if line:
            table[number] = line
    _user_lines[filename] = table


_TENSOR = object()  # a tensor slot in a captured graph's output template


def _convert_element_type_as_to_copy(gm):
    """AOTAutograd writes dtype casts as prims.convert_element_type, whose kernel is Python (its
    meta function, an empty tensor and a copy: 70 us a call against a few for an ATen op); a
    graph recorded on every call (its sizes vary) pays that per cast. aten._to_copy is the same
    cast (strides kept for dense inputs) with our kernel."""
    changed = False
    for node in gm.graph.nodes:
        if (
            node.op == "call_function"
            and node.target is torch.ops.prims.convert_element_type.default
        ):
            source, dtype = node.args
            node.target = torch.ops.aten._to_copy.default
            node.args, node.kwargs = (source,), {"dtype": dtype}
            changed = True
    if changed:
        gm.recompile()
    return gm


def _compile_graph(gm: torch.fx.GraphModule, example_inputs):
    # Symbolic sizes arrive as ints on every call: the recorded graph runs at the call's sizes,
    # in the program of their bucket once they have varied (docs/dynamic_shapes.md).
    gm = _convert_element_type_as_to_copy(gm)
    if any(_is_collective(n) for n in gm.graph.nodes):
        gm = _split_at_collectives(gm)
        return make_boxed_func(gm)
    return make_boxed_func(_replayable(gm))


# Functional collectives (DTensor, FSDP2, torch.compile of torch.distributed code). tpu_dist runs
# them on the host, outside any program.
_COLLECTIVE_NAMESPACES = ("_c10d_functional", "_c10d_functional_autograd", "c10d_functional")


def _is_collective(node):
    return (
        node.op == "call_function"
        and getattr(node.target, "namespace", None) in _COLLECTIVE_NAMESPACES
    )


class _Replayed(torch.nn.Module):
    """A piece of a split graph, run as a replayable program."""

    def __init__(self, gm):
        super().__init__()
        self.run = _replayable(gm)

    def forward(self, *args):
        return self.run(*args)


def _split_at_collectives(gm):
    """Cuts the graph at its functional collectives: each stretch of computation between them is
    its own replayable program, the collectives run eagerly in between. Unsplit, the collectives'
    host reads would cut the recorded program on every call, so it could never be replayed."""
    partition, previous, ids = 0, None, {}
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        collective = _is_collective(node)
        if previous is not None and collective != previous:
            partition += 1
        ids[node], previous = partition, collective
    split = split_module(gm, None, lambda n: ids[n], keep_original_order=True, tuple_return=True)
    for name, piece in list(split.named_children()):
        if not any(_is_collective(n) for n in piece.graph.nodes):
            setattr(split, name, _Replayed(piece))
    return split


def _replayable(gm):
    """`gm` run through the kernels as one fused program, replayed on later calls."""
    _index_user_lines(gm)
    name = gm.forward.__code__.co_filename
    try:
        call = aten_graph.build(gm, _user_line)
    except aten_graph.Unsupported:
        call = gm  # FX's generated Python runs the graph
    # The first call records the graph through the kernels (one fused program); when that
    # capture is replayable, later calls with the same input layout and non-tensor inputs run
    # the captured program directly.
    replayable = _C._ReplayableGraph()
    captured = None  # (non-tensor inputs, output template) of the capture
    reported = set()  # reasons already logged: a decode loop would repeat one every call
    # A graph whose symbolic sizes (its int inputs) changed since its last call, whose recording
    # ran padded (its sizes then stay dynamic), or with an input not on tpu can not be captured:
    # it is recorded inline, one fused graph with the eager work around it (a decode step's
    # token bookkeeping), not cut where the model's layers repeat their ops. Captured alone,
    # each part would be a program of its own, compiled again for every bucket.
    padded = False
    last_others = None

    def report(why):
        if _C._log_recompiles() and why not in reported:
            reported.add(why)
            print(
                f"torch_tpu: compiled graph {name} is recorded again on every call: {why}",
                file=sys.stderr,
            )

    def run(*args):
        nonlocal last_others
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        others = [a for a in args if not isinstance(a, torch.Tensor)]
        sizes_changed = others != last_others and any(isinstance(a, int) for a in others)
        last_others = others
        with torch_tpu.eager_mode("fused"):
            if captured is not None and captured[0] == others:
                out = replayable.replay(tensors)
                if out is not None:
                    it = iter(out)
                    return [next(it) if slot is _TENSOR else slot for slot in captured[1]]
            if padded or sizes_changed:
                report(_C._RAN_PADDED if padded else "its symbolic sizes change between calls")
            elif any(t.device.type != "tpu" for t in tensors):
                # Never captured (Dynamo passes symbolic floats as CPU scalars).
                report("an input is not a tpu tensor")
            else:
                return record_and_capture(args, tensors, others)
            repeat_cuts = _C._set_repeat_cuts(False)
            try:
                return call(*args)
            finally:
                _C._set_repeat_cuts(repeat_cuts)

    def record_and_capture(args, tensors, others):
        nonlocal captured, padded
        # Eager work recorded before the call stays a separate program. A recording that cannot
        # be captured leaves earlier captures of other layouts.
        replayable.begin(tensors)
        out = None
        try:
            out = call(*args)
        finally:
            results = list(out) if isinstance(out, (list, tuple)) else []
            outputs = [o for o in results if isinstance(o, torch.Tensor)]
            # Runs the recorded graph (asynchronously) whether or not it can be replayed.
            why = replayable.end(outputs)
            padded = why == _C._RAN_PADDED
        if why:
            report(why)
        else:
            captured = (others, [_TENSOR if isinstance(o, torch.Tensor) else o for o in results])
        return out

    return run


tpu_backend = aot_autograd(fw_compiler=_compile_graph, bw_compiler=_compile_graph)

_register_device_interface()
_capture_tpu_optimizer_state()
_C._set_generated_code_resolver(_resolve_generated_line)
