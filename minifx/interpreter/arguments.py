"""What `Interpreter.run` and `boxed_run` are given, checked as torch.fx users expect,
and the values a node's arguments stand for (`map_nodes`).

The Interpreter's teaching code (`interpreter.py`) assumes one value per
placeholder. These helpers refuse, with a message that says how to fix the
call, the inputs it cannot run: more arguments than placeholders, a
`boxed_run` list of the wrong length, a module without a minifx graph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator

import torch

from ..graph import Graph, Node
from .errors import NoGraphToRun

if TYPE_CHECKING:
    from .interpreter import Interpreter


def boxed_inputs(graph: Graph, args_list: list) -> dict[Node, Any]:
    """Placeholder -> value for `boxed_run`, emptying `args_list`.

    Raises:
        RuntimeError: if `args_list` does not have one value per placeholder.
    """
    placeholders = graph.find_nodes(op="placeholder")
    if len(args_list) != len(placeholders):
        raise RuntimeError(
            f"boxed_run got {len(args_list)} arguments, but the graph has "
            f"{len(placeholders)} placeholders ({_names(placeholders)}): "
            f"{'extra' if len(args_list) > len(placeholders) else 'missing'} arguments. "
            "Pass exactly one value per placeholder, in order."
        )
    env = dict(zip(placeholders, args_list))
    args_list.clear()
    return env


def check_argument_count(interpreter: Interpreter, args: tuple) -> None:
    """Refuse more arguments than the placeholders left to fill can take."""
    placeholders = interpreter.graph.find_nodes(op="placeholder")
    open_slots = [n for n in placeholders if n not in interpreter.env]
    if any(n.target.startswith("*") and not n.target.startswith("**") for n in open_slots):
        return
    open_slots = [n for n in open_slots if not n.target.startswith("**")]
    if len(args) > len(open_slots):
        raise TypeError(
            f"{type(interpreter).__name__}.run() got {len(args)} arguments, but the graph takes "
            f"{len(open_slots)} ({_names(open_slots)}). Pass one value per placeholder."
        )


def next_argument(args_iter: Iterator[Any], target: str, default: tuple) -> Any:
    """The next of `run`'s arguments for the placeholder `target`; its default
    (`default[0]`, the placeholder's `args`) when none is left.

    Raises:
        RuntimeError: if none is left and the placeholder has no default.
    """
    value = next(args_iter, _MISSING)
    if value is not _MISSING:
        return value
    if default:
        return default[0]
    raise RuntimeError(
        f"Expected positional argument for parameter {target}, but one was not passed in: "
        f"run() got no value for {target!r}, which has no default. Pass one positional "
        "argument per placeholder of the graph, in order."
    )


# Not an argument: `next`'s answer when no argument is left (None could be one).
_MISSING = object()


def graph_of(module: torch.nn.Module) -> Graph:
    """`module.graph`, refused with a clear message if it is not a minifx Graph."""
    graph = getattr(module, "graph", None)
    if isinstance(graph, Graph):
        return graph
    found = (
        "has no `graph` attribute"
        if graph is None
        else f"has a `graph` of type {type(graph).__module__}.{type(graph).__qualname__}"
    )
    raise NoGraphToRun(
        f"Interpreter needs a minifx Graph to run, but the {type(module).__name__} it got "
        f"{found}. Pass a minifx GraphModule (minifx.symbolic_trace(module)), or the graph "
        "itself: Interpreter(module, graph=graph)."
    )


def map_nodes(a: Any, fn: Callable[[Node], Any]) -> Any:
    """`map_arg(a, fn)`, but building plain lists and dicts instead of immutable ones."""
    if isinstance(a, Node):
        return fn(a)
    if isinstance(a, tuple):
        items = [map_nodes(item, fn) for item in a]
        return type(a)(*items) if hasattr(a, "_fields") else tuple(items)
    if isinstance(a, list):
        return [map_nodes(item, fn) for item in a]
    if isinstance(a, dict):
        return {key: map_nodes(value, fn) for key, value in a.items()}
    if isinstance(a, slice):
        return slice(*(map_nodes(part, fn) for part in (a.start, a.stop, a.step)))
    return a


def _names(nodes: list[Node]) -> str:
    return ", ".join(f"%{n.name}" for n in nodes) or "none"
