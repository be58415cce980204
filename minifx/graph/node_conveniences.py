"""torch.fx's conveniences on `Node` that chapter 2 does not need to teach.

`Node` inherits them from `NodeConveniences`: editing one argument in place of
assigning a whole new `args` tuple (`update_arg`, `update_kwarg`,
`insert_arg`), and `stack_trace`, which reads and writes `meta`. Each goes
through `Node`'s own use-def bookkeeping. `_format_arg` is torch.fx's helper
(`torch.fx.node._format_arg`) that prints one argument as `str(graph)` does, and
`_rename` its private way to rename a node, which some passes call.
`Target`, `Argument` and `BaseArgumentTypes` are torch.fx.node's type aliases,
`ArgumentT` its type variable, and `_get_qualified_name` its name for
`qualified_name`: code written for torch.fx imports them from `fx.node`
(torchvision's feature extraction annotates with `fx.node.Target`), and `node.py`
offers all but `BaseArgumentTypes`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, TypeVar, Union

import torch

from ..proxy.ir import format_arg
from ..proxy.qualnames import qualified_name
from .errors import InsertArgIndexError

if TYPE_CHECKING:
    from .node import Node

# torch.fx.node's type aliases, spelled as there, for the annotations of code written
# for torch.fx (`def create_proxy(self, kind: str, target: Target, ...)`).
BaseArgumentTypes = Union[  # noqa: UP007 (torch.fx's spelling: the aliases compare equal)
    str,
    int,
    float,
    bool,
    complex,
    torch.dtype,
    torch.Tensor,
    torch.device,
    torch.memory_format,
    torch.layout,
    torch._ops.OpOverload,
    torch.SymInt,
    torch.SymBool,
    torch.SymFloat,
]
Target = Callable[..., Any] | str
Argument = Optional[  # noqa: UP045
    Union[
        tuple["Argument", ...],
        Sequence["Argument"],
        Mapping[str, "Argument"],
        slice,
        range,
        "Node",
        BaseArgumentTypes,
    ]
]
# torch.fx.node's type variable for "the same kind of argument back" (`map_arg`'s in and out).
ArgumentT = TypeVar("ArgumentT", bound=Argument)
# torch.fx.node's name for the dotted path of a target; passes written for torch.fx call it.
_get_qualified_name = qualified_name


class NodeConveniences:
    """Mixed into `Node`: argument edits and `stack_trace`."""

    def _rename(self: Node, candidate: str) -> None:
        """Rename this node after `candidate`, made unique in its graph (torch.fx's private
        helper; the old name stays taken, as there)."""
        if candidate != self.name:
            self.name = self.graph._graph_namespace.create_name(candidate)

    def update_arg(self: Node, idx: int, arg: Any) -> None:
        """Replace `args[idx]` with `arg`, updating the use-def lists."""
        args = list(self._args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self: Node, key: str, arg: Any) -> None:
        """Set `kwargs[key]` to `arg`, updating the use-def lists."""
        self.kwargs = {**self._kwargs, key: arg}

    def insert_arg(self: Node, idx: int, arg: Any) -> None:
        """Insert `arg` into `args` before position `idx`, updating the use-def lists.

        As in torch.fx, the nodes in `arg` are added to the use-def lists
        without rebuilding them, so the order of the existing entries stays.
        A list or dict in `arg` is stored read-only, as every other one.

        Raises:
            IndexError: if `idx` is not between 0 and `len(self.args)`; it is
                also the `AssertionError` that torch.fx raises.
        """
        from .node import map_arg  # node.py imports this module

        if not 0 <= idx <= len(self._args):
            raise InsertArgIndexError(
                f"%{self.name}.insert_arg({idx}, ...): the index must be between 0 and "
                f"len(args) = {len(self._args)}, to insert before args[idx] (or at the end "
                "with len(args)). Use update_arg to replace an argument instead."
            )

        def add_use(node: Node) -> Node:
            self._input_nodes[node] = None  # no change if it already used `node`
            node.users[self] = None
            return node

        self._args = (*self._args[:idx], *map_arg((arg,), add_use), *self._args[idx:])

    @property
    def stack_trace(self: Node) -> str | None:
        """Where in the user's code this node was recorded, if a pass stored it
        in `meta["stack_trace"]` (minifx's Tracer does not record it)."""
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self: Node, trace: str | None) -> None:
        self.meta["stack_trace"] = trace

    # Nodes compare by their place in the graph, as torch.fx's do (`sorted(node.users)`,
    # `min(nodes)`). torch.fx keeps a sort key on every node; minifx walks the list.
    def __lt__(self: Node, other: Node) -> bool:
        return _comes_before(self, other) if isinstance(other, type(self)) else NotImplemented

    def __gt__(self: Node, other: Node) -> bool:
        return _comes_before(other, self) if isinstance(other, type(self)) else NotImplemented

    def __le__(self: Node, other: Node) -> bool:
        return self is other or self.__lt__(other)

    def __ge__(self: Node, other: Node) -> bool:
        return self is other or self.__gt__(other)


def _comes_before(first: Node, second: Node) -> bool:
    """Whether `first` comes before `second` in their graph's list.

    Both are walked forward in step, so the walk ends after as many steps as the
    shorter way: from `first` on to `second`, or from the later one to the end (the
    sentinel). A walk back at its start never met the sentinel: the node is in no list.
    """
    ahead, behind = first._next, second._next
    while True:
        if ahead is second or behind.op == "root":
            return first is not second
        if behind is first or ahead.op == "root" or ahead is first or behind is second:
            return False
        ahead, behind = ahead._next, behind._next


def _format_arg(arg: Any, max_list_len: float = float("inf")) -> str:
    """An argument as `str(graph)` prints it, under torch.fx's name for the function.

    A list or tuple longer than `max_list_len` shows its first items and its length.
    """
    from .node import _format_leaf  # node.py imports this module

    if isinstance(arg, (list, tuple)) and len(arg) > max_list_len:
        shown = format_arg(list(arg[: int(max_list_len)]), leaf=_format_leaf)[1:-1]
        opening, closing = ("[", "]") if isinstance(arg, list) else ("(", ")")
        return f"{opening}{shown}, ...[total_len={len(arg)}]{closing}"
    return format_arg(arg, leaf=_format_leaf)
