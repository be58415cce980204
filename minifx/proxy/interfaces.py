"""What a recorder and its lines offer a tracer (beside chapter 1's path).

Two protocols, for type annotations: chapter 1's `Tape` and chapter 2's `Graph`
are both an `IRGraph`; their `Record` and `Node` are both an `IRNode`.
"""

from __future__ import annotations

from typing import Any, Protocol


class IRNode(Protocol):
    """One line of the IR: chapter 1's `Record` and chapter 2's `Node` are both one."""

    graph: IRGraph
    name: str
    op: str
    target: Any
    args: tuple
    kwargs: dict
    type: Any


class IRGraph(Protocol):
    """What a tracer records into: chapter 1's `Tape` and chapter 2's `Graph` are both one."""

    def create_node(
        self,
        op: str,
        target: Any,
        args: tuple = (),
        kwargs: dict | None = None,
        name: str | None = None,
        type_expr: Any = None,
    ) -> IRNode: ...
