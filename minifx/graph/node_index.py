"""The index behind `Graph.find_nodes`: the graph's nodes by opcode, and by target.

torch.fx keeps the same side table so that a pass can find, say, every call
of one submodule without walking the whole graph. `Graph.create_node` and
`Graph.erase_node` keep it current, and so do `Node`'s `op` and `target`
setters (through `updating`).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    from .node import Node

# Only these opcodes are also indexed by target: their targets are what
# passes search for (a function, a submodule's path), and always hashable.
INDEXED_BY_TARGET = ("call_function", "call_module")


class NodeIndex:
    """Nodes by opcode, and `call_function` / `call_module` nodes by (opcode, target).

    Dicts serve as ordered sets, so nodes come out in the order they were added.
    """

    def __init__(self) -> None:
        self._by_op: dict[str, dict[Node, None]] = {}
        self._by_target: dict[tuple[str, Any], dict[Node, None]] = {}

    def add(self, node: Node) -> None:
        """Index `node` under its current opcode and target."""
        op = node._op
        self._by_op.setdefault(op, {})[node] = None
        if op in INDEXED_BY_TARGET:
            self._by_target.setdefault((op, node._target), {})[node] = None

    def remove(self, node: Node) -> bool:
        """Forget `node`.

        Returns:
            Whether it was indexed (a node that `Node(...)` made directly,
            or one already erased, is not).
        """
        same_op = self._by_op.get(node._op)
        if same_op is None or node not in same_op:
            return False
        del same_op[node]
        if node._op in INDEXED_BY_TARGET:
            del self._by_target[node._op, node._target][node]
        return True

    def __contains__(self, node: Node) -> bool:
        return node in self._by_op.get(node._op, ())

    @contextlib.contextmanager
    def updating(self, node: Node) -> Iterator[None]:
        """Within the block `node`'s opcode or target may change; it is re-indexed after."""
        was_indexed = self.remove(node)
        yield
        if was_indexed:
            self.add(node)

    def find(self, op: str, target: Any = None) -> list[Node]:
        """The nodes with opcode `op` (and `target`, if given), in the order they were added."""
        if target is not None and op in INDEXED_BY_TARGET:
            return list(self._by_target.get((op, target), ()))
        return [n for n in self._by_op.get(op, ()) if target is None or n.target == target]

    def all_nodes(self) -> set[Node]:
        """Every indexed node."""
        return set().union(*self._by_op.values())
