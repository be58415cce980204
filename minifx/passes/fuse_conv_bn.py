"""Conv–BatchNorm fusion (chapter 6): fold an eval-mode BatchNorm into the conv before it.

In eval mode a BatchNorm is a fixed affine map per channel,
`y = (x - mean) * gamma / sqrt(var + eps) + beta`, and a convolution is linear
in its weight, so the two collapse into one convolution with a new weight and
bias. The model then makes one pass over the activations where it made two.

`fuse_conv_bn(gm)` finds every `call_module` BatchNorm whose input is a
`call_module` conv of the matching kind, computes the fused conv, puts it
where the conv was, and removes the BatchNorm node. A pair is left alone
when fusing would change what the program computes (`why_left_alone`).
The counterpart in torch.fx is `torch.fx.experimental.optimization.fuse`.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from minifx.codegen import GraphModule, symbolic_trace
from minifx.graph import Node

# Each conv kind and the BatchNorm kind that normalizes its output. Types are
# compared exactly (as torch.fx does): a subclass may override `forward`, and
# then the algebra below no longer describes what it computes.
BATCHNORM_FOR_CONV: dict[type, type] = {
    nn.Conv1d: nn.BatchNorm1d,
    nn.Conv2d: nn.BatchNorm2d,
    nn.Conv3d: nn.BatchNorm3d,
}


# --8<-- [start:weights]
# --8<-- [task:6.1] "Fold a BatchNorm into conv weights" points=5 section=06-conv-bn-fusion.md#the-algebra
def fuse_conv_bn_weights(
    conv_weight: torch.Tensor,
    conv_bias: torch.Tensor | None,
    bn_mean: torch.Tensor,
    bn_var: torch.Tensor,
    bn_eps: float,
    bn_weight: torch.Tensor | None,
    bn_bias: torch.Tensor | None,
) -> tuple[nn.Parameter, nn.Parameter]:
    """The weight and bias of one conv that computes `bn(conv(x))` in eval mode.

    With `scale = gamma / sqrt(var + eps)`, one number per output channel:
    `w' = w * scale` (each output channel's filter scaled by its own number)
    and `b' = (b - mean) * scale + beta`. A missing conv bias counts as 0; a
    BatchNorm without affine parameters (`affine=False`) has gamma 1 and beta 0.

    Returns:
        The new weight and bias, as Parameters of the conv weight's dtype and
        device.
    """
    gamma = bn_weight if bn_weight is not None else torch.ones_like(bn_mean)
    beta = bn_bias if bn_bias is not None else torch.zeros_like(bn_mean)
    bias = conv_bias if conv_bias is not None else torch.zeros_like(bn_mean)
    scale = gamma * torch.rsqrt(bn_var + bn_eps)  # one factor per output channel
    # The weight is (out_channels, in_channels / groups, *kernel): scale along dim 0.
    per_filter = scale.reshape(-1, *[1] * (conv_weight.dim() - 1))
    fused_weight = (conv_weight * per_filter).to(conv_weight.dtype)
    fused_bias = ((bias - bn_mean) * scale + beta).to(conv_weight.dtype)
    return (
        nn.Parameter(fused_weight, conv_weight.requires_grad),
        nn.Parameter(fused_bias, conv_weight.requires_grad),
    )


# --8<-- [end-task:6.1]
# --8<-- [end:weights]


# --8<-- [start:eval]
def fuse_conv_bn_eval(conv: nn.Module, bn: nn.Module) -> nn.Module:
    """A new conv that computes `bn(conv(x))` for an eval-mode `conv` and `bn`.

    The conv is deep-copied (stride, padding, padding mode, groups, dilation
    stay as they were) and gets the fused weight and bias; `conv` and `bn`
    are not changed.
    """
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        conv.weight, conv.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias
    )
    return fused


# --8<-- [end:eval]


# --8<-- [start:left_alone]
# --8<-- [task:6.2] "Which pairs can be fused" points=5 section=06-conv-bn-fusion.md#what-is-left-alone-and-why
def why_left_alone(bn_node: Node, modules: dict[str, nn.Module]) -> str | None:
    """Why `bn_node` cannot be folded into the node before it; None if it can.

    Args:
        bn_node: any node of the graph.
        modules: the GraphModule's `dict(named_modules())`.

    Returns:
        None when `bn_node` calls a BatchNorm that can be fused with its input,
        else the first reason that applies, in the chapter's order, word for word:
        `"not a BatchNorm module call"`;
        `"its input is not a call of an nn.Conv1d/2d/3d"` (also if the BatchNorm
        takes anything but one positional argument);
        `f"a {type(bn).__name__} cannot follow a {type(conv).__name__}"`;
        `"training mode: the BatchNorm normalizes with the batch's statistics"`;
        `"no running statistics (track_running_stats=False)"`;
        `"the conv's output has other users, which need it unnormalized"`;
        `"the conv module is used elsewhere, which needs its weights unchanged"`.
    """
    bn = modules.get(bn_node.target) if bn_node.op == "call_module" else None
    if not isinstance(bn, nn.modules.batchnorm._BatchNorm):
        return "not a BatchNorm module call"
    conv_node = bn_node.args[0] if len(bn_node.args) == 1 and not bn_node.kwargs else None
    conv = (
        modules.get(conv_node.target)
        if isinstance(conv_node, Node) and conv_node.op == "call_module"
        else None
    )
    if type(conv) not in BATCHNORM_FOR_CONV:
        return "its input is not a call of an nn.Conv1d/2d/3d"
    if BATCHNORM_FOR_CONV[type(conv)] is not type(bn):
        return f"a {type(bn).__name__} cannot follow a {type(conv).__name__}"
    if conv.training or bn.training:
        return "training mode: the BatchNorm normalizes with the batch's statistics"
    if bn.running_mean is None or bn.running_var is None:
        return "no running statistics (track_running_stats=False)"
    if len(conv_node.users) > 1:
        return "the conv's output has other users, which need it unnormalized"
    if _other_uses(conv_node):
        return "the conv module is used elsewhere, which needs its weights unchanged"
    return None


# --8<-- [end-task:6.2]
# --8<-- [end:left_alone]


def _other_uses(conv_node: Node) -> list[Node]:
    """Nodes other than `conv_node` that call its module or read inside it."""
    target = conv_node.target
    return [
        node
        for node in conv_node.graph.nodes
        if node is not conv_node
        and node.op in ("call_module", "get_attr")
        and (node.target == target or node.target.startswith(target + "."))
    ]


# --8<-- [start:pass]
def fuse_conv_bn(gm: nn.Module, inplace: bool = False) -> GraphModule:
    """Fold each eval-mode BatchNorm into the Conv1d/2d/3d that feeds it.

    A pair `conv -> bn` (both `call_module` nodes) becomes one conv: the fused
    conv takes the conv's place under the same name, the bn node's users read
    the conv node instead, and the bn node and its submodule are removed.
    Left alone (see `why_left_alone`): training-mode convs or BatchNorms, a
    BatchNorm without running statistics (`track_running_stats=False`), a
    BatchNorm of another kind than the conv (BatchNorm1d after a Conv2d), a
    conv whose output has another user, and a conv module that another node
    also calls or reads. An `affine=False` BatchNorm is fused (gamma 1,
    beta 0), as in torch.fx.

    Args:
        gm: a GraphModule, or any `nn.Module`, which is traced with minifx's
            `symbolic_trace` first.
        inplace: edit `gm`'s graph and submodules and return it. Without it,
            `gm` is deep-copied first and left as it was.

    Returns:
        The fused GraphModule, recompiled. Its outputs equal the unfused ones
        up to float rounding.

    Raises:
        TypeError: if `gm` is not an `nn.Module` (a Graph, a function, ...).
    """
    _check_is_module(gm)
    if not inplace:
        gm = copy.deepcopy(gm)
    if not isinstance(gm, GraphModule):
        gm = symbolic_trace(gm)
    modules = dict(gm.named_modules())
    for bn_node in list(gm.graph.nodes):
        if why_left_alone(bn_node, modules) is None:
            _fold(gm, bn_node, modules)
    gm.graph.lint()
    gm.recompile()
    return gm


# --8<-- [end:pass]


def _check_is_module(gm: object) -> None:
    if not isinstance(gm, nn.Module):
        raise TypeError(
            f"fuse_conv_bn(gm): gm is a {type(gm).__name__}, not an nn.Module. The pass replaces "
            "the conv modules that call_module nodes name, so it needs the module that owns "
            "them. How to fix: pass the model, or a GraphModule (for a bare Graph: "
            "GraphModule(model, graph))."
        )


# --8<-- [start:fold]
# --8<-- [task:6.3] "Rewire the graph" points=5 section=06-conv-bn-fusion.md#the-pass
def _fold(gm: GraphModule, bn_node: Node, modules: dict[str, nn.Module]) -> None:
    """Replace the conv of `conv_node -> bn_node` by the fused conv; drop the bn node."""
    conv_node = bn_node.args[0]
    fused = fuse_conv_bn_eval(modules[conv_node.target], modules[bn_node.target])
    gm.add_submodule(conv_node.target, fused)  # replaces the conv under its own name
    modules[conv_node.target] = fused
    bn_node.replace_all_uses_with(conv_node)
    gm.graph.erase_node(bn_node)
    if not gm.graph.find_nodes(op="call_module", target=bn_node.target):
        gm.delete_submodule(bn_node.target)  # a BatchNorm called elsewhere stays


# --8<-- [end-task:6.3]
# --8<-- [end:fold]


__all__ = [
    "BATCHNORM_FOR_CONV",
    "fuse_conv_bn",
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "why_left_alone",
]
