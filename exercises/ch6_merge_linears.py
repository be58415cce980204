"""Exercise 6.2: merge consecutive Linears.

Two nn.Linear layers with nothing in between compute
`W2 (W1 x + b1) + b2 = (W2 W1) x + (W2 b1 + b2)`: one Linear. Write the
merged Linear, then the pass that merges every such pair in a GraphModule.

Read first: chapters/06-conv-bn-fusion.md#exercise-62-merge-consecutive-linears
Grade with: `make grade CH=6`
"""

import torch  # noqa: F401  (you will need it)
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


def merged_linear(first: nn.Linear, second: nn.Linear) -> nn.Linear:
    """A new Linear that computes `second(first(x))`.

    Its weight is `second.weight @ first.weight` (out x in: second's outputs,
    first's inputs) and its bias `second.weight @ b1 + b2`, where a missing
    bias counts as 0; it has a bias unless neither Linear has one. Build it
    on the weights' device and dtype, and leave `first` and `second` as they
    are.
    """
    raise NotImplementedError(
        "Exercise 6.2: merged_linear is not written yet; "
        "see chapters/06-conv-bn-fusion.md#exercise-62-merge-consecutive-linears"
    )


def can_merge(second_node: Node, modules: dict[str, nn.Module]) -> bool:
    """Whether `second_node` can be merged into the Linear node before it.

    True when `second_node` is a `call_module` of an `nn.Linear` (exactly that
    type) in eval mode whose only argument is a `call_module` node of another
    eval-mode `nn.Linear`, whose output has no other user and whose module
    has no other use (`other_uses`). The second module may be used elsewhere:
    merging does not change it. `modules` is `dict(gm.named_modules())`. A
    suggested helper: the grader tests only `merged_linear` and `merge_linears`.
    """
    raise NotImplementedError(
        "Exercise 6.2: can_merge is not written yet; "
        "see chapters/06-conv-bn-fusion.md#exercise-62-merge-consecutive-linears"
    )


def merge_linears(gm: GraphModule) -> GraphModule:
    """Merge every pair of consecutive eval-mode Linears into the first; edits `gm`.

    For each pair: install the merged Linear under the first Linear's name
    (`gm.add_submodule`), point the second node's users at the first node,
    and erase the second node. Walk the nodes in order, so that a chain of
    three Linears becomes one. Then `gm.delete_all_unused_submodules()`,
    recompile, and return `gm`.
    """
    raise NotImplementedError(
        "Exercise 6.2: merge_linears is not written yet; "
        "see chapters/06-conv-bn-fusion.md#exercise-62-merge-consecutive-linears"
    )
