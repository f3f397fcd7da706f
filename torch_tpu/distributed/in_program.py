"""In-program collectives: torch.distributed's collectives over N tpu devices of this process,
each one StableHLO program (``stablehlo.all_reduce``, ``all_gather``, ``reduce_scatter``,
``all_to_all``, ``collective_permute``) compiled for N replicas and launched on all N devices at
once. No host round trip and no second process: the tensors' device buffers are the program's
inputs.

Every function takes one tensor per device: ``tensors[r]`` is replica ``r``'s, on its own tpu
device (``tpu:r`` in the usual layout, but any distinct devices work). ``groups`` are lists of
replica positions (indices into that list), all of one size; ``None`` is one group of all.
Collectives work on the tensors' elements in order, as torch.distributed's ``*_tensor`` and
``*_single`` collectives do on contiguous tensors (non-contiguous tensors are copied first).

Reduce ops are ``torch.distributed.ReduceOp`` values: SUM, AVG (sum divided by the group size;
integers truncate, as NCCL's AVG does), PRODUCT, MIN, MAX, BAND, BOR, BXOR (integers and bool)
and PREMUL_SUM (``torch.distributed._make_nccl_premul_sum(factor)``, or PREMUL_SUM with
``premul_factor=``).
"""

import numbers

import torch

from torch_tpu import _C

# torch.distributed.ReduceOp.RedOpType numbering (the C++ side uses the same).
_SUM, _PREMUL_SUM = 0, 8
_OP_NAMES = ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM")
# Platforms whose plugin, with the client this runtime creates, runs a program's collectives
# across processes: none yet (see supports_multiprocess).
_CROSS_PROCESS_PLATFORMS = frozenset()


def supports_multiprocess():
    """Whether in-program collectives can span processes (one device per process, torchrun).

    False on XLA:CPU: its plugin has only in-process collectives and ignores the key-value
    store callbacks, so a program run in two processes silently reduces each process's own
    data. Plugins that do cross-process collectives (libtpu, XLA:GPU) need the client created
    with those callbacks, which this runtime does not pass yet: False there too, for now.
    Within one process, N devices always work (:func:`all_reduce` and friends).
    """
    return _C._runtime_info()["platform_name"] in _CROSS_PROCESS_PLATFORMS


def _reduce_op(op, premul_factor):
    """(RedOpType number, factor) of a ReduceOp, a ReduceOp.RedOpType or its int."""
    factor = None
    inner = getattr(op, "op", None)  # a torch.distributed.ReduceOp object (premul sum, ...)
    if inner is not None and not isinstance(op, numbers.Integral):
        factor = getattr(op, "factor", None)
        op = inner
    kind = int(op)
    if not 0 <= kind < len(_OP_NAMES):
        raise ValueError(f"unsupported reduce op {op!r}")
    if premul_factor is not None:
        if kind != _PREMUL_SUM:
            raise ValueError(f"premul_factor given with ReduceOp.{_OP_NAMES[kind]}")
        factor = premul_factor
    if kind == _PREMUL_SUM:
        if isinstance(factor, torch.Tensor):
            factor = factor.item()
        if not isinstance(factor, numbers.Real):
            raise ValueError(
                "ReduceOp.PREMUL_SUM needs a factor: _make_nccl_premul_sum(f) or premul_factor=f"
            )
        return kind, float(factor)
    return kind, 1.0


def _groups(groups):
    return [] if groups is None else [list(map(int, g)) for g in groups]


def _run(name, inputs, op=_SUM, premul=1.0, groups=None, pairs=()):
    inputs = list(inputs)
    return _C._in_program_collective(
        name, inputs, op, premul, _groups(groups), [tuple(p) for p in pairs]
    )


def _group_size(inputs, groups):
    return len(groups[0]) if groups else len(inputs)


def _check_outputs(outputs, inputs, numel, what):
    """Before anything runs: one output per input, same device and dtype, `numel` elements."""
    if len(outputs) != len(inputs):
        raise ValueError(f"{what}: {len(outputs)} outputs for {len(inputs)} inputs")
    for r, (out, inp) in enumerate(zip(outputs, inputs)):
        if out.device != inp.device:
            raise ValueError(f"{what}: output {r} is on {out.device}, its input on {inp.device}")
        if out.dtype != inp.dtype:
            raise TypeError(f"{what}: output {r} has dtype {out.dtype}, its input {inp.dtype}")
        if out.numel() != numel:
            raise ValueError(f"{what}: output {r} has {out.numel()} elements, expected {numel}")


def _write(outputs, results):
    for out, res in zip(outputs, results):
        out.copy_(res.view(out.shape))


def all_reduce(tensors, op=_SUM, *, groups=None, premul_factor=None):
    """In place: every tensor becomes the reduction over its group (torch.distributed.all_reduce)."""
    kind, factor = _reduce_op(op, premul_factor)
    _write(tensors, _run("all_reduce", tensors, kind, factor, groups))


def all_gather_into_tensor(outputs, inputs, *, groups=None):
    """outputs[r] <- the group's inputs concatenated in group order (output has group-size
    times the input's elements)."""
    inputs = list(inputs)
    if inputs:
        numel = inputs[0].numel() * _group_size(inputs, groups)
        _check_outputs(outputs, inputs, numel, "all_gather_into_tensor")
    _write(outputs, _run("all_gather", inputs, groups=groups))


def all_gather(inputs, *, groups=None):
    """New tensors: for each replica, the list of its group's inputs (torch.distributed.all_gather)."""
    results = _run("all_gather", inputs, groups=groups)
    return [list(res.view(-1, *inp.shape).unbind(0)) for res, inp in zip(results, inputs)]


def reduce_scatter_tensor(outputs, inputs, op=_SUM, *, groups=None, premul_factor=None):
    """outputs[r] <- block i (of group-size equal blocks) reduced over the group, for the
    replica at position i of its group."""
    kind, factor = _reduce_op(op, premul_factor)
    inputs = list(inputs)
    group = _group_size(inputs, groups)
    # An input that does not split evenly is the C++ side's error, raised by _run.
    if inputs and inputs[0].numel() % group == 0:
        _check_outputs(outputs, inputs, inputs[0].numel() // group, "reduce_scatter_tensor")
    _write(outputs, _run("reduce_scatter", inputs, kind, factor, groups))


def all_to_all_single(outputs, inputs, *, groups=None):
    """Even splits: input r's block i goes to the replica at position i of r's group;
    outputs[r] <- the blocks it receives, in group order."""
    inputs = list(inputs)
    if inputs:
        _check_outputs(outputs, inputs, inputs[0].numel(), "all_to_all_single")
    _write(outputs, _run("all_to_all", inputs, groups=groups))


def permute(tensors, pairs):
    """New tensors: for each (source, target) pair, replica target gets source's tensor
    (send/recv pairs, one program); a replica that is no pair's target gets zeros."""
    results = _run("permute", tensors, pairs=pairs)
    return [res.view(t.shape) for res, t in zip(results, tensors)]
