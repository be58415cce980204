"""Copying whole graphs: `Graph.graph_copy` and `copy.deepcopy(graph)`.

Chapter 2 teaches `node_copy`, which copies one node into a graph; these are
the torch.fx methods built on it. `Graph` inherits them from `GraphCopying`.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from .node import map_arg

if TYPE_CHECKING:
    from .graph import Graph
    from .node import Node


class GraphCopying:
    """Mixed into `Graph`: copy every node of another graph, or the whole graph."""

    # --8<-- [start:graph_copy]
    def graph_copy(
        self: Graph, g: Graph, val_map: dict[Node, Node], return_output_node: bool = False
    ) -> Any:
        """Copy every node of `g` except its output into this graph.

        Args:
            g: the graph to copy from.
            val_map: filled with old node -> new node; nodes already in it are
                not copied but mapped (to splice `g` onto existing values).
            return_output_node: also return `g`'s output node.

        Returns:
            The copied output value (`output.args[0]` with nodes mapped), and
            the old output node too if `return_output_node`; `None` if `g`
            has no output.
        """
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                value = map_arg(node.args[0], lambda n: val_map[n])
                return (value, node) if return_output_node else value
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    # --8<-- [end:graph_copy]

    def __deepcopy__(self: Graph, memo: dict | None = None) -> Graph:
        """A new graph with the same nodes, names and meta (copied one level deep).

        `memo` is `copy.deepcopy`'s; it may be left out, as in torch.fx (`graph.__deepcopy__()`).
        """
        from .graph import Graph  # graph.py imports this module

        # A plain Graph even for a subclass, as torch.fx makes.
        copied = Graph(tracer_cls=self._tracer_cls, tracer_extras=self._tracer_extras)
        copied.pytree_info = self.pytree_info
        copied._codegen = copy.deepcopy(self._codegen, {} if memo is None else memo)
        result = copied.graph_copy(self, val_map={}, return_output_node=True)
        if result is not None:
            value, old_output = result
            copied.output(value, type_expr=old_output.type).meta = copy.copy(old_output.meta)
        return copied
