"""Subclassing the Interpreter, as the book and torch.fx's docs do (the Transformer's
subclasses are in test_transformer.py).

Every override is written once, as a function of the base class, and built for
both libraries, so the same code runs on minifx and on torch.fx: the graphs,
the generated code, the node metadata and the outputs must agree.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.fx

from minifx.interpreter import Interpreter
from tests.interpreter.support import fn, neg_sigm_swap, trace_both, with_star_args
from tests.models import ResNet18

pytestmark = pytest.mark.ch4


# -- the docs' sigmoid/neg swap ---------------------------------------------------------------


def test_neg_sigm_swap_interpreter():
    gm, tgm = trace_both(lambda: fn)
    x = torch.randn(3, 4)
    result = neg_sigm_swap(Interpreter)(gm).run(x)
    torch.testing.assert_close(result, torch.neg(x).sigmoid())
    torch.testing.assert_close(result, neg_sigm_swap(torch.fx.Interpreter)(tgm).run(x))
    torch.testing.assert_close(gm(x), fn(x))  # the GraphModule itself is unchanged


# -- run_node overrides: a small ShapeProp ------------------------------------------------------


def shape_recorder(base: type) -> type:
    class ShapeRecorder(base):
        """Stores each tensor value's shape and dtype in its node's meta."""

        def run_node(self, n):
            value = super().run_node(n)
            if isinstance(value, torch.Tensor):
                n.meta["shape"], n.meta["dtype"] = value.shape, value.dtype
            return value

    return ShapeRecorder


def recorded(gm: Any) -> dict[str, tuple]:
    return {n.name: (n.meta.get("shape"), n.meta.get("dtype")) for n in gm.graph.nodes}


def test_shape_recorder_on_resnet18_matches_torch_fx():
    gm, tgm = trace_both(lambda: ResNet18().eval())
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        out = shape_recorder(Interpreter)(gm).run(x)
        torch_out = shape_recorder(torch.fx.Interpreter)(tgm).run(x)
    torch.testing.assert_close(out, torch_out)
    ours = recorded(gm)
    assert ours == recorded(tgm)
    assert ours["x"] == (torch.Size([2, 3, 32, 32]), torch.float32)
    assert ours["conv1"] == (torch.Size([2, 16, 16, 16]), torch.float32)
    assert ours["fc"] == (torch.Size([2, 10]), torch.float32)
    assert ours["output"] == (torch.Size([2, 10]), torch.float32), (
        "output returns the tensor itself"
    )
    assert sum(shape is not None for shape, _ in ours.values()) == len(ours)


# -- the values of a star-args placeholder ------------------------------------------------------


def test_star_args_placeholder_gets_a_tuple():
    """Difference 1: minifx gives `*rest` a tuple, as Python does; torch.fx a list."""
    gm, tgm = trace_both(lambda: with_star_args)
    x, a, b = torch.randn(3), torch.randn(3), torch.randn(3)
    ours = Interpreter(gm, garbage_collect_values=False)
    theirs = torch.fx.Interpreter(tgm, garbage_collect_values=False)
    torch.testing.assert_close(ours.run(x, a, b), with_star_args(x, a, b))
    torch.testing.assert_close(theirs.run(x, a, b), with_star_args(x, a, b))
    rest = {n.name: v for n, v in ours.env.items()}["_rest"]
    torch_rest = {n.name: v for n, v in theirs.env.items()}["_rest"]
    assert type(rest) is tuple and type(torch_rest) is list
    assert rest[0] is a and rest[1] is b and torch_rest == [a, b]
