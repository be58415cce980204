"""Exercise 3.2: lower nn.Linear (solution).

A GraphModule is state plus code. Lowering a Linear changes both: its
parameters move onto the GraphModule (the same objects, so the model trains as
before), the graph reads them with `get_attr` and calls `F.linear`, the code is
generated again, and the Linear submodules, used no more, are deleted.
"""

import torch.nn.functional as F
from torch import nn

from minifx.codegen import GraphModule


# --8<-- [start:given]
def state_name(target: str, name: str) -> str:
    """Where `lower_linear` keeps the parameter `name` of the Linear at `target`.

    A top-level attribute of the GraphModule, so that no path through the
    Linear is left: `state_name("head", "weight") == "head_weight"`,
    `state_name("layer1.fc", "bias") == "layer1_fc_bias"`.
    """
    return f"{target.replace('.', '_')}_{name}"


# --8<-- [end:given]


# --8<-- [start:solution]
def lower_linear(gm: GraphModule) -> GraphModule:
    """Call `F.linear` on each `nn.Linear`'s parameters instead of the module; return `gm`."""
    graph = gm.graph
    # Inserting before the node the loop stands on, and erasing it, are both safe:
    # the loop has not reached the new nodes, and the erased node keeps its successor.
    for node in graph.nodes:
        if node.op != "call_module" or not isinstance(gm.get_submodule(node.target), nn.Linear):
            continue
        linear = gm.get_submodule(node.target)
        # Register first: get_attr warns about an attribute the module lacks.
        gm.register_parameter(state_name(node.target, "weight"), linear.weight)
        if linear.bias is not None:
            gm.register_parameter(state_name(node.target, "bias"), linear.bias)
        with graph.inserting_before(node):
            weight = graph.get_attr(state_name(node.target, "weight"))
            bias = (
                graph.get_attr(state_name(node.target, "bias")) if linear.bias is not None else None
            )
            call = graph.call_function(F.linear, (node.args[0], weight, bias))
        node.replace_all_uses_with(call)
        graph.erase_node(node)
    gm.recompile()  # the code must follow the graph
    gm.delete_all_unused_submodules()  # the Linears: no node names them any more
    return gm


# --8<-- [end:solution]
