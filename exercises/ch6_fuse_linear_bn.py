"""Exercise 6.1: fuse Linear and BatchNorm1d.

Chapter 6 folds an eval-mode BatchNorm into the convolution before it. Do the
same for an `nn.Linear` followed by an `nn.BatchNorm1d` (on inputs of shape
(batch, features)): work out the fused weight and bias, then write the pass
that finds each such pair in a GraphModule and replaces it by one Linear.

Read first: chapters/06-conv-bn-fusion.md#exercise-61-fuse-linear-and-batchnorm1d
Grade with: `make grade CH=6`
"""

import copy  # noqa: F401  (you will need it)

import torch  # noqa: F401  (you will need it)
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


def fused_linear(linear: nn.Linear, bn: nn.BatchNorm1d) -> nn.Linear:
    """A new Linear that computes `bn(linear(x))` for eval-mode `linear` and `bn`.

    With `scale = bn.weight / sqrt(bn.running_var + bn.eps)` (one number per
    output feature), row i of the weight is multiplied by `scale[i]`, and the
    bias becomes `(b - running_mean) * scale + bn.bias`. A Linear without a
    bias counts as bias 0 (the fused one has a bias). Copy the Linear
    (`copy.deepcopy`) and give the copy new `nn.Parameter`s: `linear` and `bn`
    must not change. (The grader's BatchNorms all have affine parameters.)
    """
    raise NotImplementedError(
        "Exercise 6.1: fused_linear is not written yet; "
        "see chapters/06-conv-bn-fusion.md#exercise-61-fuse-linear-and-batchnorm1d"
    )


def can_fuse(bn_node: Node, modules: dict[str, nn.Module]) -> bool:
    """Whether `bn_node` is an eval-mode BatchNorm1d that can fold into the Linear before it.

    True when `bn_node` is a `call_module` of an `nn.BatchNorm1d` (exactly that
    type) in eval mode with running statistics, whose only argument is a
    `call_module` node of an `nn.Linear` (exactly) in eval mode, whose output
    has no other user, and whose module has no other use (`other_uses`).
    `modules` is `dict(gm.named_modules())`. A suggested helper: the grader
    tests only `fused_linear` and `fuse_linear_bn`.
    """
    raise NotImplementedError(
        "Exercise 6.1: can_fuse is not written yet; "
        "see chapters/06-conv-bn-fusion.md#exercise-61-fuse-linear-and-batchnorm1d"
    )


def fuse_linear_bn(gm: GraphModule) -> GraphModule:
    """Fold every eval-mode BatchNorm1d into the nn.Linear that feeds it; edits `gm`.

    For each pair that can be fused: install the fused Linear under the
    Linear's name (`gm.add_submodule`), point the BatchNorm node's users at
    the Linear node (`replace_all_uses_with`), and erase the BatchNorm node.
    Then remove the submodules no node uses any more
    (`gm.delete_all_unused_submodules()`), recompile, and return `gm`.
    Everything else is left as it is.
    """
    raise NotImplementedError(
        "Exercise 6.1: fuse_linear_bn is not written yet; "
        "see chapters/06-conv-bn-fusion.md#exercise-61-fuse-linear-and-batchnorm1d"
    )
