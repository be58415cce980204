"""Exercise 3.1: method relu (solution).

A `call_method` node names its method by a string and carries the tensor it is
called on as `args[0]`; a `call_function` node carries the function itself and
takes every operand in `args`. So `x.relu()` becomes `F.gelu(x)` by changing
the node's op and target: its args are already those of `F.gelu`.
"""

import torch
import torch.nn.functional as F

from minifx.codegen import GraphModule
from minifx.graph import Node

# --8<-- [start:given]
# The functions the chapter's transform rewrites: `torch.relu(x)` and `F.relu(x)`.
RELU_FUNCTIONS = (torch.relu, F.relu)


def function_relu_to_gelu(node: Node) -> bool:
    """Make a `call_function` node of relu call `F.gelu`; return whether it did.

    `F.relu(x)` is recorded with `kwargs = {inplace: False}`, an argument that
    `F.gelu` does not take, so the kwargs go. `F.relu(x, inplace=True)` is left
    alone, as every in-place relu is (see `relu_to_gelu`).
    """
    if node.op != "call_function" or node.target not in RELU_FUNCTIONS:
        return False
    if node.kwargs.get("inplace", False):
        return False
    node.target = F.gelu
    node.kwargs = {}
    return True


def relu_to_gelu(gm: GraphModule) -> GraphModule:
    """Replace every out-of-place relu of `gm` by gelu, recompile, and return `gm`.

    Rewritten: `torch.relu(x)` and `F.relu(x)` (`call_function` nodes, given
    above) and `x.relu()` (`call_method` nodes, `method_relu_to_gelu`). Each
    node is edited in place, so it keeps its name (`relu`, `relu_1`, ...),
    its place and its users.

    Left alone:

    - in-place relus (`x.relu_()`, `torch.relu_(x)`, `F.relu(x, inplace=True)`):
      they change `x` for every later user of `x`, and gelu has no in-place
      form, so an out-of-place gelu would change what those users see;
    - `nn.ReLU` submodules (`call_module` nodes): swapping a submodule changes
      the GraphModule's state, not only its graph; exercise 3.2 does that kind
      of change.
    """
    for node in gm.graph.nodes:
        if not function_relu_to_gelu(node):
            method_relu_to_gelu(node)
    gm.recompile()  # the graph changed: generate forward again from it
    return gm


# --8<-- [end:given]


# --8<-- [start:solution]
def method_relu_to_gelu(node: Node) -> bool:
    """Make a `call_method` node of `relu` call `F.gelu`; return whether it did."""
    if node.op != "call_method" or node.target != "relu":
        return False
    # args[0] is the receiver, x in x.relu(): F.gelu's first argument too.
    node.op = "call_function"
    node.target = F.gelu
    return True


# --8<-- [end:solution]
