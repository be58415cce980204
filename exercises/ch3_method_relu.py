"""Exercise 3.1: method relu.

Chapter 3 turns relu into gelu in a traced model: for each `call_function`
node of `torch.relu` or `F.relu`, `node.target = F.gelu`, then
`gm.recompile()`. That misses `x.relu()`, which the tracer records as a
`call_method` node. Extend the transform to those nodes.

Read first: chapters/03-codegen.md#exercise-31-method-relu
Grade with: `make grade CH=3`
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


def method_relu_to_gelu(node: Node) -> bool:
    """Make a `call_method` node of `relu` call `F.gelu`; return whether it did.

    `x.relu()` is recorded as

        %relu : ... = call_method[target=relu](args = (%x,), kwargs = {})

    For `call_method`, `node.target` is the method's name, the string
    `"relu"`, and `node.args[0]` is the tensor the method is called on (the
    receiver, `x`). For `call_function`, `node.target` is the function
    object and `args` holds all of its operands. Turn the node into

        %relu : ... = call_function[target=torch._C._nn.gelu](args = (%x,), kwargs = {})

    by editing this node in place, not by inserting a new one, so that it
    keeps its name, its place in the graph and its users. Which of its `op`,
    `target`, `args` and `kwargs` must change? (`F.gelu` is the builtin
    `torch._C._nn.gelu`; that is the name the graph prints.)

    Every other node, `x.relu_()` (target `"relu_"`) included, is left as it
    is and the function returns False; `relu_to_gelu` says why.
    """
    raise NotImplementedError(
        "Exercise 3.1: method_relu_to_gelu is not written yet; "
        "see chapters/03-codegen.md#exercise-31-method-relu"
    )
