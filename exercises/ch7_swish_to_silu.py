"""Exercise 7.1: Swish to SiLU.

Many models compute the swish activation by hand, `x * torch.sigmoid(x)`: two
nodes, two kernels, one temporary tensor. `F.silu(x)` is the same function in one
call. Write a pattern and a replacement as plain Python functions and let
`replace_pattern` find every swish and swap in the silu.

Read first: chapters/07-subgraph-rewriting.md#exercise-71-swish-to-silu
Grade with: `make grade CH=7`
"""

import torch  # noqa: F401  (you will need it)
import torch.nn.functional as F  # noqa: F401  (you will need it)

from minifx.codegen import GraphModule
from minifx.passes.subgraph_rewriter import replace_pattern  # noqa: F401  (you will need it)


def swish(x):
    """The pattern: return swish exactly as the models write it, `x * torch.sigmoid(x)`."""
    raise NotImplementedError(
        "Exercise 7.1: swish (the pattern) is not written yet; "
        "see chapters/07-subgraph-rewriting.md#exercise-71-swish-to-silu"
    )


def silu(x):
    """The replacement: the same value with `F.silu`."""
    raise NotImplementedError(
        "Exercise 7.1: silu (the replacement) is not written yet; "
        "see chapters/07-subgraph-rewriting.md#exercise-71-swish-to-silu"
    )


def swish_to_silu(gm: GraphModule) -> int:
    """Rewrite every `x * torch.sigmoid(x)` in `gm` into `F.silu(x)`; return how many.

    `replace_pattern(gm, pattern, replacement)` rewrites `gm` in place and returns
    one match per rewrite.
    """
    raise NotImplementedError(
        "Exercise 7.1: swish_to_silu is not written yet; "
        "see chapters/07-subgraph-rewriting.md#exercise-71-swish-to-silu"
    )
