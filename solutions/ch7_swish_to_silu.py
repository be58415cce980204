"""Exercise 7.1: Swish to SiLU (solution).

The pattern is the swish exactly as the model writes it, `x * torch.sigmoid(x)`:
matching compares opcodes, targets and argument positions, so the order of the
product's factors is part of the pattern. The replacement takes the same single
input and computes the same value in one node.
"""

import torch
import torch.nn.functional as F

from minifx.codegen import GraphModule
from minifx.passes.subgraph_rewriter import replace_pattern


# --8<-- [start:solution]
def swish(x):
    """The pattern: swish as the models write it."""
    return x * torch.sigmoid(x)


def silu(x):
    """The replacement: the same value in one fused call."""
    return F.silu(x)


def swish_to_silu(gm: GraphModule) -> int:
    """Rewrite every `x * torch.sigmoid(x)` in `gm` into `F.silu(x)`; return how many."""
    return len(replace_pattern(gm, swish, silu))


# --8<-- [end:solution]
