"""Chapter 6's graph pictures, drawn by `python -m examples.figures`.

`chapters/06-conv-bn-fusion.md` shows chapter 6's block before and after
`fuse_conv_bn`.
"""

from __future__ import annotations

from examples.ch6_fusion import ConvBNBlock, trained
from minifx.codegen import GraphModule, symbolic_trace
from minifx.passes.fuse_conv_bn import fuse_conv_bn


def before() -> GraphModule:
    """The block as traced: each conv feeds a BatchNorm."""
    return symbolic_trace(trained(ConvBNBlock()))


def after() -> GraphModule:
    """The block after fusion: the BatchNorm nodes are gone."""
    return fuse_conv_bn(trained(ConvBNBlock()))


FIGURES = {
    "ch6_before": before,
    "ch6_after": after,
}
