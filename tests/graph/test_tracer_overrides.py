"""The Tracer's override points, used the same way on minifx and torch.fx.

Each test builds one subclass body on both base classes and checks that the
two tracers record the same graph, so the override points have torch.fx's
signatures and are called at the same moments.
"""

import pytest
import torch
import torch.fx
from torch import nn

import minifx.graph

pytestmark = pytest.mark.ch2

BASES = {"minifx": minifx.graph.Tracer, "torch.fx": torch.fx.Tracer}


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.act = nn.ReLU()

    def forward(self, x):
        return torch.relu(self.act(self.linear(x)) + self.linear.bias)


def trace_with_both(make_subclass):
    """Trace a fresh Block with the subclass built on each base; return graphs and tracers."""
    results = {}
    for library, base in BASES.items():
        tracer = make_subclass(base)()
        results[library] = (tracer.trace(Block()), tracer)
    return results


def assert_same_graphs(results):
    ours, theirs = results["minifx"][0], results["torch.fx"][0]
    assert str(ours) == str(theirs), f"minifx:\n{ours}\n\ntorch.fx:\n{theirs}"


def test_create_node_override_sees_every_node():
    def make(base):
        class Tagging(base):
            def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
                node = super().create_node(kind, target, args, kwargs, name, type_expr)
                node.meta["tag"] = f"{kind}:{node.name}"
                return node

        return Tagging

    results = trace_with_both(make)
    assert_same_graphs(results)
    tags = {
        library: [n.meta["tag"] for n in graph.nodes] for library, (graph, _) in results.items()
    }
    assert tags["minifx"] == tags["torch.fx"]
    assert tags["minifx"][0] == "placeholder:x" and tags["minifx"][-1] == "output:output"


def test_create_proxy_override_can_change_what_is_recorded():
    def make(base):
        class ReluToSigmoid(base):
            def create_proxy(
                self, kind, target, args, kwargs, name=None, type_expr=None, *rest, **extra
            ):
                if kind == "call_function" and target is torch.relu:
                    target = torch.sigmoid
                return super().create_proxy(
                    kind, target, args, kwargs, name, type_expr, *rest, **extra
                )

        return ReluToSigmoid

    results = trace_with_both(make)
    assert_same_graphs(results)
    assert "torch.sigmoid" in str(results["minifx"][0])
    assert "torch.relu" not in str(results["minifx"][0])


def test_call_module_override_sees_each_module_call():
    def make(base):
        class Counting(base):
            def __init__(self):
                super().__init__()
                self.calls = []

            def call_module(self, m, forward, args, kwargs):
                self.calls.append(self.path_of_module(m))
                return super().call_module(m, forward, args, kwargs)

        return Counting

    results = trace_with_both(make)
    assert_same_graphs(results)
    assert results["minifx"][1].calls == results["torch.fx"][1].calls == ["linear", "act"]


class TwoBlocks(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block())
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.blocks(x) + x)


def test_call_module_replaced_and_create_proxy_record_each_node_s_module_path():
    """torchvision's feature extraction (`get_graph_node_names`) names each node after the
    module it was recorded in: its tracer replaces `call_module` (no `super()` call) to
    know which module it is tracing through, and overrides `create_proxy` to note that
    module's path for every node. Both libraries must ask these at the same moments."""

    def make(base):
        class ModulePathTracer(base):
            def __init__(self):
                super().__init__()
                self.current_path = ""
                self.path_of_node = {}

            def call_module(self, m, forward, args, kwargs):
                outer, self.current_path = self.current_path, self.path_of_module(m)
                try:
                    if not self.is_leaf_module(m, self.current_path):
                        return forward(*args, **kwargs)
                    return self.create_proxy("call_module", self.current_path, args, kwargs)
                finally:
                    self.current_path = outer

            def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, *_):
                proxy = super().create_proxy(kind, target, args, kwargs, name, type_expr)
                self.path_of_node[proxy.node.name] = self.current_path
                return proxy

        return ModulePathTracer

    tracers = {library: make(base)() for library, base in BASES.items()}
    graphs = {library: tracer.trace(TwoBlocks()) for library, tracer in tracers.items()}
    assert str(graphs["minifx"]) == str(graphs["torch.fx"])
    paths = tracers["minifx"].path_of_node
    assert paths == tracers["torch.fx"].path_of_node
    assert paths["blocks_1_linear"] == "blocks.1.linear"
    assert paths["relu_1"] == "blocks.1"  # torch.relu, recorded inside blocks.1's forward
    assert paths["add_2"] == ""  # the root's own `+ x`


def test_create_arg_override_can_store_new_types():
    class Scale:
        """A value the default tracer cannot store in a graph."""

        def __init__(self, factor: float) -> None:
            self.factor = factor

    class UsesScale(nn.Module):
        def forward(self, x):
            return x * Scale(2.0)

    def make(base):
        class ScalesAsFloats(base):
            def create_arg(self, a):
                return a.factor if isinstance(a, Scale) else super().create_arg(a)

        return ScalesAsFloats

    graphs = {library: make(base)().trace(UsesScale()) for library, base in BASES.items()}
    assert str(graphs["minifx"]) == str(graphs["torch.fx"])
    assert "args = (%x, 2.0)" in str(graphs["minifx"])


def test_stack_trace_lives_in_meta_as_in_torch_fx():
    for graph_type in (minifx.graph.Graph, torch.fx.Graph):
        node = graph_type().placeholder("x")
        assert node.stack_trace is None
        node.stack_trace = 'File "model.py", line 3'
        assert node.meta["stack_trace"] == 'File "model.py", line 3'


def test_create_arg_override_never_sees_a_keyword_s_name_or_another_str_dict_key():
    def program(x):
        return torch.nn.functional.relu(x, inplace=False), {"k": x, 1: x}

    seen = {}
    for library, base in BASES.items():

        class Shouting(base):
            def create_arg(self, a):
                if isinstance(a, str):  # a tracer that rewrites string constants
                    seen.setdefault(library, []).append(a)
                    return a.upper()
                return super().create_arg(a)

        graph = Shouting().trace(program)
        seen[library] = (seen.get(library, []), str(graph))
    assert seen["minifx"] == seen["torch.fx"]
    assert seen["minifx"][0] == []  # str keys are kept as they are, as in torch.fx
