"""Chapter 7's examples (`examples/ch7_rewrites.py`) rewrite as torch.fx rewrites them."""

from __future__ import annotations

import pytest
import torch
import torch.fx

import minifx
from examples import ch7_rewrites as ex
from minifx.passes.subgraph_rewriter import replace_pattern

pytestmark = pytest.mark.ch7

CASES = {  # name -> (root, pattern, replacement, inputs, matches)
    "swish_block": (ex.SwishBlock, ex.swish, ex.silu, (torch.randn(2, 4),), 2),
    "near_misses": (
        lambda: ex.gate_and_swish,
        ex.swish,
        ex.silu,
        (torch.randn(3), torch.randn(3)),
        1,
    ),
    "overlap": (lambda: ex.relu_chain, ex.double_relu, ex.one_relu, (torch.randn(3),), 1),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_chapters_rewrites_match_torch_fx(name, device):
    make_root, pattern, replacement, inputs, count = CASES[name]
    torch.manual_seed(0)
    root = make_root()
    eager = root.to(device) if isinstance(root, torch.nn.Module) else root
    ours, theirs = minifx.symbolic_trace(eager), torch.fx.symbolic_trace(eager)
    args = tuple(a.to(device) for a in inputs)
    before = ours(*args)
    assert len(replace_pattern(ours, pattern, replacement)) == count
    torch.fx.replace_pattern(theirs, pattern, replacement)
    assert str(ours.graph) == str(theirs.graph) and ours.code == theirs.code
    torch.testing.assert_close(ours(*args), before)
