"""A torch.compile graph of ATen ops translated once into `_C._AtenGraph`, which runs it as a loop
of dispatcher calls (csrc/python/aten_graph.cpp says why). Graphs with anything else in them (a
higher-order op, a Python function) keep running as FX's generated Python."""

import operator

import torch

from torch_tpu import _C

_ARITHMETIC = {
    operator.neg: "neg",
    operator.add: "add",
    operator.sub: "sub",
    operator.mul: "mul",
    operator.floordiv: "floordiv",
    operator.mod: "mod",
    operator.lt: "lt",
    operator.le: "le",
    operator.gt: "gt",
    operator.ge: "ge",
    operator.eq: "eq",
    operator.ne: "ne",
}


# What a graph's inputs may be on a call (csrc/python/aten_graph.cpp's from_python): Dynamo passes
# symbolic sizes as ints and symbolic floats as CPU scalar tensors.
_INPUTS = (torch.Tensor, torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool, type(None))


class _Value:
    """A node's value in the graph's slots; `index` picks an element of a list value."""

    __slots__ = ("aten_graph_slot", "aten_graph_index")

    def __init__(self, slot, index=-1):
        self.aten_graph_slot, self.aten_graph_index = slot, index


class Unsupported(Exception):
    pass


def _is_size(value):
    return isinstance(value, (int, torch.SymInt, bool, torch.SymBool))


def build(gm, user_line):
    """`gm`'s graph as a `_C._AtenGraph`; raises Unsupported naming the first node it cannot run.
    `user_line(node)` is the user's line that made a node ("file:line"), or None."""
    graph = _C._AtenGraph()
    values = {}  # fx node -> _Value, a tuple of them (an op with several results) or a constant
    last_reader = {}  # slot -> index of the last graph node that reads (or writes) it
    kept = set()  # the outputs' slots

    def value(node):
        v = values[node]
        if isinstance(v, tuple):
            raise Unsupported(f"{node.name}, an op with several results, is used whole")
        return v

    def slots_of(mapped):
        slots = []
        torch.fx.node.map_aggregate(
            mapped, lambda x: slots.append(x.aten_graph_slot) if isinstance(x, _Value) else None
        )
        return slots

    def added(first, results, mapped_args):
        position = len(graph_nodes)
        graph_nodes.append(None)
        for slot in [*range(first, first + results), *slots_of(mapped_args)]:
            last_reader[slot] = position

    graph_nodes = []
    for node in gm.graph.nodes:
        target = node.target
        if node.op == "placeholder":
            if not isinstance(node.meta.get("val"), _INPUTS):
                raise Unsupported(f"input {node.name} is a {type(node.meta.get('val')).__name__}")
            values[node] = _Value(graph.add_input())
        elif node.op == "get_attr":
            values[node] = operator.attrgetter(target)(gm)
        elif node.op == "output":
            outputs = torch.fx.node.map_arg(node.args[0], value)
            kept.update(slots_of(outputs))
            many = isinstance(outputs, (list, tuple))
            graph.set_outputs(list(outputs) if many else [outputs], many)
        elif node.op == "call_function" and target is operator.getitem:
            source, index = node.args
            whole = values[source]
            values[node] = (
                whole[index] if isinstance(whole, tuple) else _Value(whole.aten_graph_slot, index)
            )
        elif node.op == "call_function" and isinstance(target, torch._ops.OpOverload):
            schema = target._schema
            args, kwargs = torch.fx.node.map_arg((list(node.args), dict(node.kwargs)), value)
            try:
                first = graph.add_op(
                    schema.name, schema.overload_name, args, kwargs, user_line(node) or ""
                )
            except (ValueError, RuntimeError) as e:
                raise Unsupported(str(e)) from e
            results = len(schema.returns)
            added(first, results, (args, kwargs))
            values[node] = (
                _Value(first) if results == 1 else tuple(_Value(first + i) for i in range(results))
            )
        elif (
            node.op == "call_function"
            and target in _ARITHMETIC
            and _is_size(node.meta.get("val"))
            and all(_is_size(getattr(a, "meta", {}).get("val", a)) for a in node.args)
        ):
            args = torch.fx.node.map_arg(list(node.args), value)
            first = graph.add_arithmetic(_ARITHMETIC[target], args)
            added(first, 1, args)
            values[node] = _Value(first)
        else:
            raise Unsupported(f"{node.name} ({node.op} {target}) is not an ATen op")
    # Each value is dropped after its last reader, as FX's generated code does (`x = None`): a
    # graph's intermediates are not all alive at its end.
    free = [[] for _ in graph_nodes]
    for slot, position in last_reader.items():
        if slot not in kept:
            free[position].append(slot)
    graph.set_free_lists(free)
    return graph
