"""Exercise 2.2: remove no-ops.

Some operations return their input unchanged at inference time: `nn.Identity`,
and dropout in evaluation mode. Write a pass that erases them from a traced
graph, after pointing their users at their input.

Read first: chapters/02-graph.md#replacing-and-erasing
Grade with: `make grade CH=2`
"""

import torch.nn.functional as F  # noqa: F401  (you will need it)
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


def is_noop(node: Node, root: nn.Module) -> bool:
    """Whether `node` returns its first argument unchanged at inference time.

    The no-ops are:

    - a `call_module` node whose module is an `nn.Identity`;
    - a `call_module` node whose module is one of `DROPOUT_MODULES` and is
      not in training mode (`module.training` is False);
    - a `call_function` node of `torch.nn.functional.dropout` whose kwargs
      say `training=False`.

    Every other node (including placeholders and the output) is not.

    Args:
        node: a node of a graph traced from `root`.
        root: the traced module; a `call_module` node's target is the path of
            its submodule in `root` (`root.get_submodule(node.target)`).
    """
    raise NotImplementedError(
        "Exercise 2.2: is_noop is not written yet; see chapters/02-graph.md#replacing-and-erasing"
    )


def remove_noops(graph: Graph, root: nn.Module) -> int:
    """Erase every no-op node of `graph`, after pointing its users at its input.

    A no-op's input is its first argument, `node.args[0]`. Afterwards the
    graph must pass `graph.lint()`. Mind a no-op whose value is returned by
    the graph, and no-ops applied to the result of other no-ops.

    Returns:
        The number of nodes erased.
    """
    raise NotImplementedError(
        "Exercise 2.2: remove_noops is not written yet; "
        "see chapters/02-graph.md#replacing-and-erasing"
    )
