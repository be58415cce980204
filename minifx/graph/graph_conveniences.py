"""torch.fx's conveniences on `Graph` that chapter 2 does not need to teach.

`Graph` inherits them from `GraphConveniences`: `find_nodes`, which answers
from the index in `node_index.py` (kept current by `create_node`, `erase_node`
and `Node`'s `op` and `target` setters), `output_node`, `print_tabular`, the cleaning of
subgraphs that `eliminate_dead_code` does after its own graph, as torch.fx's does, and
`_target_to_str`, torch.fx's private helper that some passes call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..proxy.names import target_to_name
from .errors import no_output_node

if TYPE_CHECKING:
    from .graph import Graph
    from .node import Node


class GraphConveniences:
    """Mixed into `Graph`: `find_nodes`, `output_node`, `print_tabular`, dead code in subgraphs."""

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

    def output_node(self: Graph) -> Node:
        """The graph's `output` node, which is always its last node.

        Raises:
            MisuseError: the last node is no `output` node, or the graph is empty (torch.fx
                raises `AssertionError`, or `StopIteration` for an empty graph).
        """
        last = next(reversed(self.nodes), None)
        if last is None or last.op != "output":
            raise no_output_node(last)
        return last

    def print_tabular(self: Graph) -> None:
        """Print one row per node: opcode, name, target, args, kwargs."""
        header = ["opcode", "name", "target", "args", "kwargs"]
        rows = [[n.op, n.name, str(n.target), str(n.args), str(n.kwargs)] for n in self.nodes]
        # As torch.fx's `tabulate` table: a column is at least 2 wider than its header.
        widths = [max([len(h) + 2] + [len(row[i]) for row in rows]) for i, h in enumerate(header)]
        for row in [header, ["-" * w for w in widths], *rows]:
            print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())

    def _target_to_str(self: Graph, target: Any) -> str:
        """The name a node of `target` starts from (`relu`, `batch_norm`), before it is made
        unique: torch.fx's private helper, which passes written for it call."""
        if not callable(target) and not isinstance(target, str):
            raise AssertionError(f"Expected target to be str, got {type(target)}")
        return target_to_name(target)

    def _eliminate_dead_code_in_subgraphs(self: Graph) -> bool:
        """As torch.fx does: clean and recompile the GraphModules that `get_attr` nodes read."""
        from .graph import Graph  # graph.py imports this module

        if self.owning_module is None:
            return False
        read = {node.target for node in self.find_nodes(op="get_attr")}
        erased = False
        for name, child in self.owning_module.named_children():
            if name in read and isinstance(getattr(child, "graph", None), Graph):
                erased = child.graph.eliminate_dead_code() or erased
                child.recompile()
        return erased
