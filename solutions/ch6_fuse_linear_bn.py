"""Exercise 6.1: fuse Linear and BatchNorm1d (solution).

The algebra of chapter 6 with a Linear in place of the conv: a Linear's
weight is (out_features, in_features), one row per output feature, and an
eval-mode BatchNorm1d scales and shifts each output feature by its own
numbers. So each row of the weight gets its feature's scale, and the bias
gets the scale and the shift.
"""

import copy

import torch
from torch import nn

from minifx.codegen import GraphModule
from minifx.graph import Node


# --8<-- [start:given]
def other_uses(node: Node) -> list[Node]:
    """Nodes other than `node` that call `node`'s module or read inside it.

    A module called from two places (or whose weight a `get_attr` node reads)
    must keep its weights: fusing would change the other use too.
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
def fused_linear(linear: nn.Linear, bn: nn.BatchNorm1d) -> nn.Linear:
    """A new Linear that computes `bn(linear(x))` for eval-mode `linear` and `bn`."""
    scale = bn.weight * torch.rsqrt(bn.running_var + bn.eps)  # one factor per output feature
    bias = linear.bias if linear.bias is not None else torch.zeros_like(bn.running_mean)
    fused = copy.deepcopy(linear)
    fused.weight = nn.Parameter(linear.weight * scale[:, None])  # row i times scale[i]
    fused.bias = nn.Parameter((bias - bn.running_mean) * scale + bn.bias)
    return fused


def can_fuse(bn_node: Node, modules: dict[str, nn.Module]) -> bool:
    """Whether `bn_node` is an eval-mode BatchNorm1d that can fold into the Linear before it."""
    bn = modules.get(bn_node.target) if bn_node.op == "call_module" else None
    if type(bn) is not nn.BatchNorm1d or bn.training or bn.running_mean is None:
        return False
    linear_node = bn_node.args[0]
    linear = (
        modules.get(linear_node.target)
        if isinstance(linear_node, Node) and linear_node.op == "call_module"
        else None
    )
    return (
        type(linear) is nn.Linear
        and not linear.training
        and len(linear_node.users) == 1
        and not other_uses(linear_node)
    )


def fuse_linear_bn(gm: GraphModule) -> GraphModule:
    """Fold every eval-mode BatchNorm1d into the nn.Linear that feeds it; edits `gm`."""
    modules = dict(gm.named_modules())
    for bn_node in list(gm.graph.nodes):
        if not can_fuse(bn_node, modules):
            continue
        linear_node = bn_node.args[0]
        fused = fused_linear(modules[linear_node.target], modules[bn_node.target])
        gm.add_submodule(linear_node.target, fused)  # the fused Linear, under the old name
        modules[linear_node.target] = fused
        bn_node.replace_all_uses_with(linear_node)
        gm.graph.erase_node(bn_node)
    gm.delete_all_unused_submodules()
    gm.recompile()
    return gm


# --8<-- [end:solution]
