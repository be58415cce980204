"""Exercise 2.2: remove no-ops (solution).

A graph-editing pass: find the nodes that return their input unchanged, point
their users at that input with `replace_all_uses_with`, and erase them with
`erase_node`. Only nodes of the graph change; the module is left as it is.
"""

import torch.nn.functional as F
from torch import nn

from minifx.graph import Graph, Node

# --8<-- [start:given]
# The dropout layers of torch.nn: in evaluation mode each returns its input.
DROPOUT_MODULES = (
    nn.Dropout,
    nn.Dropout1d,
    nn.Dropout2d,
    nn.Dropout3d,
    nn.AlphaDropout,
    nn.FeatureAlphaDropout,
)
# --8<-- [end:given]


# --8<-- [start:solution]
def is_noop(node: Node, root: nn.Module) -> bool:
    """Whether `node` returns its first argument unchanged (at inference time)."""
    if node.op == "call_module":
        module = root.get_submodule(node.target)
        return isinstance(module, nn.Identity) or (
            isinstance(module, DROPOUT_MODULES) and not module.training
        )
    if node.op == "call_function" and node.target is F.dropout:
        # F.dropout forwards every argument by keyword to __torch_function__.
        return node.kwargs.get("training") is False
    return False


def remove_noops(graph: Graph, root: nn.Module) -> int:
    """Erase every no-op node of `graph`, after pointing its users at its input.

    Returns:
        The number of nodes erased.
    """
    removed = 0
    # Erasing the node the loop stands on is safe: it still knows its successor.
    for node in graph.nodes:
        if is_noop(node, root):
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)
            removed += 1
    return removed


# --8<-- [end:solution]
