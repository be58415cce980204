"""Looking at a graph without walking it by hand: `find_nodes` and `print_tabular`.

torch.fx's `Graph` has both; `Graph` inherits them from `GraphQueries`.
`find_nodes` answers from the index in `node_index.py`, which `create_node`,
`erase_node` and `Node`'s `op` and `target` setters keep current.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .graph import Graph
    from .node import Node


class GraphQueries:
    """Mixed into `Graph`: find nodes by opcode and target, print the nodes as a table."""

    def find_nodes(self: Graph, *, op: str, target: Any = None, sort: bool = True) -> list[Node]:
        """The nodes with opcode `op` (and `target`, if given), found through an index.

        Args:
            op: the opcode to look for.
            target: if given, only nodes with this target.
            sort: return them in graph order (a walk over the graph); with
                `False`, in the order they were created.
        """
        found = self._node_index.find(op, target)
        if sort and len(found) > 1:
            wanted = set(found)
            found = [n for n in self.nodes if n in wanted]
        return found

    def print_tabular(self: Graph) -> None:
        """Print one row per node: opcode, name, target, args, kwargs."""
        header = ["opcode", "name", "target", "args", "kwargs"]
        rows = [[n.op, n.name, str(n.target), str(n.args), str(n.kwargs)] for n in self.nodes]
        widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
        for row in [header, ["-" * w for w in widths], *rows]:
            print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
