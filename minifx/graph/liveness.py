"""When each value of a graph is used for the last time.

Generated code (stage 3) sets a value to `None` right after its last use, and
the Interpreter (stage 4) drops it from `env` at the same node, so that both
hold exactly the values that later nodes still need, as eager mode does. Both
ask this module where those points are.

One walk backwards over the nodes finds them: the first time the walk meets a
value among a node's inputs, that node is the value's last user.
"""

from __future__ import annotations

from .graph import Graph
from .node import Node


# --8<-- [start:last_uses]
# --8<-- [task:3.1] "Last uses" points=5 section=03-codegen.md#why-x-none
def last_uses(graph: Graph) -> dict[Node, list[Node]]:
    """Node -> the values whose last use is at that node.

    A node missing from the result is the last user of nothing. A value that
    no node uses appears nowhere: it has no last use. Each node's list is in
    the order torch.fx frees them: its inputs' order of first appearance in
    `args` and `kwargs`.

    Example:
        For `exp = x.exp(); sin = exp.sin(); return sin`:
        `{output: [sin], sin: [exp], exp: [x]}`.
    """
    seen: set[Node] = set()
    freed_at: dict[Node, list[Node]] = {}
    for node in reversed(graph.nodes):
        for used in node._input_nodes:  # all_input_nodes, without copying it to a list
            if used not in seen:
                seen.add(used)
                freed_at.setdefault(node, []).append(used)
    return freed_at


# --8<-- [end-task:3.1]
# --8<-- [end:last_uses]
