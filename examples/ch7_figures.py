"""Chapter 7's graph pictures, drawn by `python -m examples.figures`.

The pattern, the graph it is found in, and the graph after the rewrite, for
`chapters/07-subgraph-rewriting.md`.
"""

from __future__ import annotations

from examples.ch7_rewrites import SwishBlock, gate_and_swish, silu, swish
from examples.figures import narrow
from minifx.codegen import GraphModule, symbolic_trace
from minifx.passes.subgraph_rewriter import replace_pattern


def pattern() -> GraphModule:
    return symbolic_trace(swish)


def replacement() -> GraphModule:
    return symbolic_trace(silu)


def before() -> GraphModule:
    return symbolic_trace(SwishBlock())


def after() -> GraphModule:
    gm = symbolic_trace(SwishBlock())
    replace_pattern(gm, swish, silu)
    return gm


def near_misses() -> str:
    # Three branches side by side (the gate, the escaping sigmoid, the swish): named
    # boxes, as the text names them, so that the picture fits a phone.
    return narrow(symbolic_trace(gate_and_swish))


FIGURES = {
    "ch7_pattern": pattern,
    "ch7_replacement": replacement,
    "ch7_before": before,
    "ch7_after": after,
    "ch7_near_misses": near_misses,
}
