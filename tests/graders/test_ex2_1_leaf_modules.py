"""Grader for exercise 2.1: leaf modules.

torch.fx is the oracle: each graph must print exactly like the graph a
`torch.fx.Tracer` subclass with the same `is_leaf_module` records.
"""

import pytest
import torch.fx
from torch import nn

from minifx.graph import Tracer
from minifx.proxy import TraceError
from tests.graders.support import explain, explain_graphs

pytestmark = pytest.mark.ch2

SEE = "chapters/02-graph.md#leaf-modules"


@pytest.fixture
def ex(impl):
    return impl.load("ch2_leaf_modules")


class _FxFlat(torch.fx.Tracer):
    def is_leaf_module(self, m, module_qualified_name):
        return False


class _FxOpaque(torch.fx.Tracer):
    def __init__(self, leaf_types):
        super().__init__()
        self.leaf_types = leaf_types

    def is_leaf_module(self, m, module_qualified_name):
        return isinstance(m, self.leaf_types) or super().is_leaf_module(m, module_qualified_name)


def _graph_message(what: str, want: str, got: str, hint: str) -> str:
    return explain_graphs(what, want, got, hint, SEE)


def _trace(tracer, model, what, hint="Clip's forward cannot be traced, so Clip must be a leaf."):
    try:
        return tracer.trace(model)
    except TraceError as error:
        pytest.fail(explain(f"{what} to trace", f"TraceError:\n{error}", hint, SEE))


def _call_modules(graph) -> list[str]:
    return [node.target for node in graph.nodes if node.op == "call_module"]


def test_flat_tracer_traces_into_linear_and_relu(ex):
    model = ex.linear_relu()
    got = ex.FlatTracer().trace(model)
    want = _FxFlat().trace(model)
    assert str(got) == str(want), _graph_message(
        "no call_module node: nn.Linear recorded as what its forward does", str(want), str(got),
        "FlatTracer.is_leaf_module must return False for every module.")


def test_flat_tracer_traces_into_every_module(ex):
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4, 2), ex.Scale(2))
    got = ex.FlatTracer().trace(model)
    want = _FxFlat().trace(model)
    assert str(got) == str(want), _graph_message(
        "the graph torch.fx records when no module is a leaf", str(want), str(got),
        "FlatTracer.is_leaf_module must return False for every module, torch.nn's and yours.")


def test_opaque_clip_makes_the_block_traceable(ex):
    model = ex.Block()
    got = _trace(ex.OpaqueTracer((ex.Clip,)), model, "OpaqueTracer((Clip,)).trace(Block())")
    want = _FxOpaque((ex.Clip,)).trace(model)
    assert str(got) == str(want), _graph_message(
        "Clip as one call_module node, Scale traced through", str(want), str(got),
        "return True for instances of leaf_types, and otherwise what Tracer.is_leaf_module "
        "returns (super().is_leaf_module(m, module_qualified_name)).")


def test_other_user_modules_are_traced_through(ex):
    graph = _trace(ex.OpaqueTracer((ex.Clip,)), ex.Block(), "OpaqueTracer((Clip,)).trace(Block())")
    modules = _call_modules(graph)
    reads = [node.target for node in graph.nodes if node.op == "get_attr"]
    assert "scale" not in modules and "scale.weight" in reads, explain(
        "Scale, which is not in leaf_types, traced through: a get_attr of 'scale.weight', "
        "no call_module 'scale'",
        f"call_module targets {modules}, get_attr targets {reads}",
        "only instances of leaf_types (and torch.nn's layers) are leaves.", SEE)


def test_default_leaves_stay_leaves(ex):
    model = nn.Sequential(nn.Linear(8, 8), ex.Scale(8), nn.ReLU())
    graph = _trace(ex.OpaqueTracer((ex.Scale,)), model, "OpaqueTracer((Scale,))")
    modules = _call_modules(graph)
    assert modules == ["0", "1", "2"], explain(
        "call_module nodes for '0' (nn.Linear), '1' (Scale, chosen) and '2' (nn.ReLU)",
        f"call_module targets {modules}:\n{graph}",
        "keep the default leaves: fall back to super().is_leaf_module(...).", SEE)


def test_several_leaf_types(ex):
    model = ex.Block()
    got = _trace(ex.OpaqueTracer((ex.Scale, ex.Clip)), model, "OpaqueTracer((Scale, Clip))")
    want = _FxOpaque((ex.Scale, ex.Clip)).trace(model)
    assert str(got) == str(want), _graph_message(
        "both Scale and Clip as call_module nodes", str(want), str(got),
        "isinstance(m, self.leaf_types) accepts a tuple of classes.")


def test_subclasses_of_a_leaf_type_are_leaves(ex):
    class StrictClip(ex.Clip):
        pass

    model = nn.Sequential(nn.Linear(8, 8), StrictClip())
    graph = _trace(ex.OpaqueTracer((ex.Clip,)), model, "OpaqueTracer((Clip,)) on a subclass of Clip",
                   "an instance of a subclass of Clip is an instance of Clip: use isinstance.")
    modules = _call_modules(graph)
    assert modules == ["0", "1"], explain(
        "a call_module node for '1', an instance of a subclass of Clip",
        f"call_module targets {modules}:\n{graph}",
        "test with isinstance(m, self.leaf_types), not type(m) in leaf_types.", SEE)


def test_no_leaf_types_is_the_default_tracer(ex):
    model = nn.Sequential(nn.Linear(8, 8), ex.Scale(8), nn.ReLU())
    got = ex.OpaqueTracer(()).trace(model)
    want = Tracer().trace(model)
    assert str(got) == str(want), _graph_message(
        "OpaqueTracer(()) records what Tracer() records", str(want), str(got),
        "with no leaf_types, is_leaf_module is the default one.")
