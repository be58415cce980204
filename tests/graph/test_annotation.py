"""`minifx.graph.annotation`: `annotate`, against torch.fx's `torch.fx.annotate.annotate`.

`annotate(value, type)` types the node of a traced value, as the annotated assignment
`y: int = x` does under `RewritingTracer` (tests/graph/test_rewriter.py); a value
already typed is refused, with the node and the fix in the message.

This module has no `from __future__ import annotations`, as test_rewriter.py.
"""

import pytest
import torch
from torch import nn
from torch.fx.annotate import annotate

import minifx
import minifx.graph
from minifx.proxy import TraceError
from tests.graph.rewriter_cases import ANNOTATE, REWRITERS, TRACERS, AnnotatesInt, nodes, trace

pytestmark = pytest.mark.ch2


class CallsAnnotate(nn.Module):
    def forward(self, x):
        y = annotate(x, int)
        return torch.add(x, y)


class CallsMinifxAnnotate(nn.Module):
    def forward(self, x):
        y = minifx.graph.annotate(x, int)
        return torch.add(x, y)


def test_an_annotated_assignment_types_the_node_as_annotate_does():
    """`y: int = x` under the rewriter types the input `x` as `annotate(x, int)` does."""
    calls = {"torch.fx": CallsAnnotate, "minifx": CallsMinifxAnnotate}
    graphs = {}
    for lib in REWRITERS:
        rewritten = trace(lib, AnnotatesInt())[1]
        annotated = trace(lib, calls[lib](), TRACERS[lib])[1]
        assert nodes(rewritten) == nodes(annotated)
        graphs[lib] = str(annotated)
        assert rewritten.find_nodes(op="placeholder")[0].type is int
    assert graphs["minifx"] == graphs["torch.fx"]


def test_annotate_returns_other_values_unchanged():
    value = object()
    for lib in ANNOTATE:
        assert ANNOTATE[lib](value, int) is value


def test_annotating_a_typed_value_raises_runtime_error():
    class Retypes(nn.Module):
        def forward(self, x: int):
            y: float = x
            return y

    for lib in REWRITERS:
        with pytest.raises(RuntimeError, match="already ha"):
            trace(lib, Retypes())


def test_annotating_a_typed_value_says_which_node_and_how_to_fix_it():
    graph = minifx.graph.Graph()
    x = minifx.proxy.Proxy(graph.placeholder("x", type_expr=int))
    with pytest.raises(TraceError) as error:
        minifx.graph.annotate(x, float)
    message = str(error.value)
    assert message.startswith("annotate(%x, float): %x already has the type int.")
    assert "Why: a node has one type" in message
    assert "How to fix: annotate each value once" in message


def test_annotating_a_result_twice_says_to_annotate_once():
    graph = minifx.graph.Graph()
    x = minifx.proxy.Proxy(graph.placeholder("x"))
    total = minifx.graph.annotate(x.sum(), int)
    with pytest.raises(RuntimeError, match=r"How to fix: annotate each value once\.$"):
        minifx.graph.annotate(total, float)


def test_fx_annotate_is_the_module_that_holds_annotate_as_in_torch_fx():
    """`from torch.fx.annotate import annotate` is torch.fx's spelling (torch.fx has no
    top-level `annotate` function): the same import works with minifx's name."""
    import inspect

    import torch.fx.annotate

    import minifx.annotate

    assert minifx.annotate.annotate is minifx.graph.annotate
    assert minifx.annotate is minifx.graph.annotation
    assert not callable(torch.fx.annotate) and not callable(minifx.annotate)
    theirs = inspect.signature(torch.fx.annotate.annotate).parameters
    assert list(inspect.signature(minifx.annotate.annotate).parameters) == list(theirs)
