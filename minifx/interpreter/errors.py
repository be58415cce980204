"""The errors of stage 4 and the notes added to them, worded in one place.

An error raised while a node runs keeps its type and message and gets a PEP 678
note naming the node (`running_note`); the other helpers build the errors the
Interpreter raises itself, and `call_rule` notes which rule of `decompose` failed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..proxy.ir import format_target

if TYPE_CHECKING:
    from ..graph import Node
    from .interpreter import Interpreter


class NoGraphToRun(TypeError, AttributeError):
    """The module given to an Interpreter has no minifx graph; also the `AttributeError`
    torch.fx raises (it reads `module.graph`)."""


def running_note(interpreter: Interpreter, node: Node) -> str:
    """The note added to an error raised while `node` runs: the node, its line, its origin."""
    note = (
        f"While running node %{node.name} ({node.op} {format_target(node.target)}) "
        f"in {type(interpreter).__name__}:\n    {node.format_node()}"
    )
    if node.stack_trace:
        note += f"\nIt was traced from:\n{node.stack_trace.rstrip()}"
    return note + (
        "\nThe values computed so far are in the interpreter's `env`; "
        "pass garbage_collect_values=False to keep them all."
    )


def missing_attribute(target: str, missing: str) -> RuntimeError:
    """`fetch_attr`'s error: the module has no attribute `missing` on the path `target`."""
    return RuntimeError(
        f"the graph reads {target!r}, but the module has no attribute "
        f"{missing!r}. Add it to the module (setattr, "
        "add_submodule), or fix the node's target."
    )


def missing_value(user: Node, node: Node) -> RuntimeError:
    """The error for `user` reading `node`, which has no value in `env`."""
    return RuntimeError(
        f"%{user.name} uses %{node.name}, which has no value: it comes later in "
        "the graph, or was dropped after what the interpreter computed as its "
        "last use. Run graph.lint() to check the order."
    )


def call_rule(rule: Callable, node: Node, args: tuple, kwargs: dict) -> Any:
    """`rule(*args, **kwargs)` for `decompose`, noting the rule and node if it raises."""
    try:
        return rule(*args, **kwargs)
    except Exception as error:
        error.add_note(
            f"While applying the rule {getattr(rule, '__name__', rule)!r} to node "
            f"%{node.name}: {node.format_node()}\nA rule gets the node's arguments "
            "as Proxies and must only do what a Proxy can record."
        )
        raise
