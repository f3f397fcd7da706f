"""The signature of a JAX function made into a torch op: which arguments are arrays (tensors on
the call), which are compile-time constants, what it returns, and the `torch.library` schema
that says so. Checked once, when `jax_op` is applied, so a mistake is reported at the definition."""

import dataclasses
import inspect
import types
import typing

_CONSTANT_TYPES = {int: "int", float: "float", bool: "bool", str: "str"}


@dataclasses.dataclass(frozen=True)
class Param:
    name: str
    array: bool  # a jax.Array (a tensor on the call); otherwise a compile-time constant
    keyword_only: bool


@dataclasses.dataclass(frozen=True)
class Signature:
    params: tuple
    # What the JAX function returns. None: one array; an int n: a tuple of n arrays; "list": any
    # number of arrays.
    returns: object
    donated: tuple  # the names of the donated arguments, in donate_argnums order
    # What the op returns once donated outputs are written in place: "one", "list" or a count.
    op_returns: object
    schema: str
    python: inspect.Signature  # binds a call's arguments to the parameters by name

    def bind(self, args, kwargs):
        bound = self.python.bind(*args, **kwargs)
        bound.apply_defaults()
        return [bound.arguments[p.name] for p in self.params]


def _optional(annotation):
    """(inner annotation, True) for `X | None` and Optional[X]; (annotation, False) otherwise."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(members) == 1 and len(typing.get_args(annotation)) == 2:
            return members[0], True
    return annotation, False


def _returns(annotation, array_type, where):
    if annotation is inspect.Parameter.empty or annotation is array_type:
        return None
    origin, members = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is tuple and len(members) == 2 and members[1] is Ellipsis:
        origin, members = list, members[:1]
    if origin is list and members == (array_type,):
        return "list"
    if origin is tuple and members and all(m is array_type for m in members):
        return len(members)
    raise TypeError(
        f"{where}: unsupported return annotation {annotation!r}; a jax_op returns jax.Array, "
        "tuple[jax.Array, ...] of a fixed length, or list[jax.Array]"
    )


def _schema_default(value):
    if isinstance(value, str):
        if '"' in value or "\\" in value:
            raise TypeError(
                f"a str default of a jax_op cannot contain quotes or backslashes: {value!r}"
            )
        return f'"{value}"'
    return repr(value)


def parse(fn, op_name, array_type, donate_argnums=None):
    """The Signature of `fn`, or a TypeError naming the argument that cannot be an op argument."""
    where = f"jax_op {op_name!r} ({getattr(fn, '__qualname__', fn)})"
    python = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn)
    except Exception as e:  # an annotation that does not evaluate (a name not imported)
        raise TypeError(f"{where}: its annotations cannot be evaluated: {e}") from e
    params, schema_args, keyword_only_started = [], [], False
    donated_positions = list(donate_argnums or ())
    for p in python.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(f"{where}: *args and **kwargs cannot be op arguments ('{p.name}')")
        if p.kind is p.POSITIONAL_ONLY:
            raise TypeError(f"{where}: positional-only arguments are not supported ('{p.name}')")
        if p.name not in hints:
            raise TypeError(
                f"{where}: argument '{p.name}' has no annotation; annotate arrays as jax.Array "
                "(or jax.Array | None) and compile-time constants as int, float, bool or str"
            )
        inner, optional = _optional(hints[p.name])
        array = inner is array_type
        if not array and inner not in _CONSTANT_TYPES:
            raise TypeError(
                f"{where}: argument '{p.name}' is annotated {hints[p.name]!r}; a jax_op argument "
                "is a jax.Array, an optional jax.Array, or an int, float, bool or str constant"
            )
        accepted = (int, float) if inner is float else inner  # `eps: float = 1`, as torch allows
        if (
            p.default is not p.empty
            and p.default is not None
            and (array or not isinstance(p.default, accepted))
        ):
            raise TypeError(
                f"{where}: argument '{p.name}' has default {p.default!r}, not a {inner.__name__}"
            )
        if p.default is None and not optional:
            optional = True  # `x: jax.Array = None` is an optional array, as in torch schemas
        keyword_only = p.kind is p.KEYWORD_ONLY
        if keyword_only and not keyword_only_started:
            schema_args.append("*")
            keyword_only_started = True
        text = "Tensor" if array else _CONSTANT_TYPES[inner]
        if len(params) in donated_positions:  # written in place: an alias set of its own
            text += f"({chr(ord('a') + donated_positions.index(len(params)))}!)"
        text += ("?" if optional else "") + f" {p.name}"
        if p.default is not p.empty:
            text += "=" + _schema_default(p.default)
        schema_args.append(text)
        params.append(Param(p.name, array, keyword_only))
    if not any(p.array for p in params):
        raise TypeError(
            f"{where}: needs at least one jax.Array argument (its tensors choose the device)"
        )
    for i in donated_positions:
        if not (isinstance(i, int) and 0 <= i < len(params) and params[i].array):
            raise TypeError(
                f"{where}: donate_argnums entry {i!r} is not the position of a jax.Array argument"
            )
    returns = _returns(hints.get("return", inspect.Parameter.empty), array_type, where)
    op_returns = {None: 1, "list": "list"}.get(returns, returns)
    if donated_positions:
        if op_returns == "list":
            raise TypeError(
                f"{where}: donate_argnums needs a fixed number of outputs, not list[jax.Array]"
            )
        op_returns -= len(donated_positions)
        if op_returns < 0:
            raise TypeError(
                f"{where}: donates {len(donated_positions)} arguments but returns fewer arrays"
            )
    if op_returns == 1 and (returns is None or donated_positions):
        op_returns, result = "one", "Tensor"
    elif op_returns == "list":
        result = "Tensor[]"
    else:
        result = "(" + ", ".join(["Tensor"] * op_returns) + ")"
    schema = "(" + ", ".join(schema_args) + ") -> " + result
    donated = tuple(params[i].name for i in donated_positions)
    return Signature(tuple(params), returns, donated, op_returns, schema, python)
