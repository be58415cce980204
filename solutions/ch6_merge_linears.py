"""Exercise 6.2: merge consecutive Linears (solution).

`second(first(x)) = W2 (W1 x + b1) + b2 = (W2 W1) x + (W2 b1 + b2)`: two
Linears with nothing in between are one Linear. The pass keeps the first
node, gives its module the merged weights, and removes the second node; a
chain of three merges twice, because the merged node is then the input of
the third.
"""

import torch
from torch import nn

from minifx.codegen import GraphModule
from minifx.graph import Node


# --8<-- [start:given]
def other_uses(node: Node) -> list[Node]:
    """Nodes other than `node` that call `node`'s module or read inside it.

    A module called from two places (or whose weight a `get_attr` node reads)
    must keep its weights: merging would change the other use too.
    """
    target = node.target
    return [
        other
        for other in node.graph.nodes
        if other is not node
        and other.op in ("call_module", "get_attr")
        and (other.target == target or other.target.startswith(target + "."))
    ]


# --8<-- [end:given]


# --8<-- [start:solution]
def merged_linear(first: nn.Linear, second: nn.Linear) -> nn.Linear:
    """One Linear that computes `second(first(x))`."""
    has_bias = first.bias is not None or second.bias is not None
    merged = nn.Linear(
        first.in_features,
        second.out_features,
        bias=has_bias,
        device=first.weight.device,
        dtype=first.weight.dtype,
    )
    with torch.no_grad():
        merged.weight.copy_(second.weight @ first.weight)
        if has_bias:
            b1 = first.bias if first.bias is not None else torch.zeros_like(first.weight[:, 0])
            b2 = second.bias if second.bias is not None else torch.zeros_like(second.weight[:, 0])
            merged.bias.copy_(second.weight @ b1 + b2)
    return merged.train(first.training)


def can_merge(second_node: Node, modules: dict[str, nn.Module]) -> bool:
    """Whether `second_node` calls an eval-mode nn.Linear whose only input is another
    eval-mode nn.Linear call, which has no other user and no other use. (The second
    module may have other uses: merging leaves it as it is.)"""
    second = modules.get(second_node.target) if second_node.op == "call_module" else None
    if type(second) is not nn.Linear or second.training or len(second_node.args) != 1:
        return False
    first_node = second_node.args[0]
    first = (
        modules.get(first_node.target)
        if isinstance(first_node, Node) and first_node.op == "call_module"
        else None
    )
    return (
        type(first) is nn.Linear
        and not first.training
        and len(first_node.users) == 1
        and not other_uses(first_node)
    )


def merge_linears(gm: GraphModule) -> GraphModule:
    """Merge every pair of consecutive eval-mode Linears into the first; edits `gm`."""
    modules = dict(gm.named_modules())
    for second_node in list(gm.graph.nodes):
        if not can_merge(second_node, modules):
            continue
        first_node = second_node.args[0]
        merged = merged_linear(modules[first_node.target], modules[second_node.target])
        gm.add_submodule(first_node.target, merged)
        modules[first_node.target] = merged
        second_node.replace_all_uses_with(first_node)
        gm.graph.erase_node(second_node)
    gm.delete_all_unused_submodules()
    gm.recompile()
    return gm


# --8<-- [end:solution]
