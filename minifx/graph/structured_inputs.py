"""The tracer's unusual inputs: `*args`, `**kwargs`, keyword-only parameters,
`concrete_args` given as a tuple, and inputs given as structures.

`Tracer.create_args_for_root` makes one placeholder per parameter; what it
needs beyond that, to match torch.fx, lives here:

- `*args` and `**kwargs` become one placeholder each (`*args`, `**kwargs`),
  and the traced function is rebuilt to take every input positionally
  (`all_positional`);
- a tuple of `concrete_args` is matched to the parameters by position
  (`concrete_args_by_name`);
- an input given as a structure (`concrete_args={"pair": (PH, 2)}`) makes the
  graph return its outputs flattened into a list; `PytreeInfo` keeps both
  structures for chapter 3's code generator to put back (`flattening_outputs`).
"""

from __future__ import annotations

import inspect
from types import FunctionType
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

from torch.utils import _pytree as pytree

from .errors import ConcreteArgsCountError

if TYPE_CHECKING:
    from .graph import Graph

_PLAIN_KINDS = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


class PytreeInfo(NamedTuple):
    """How a graph traced with structured `concrete_args` flattens its inputs and outputs.

    Attributes:
        arg_names: the traced function's parameter names (`self` first for a module).
        in_spec: the structure of the inputs, as `torch.utils._pytree` describes it.
        out_spec: the structure of the outputs, which the graph returns flattened.
    """

    arg_names: list
    in_spec: Any
    out_spec: Any


def named_parameters(signature: inspect.Signature) -> list[str]:
    """The parameters that have a name of their own: positional, then keyword-only."""
    return [
        p.name
        for p in signature.parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def star_parameters(signature: inspect.Signature) -> list[str]:
    """`*args` and `**kwargs` (under their own names), as placeholder targets."""
    stars = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    return [stars[p.kind] + p.name for p in signature.parameters.values() if p.kind in stars]


def takes_only_plain_parameters(signature: inspect.Signature) -> bool:
    """No `*args`, `**kwargs` or keyword-only parameter: every input can be passed by position."""
    return all(p.kind in _PLAIN_KINDS for p in signature.parameters.values())


def all_positional(fn: Callable, count: int) -> Callable:
    """A copy of `fn` whose keyword-only, `*args` and `**kwargs` parameters are plain
    positional ones, so the tracer can pass one Proxy for each."""
    code = fn.__code__
    # The code object, not the signature, decides how a call binds its
    # arguments, so the varargs flags are cleared there.
    star_flags = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS
    code = code.replace(
        co_flags=code.co_flags & ~star_flags, co_argcount=count, co_kwonlyargcount=0
    )
    return FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


def concrete_args_by_name(names: list[str], values: tuple) -> dict[str, Any]:
    """`concrete_args` given as a tuple, matched to the parameter `names` by position.

    Raises:
        ConcreteArgsCountError: if there are not as many values as names (a `TypeError`,
            also the `RuntimeError` torch.fx raises).
    """
    if len(values) != len(names):
        raise ConcreteArgsCountError(
            f"concrete_args has {_count(len(values), 'value')} but the "
            f"traced function takes {_count(len(names), 'input')}"
            + (f" ({', '.join(names)})." if names else ".")
        )
    return dict(zip(names, values))


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


def has_structured_inputs(args: list) -> bool:
    """Whether any input (a Proxy, or a structure of them and constants) is a structure."""
    in_spec = pytree.tree_flatten(tuple(args))[1]
    return any(not spec.is_leaf() for spec in in_spec.children())


def flattening_outputs(graph: Graph, fn: Callable, arg_names: list[str], args: list) -> Callable:
    """`fn`, returning the leaves of its result as a flat list; the input and
    output structures are kept in `graph.pytree_info`, as torch.fx does."""
    in_spec = pytree.tree_flatten(tuple(args))[1]

    def flattened(*args: Any) -> list:
        leaves, out_spec = pytree.tree_flatten(fn(*args))
        graph.pytree_info = PytreeInfo(arg_names, in_spec, out_spec)
        return leaves

    # The output is the leaves, which `fn`'s return annotation does not describe:
    # like torch.fx, give the output node no type (the tracer reads these).
    flattened.__annotations__ = {}
    return flattened
