"""The Tracer's torch.fx options: node origins, constant parameter shapes, copies.

Every test traces the same program with torch.fx's Tracer and with minifx's and
compares what torch.fx programs read: `node.meta["nn_module_stack"]`,
`node.meta["stack_trace"]`, the graphs `param_shapes_constant` gives and
`copy.deepcopy(tracer)`. The attributes a `PH` subclass puts on its placeholder are
in test_placeholders.py.
"""

from __future__ import annotations

import copy
import re

import pytest
import torch
import torch.fx
from torch import nn

import minifx
import minifx.graph
import minifx.proxy
from minifx.graph.tracer_options import ParameterProxy
from tests.graph.support import TRACERS

pytestmark = pytest.mark.ch2


# -- node.meta["nn_module_stack"] -----------------------------------------------------------


class Inner(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.gain = nn.Parameter(torch.ones(3))

    def forward(self, x):
        return torch.relu(self.lin(x)) * self.gain


class Outer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = Inner()
        self.blocks = nn.Sequential(Inner(), nn.Tanh())

    def forward(self, x):
        y = self.inner(x)
        y = self.inner(y)  # the second call of the same module: keys "inner@1", "inner.lin@1"
        return self.blocks(y) + 1


def module_stacks(tracer_class) -> list:
    graph = tracer_class().trace(Outer())
    return [(node.name, node.meta.get("nn_module_stack")) for node in graph.nodes]


def test_nn_module_stack_is_torch_fx_s_for_every_node():
    stacks = module_stacks(minifx.graph.Tracer)
    assert stacks == module_stacks(torch.fx.Tracer)
    by_name = dict(stacks)
    assert by_name["x"] is None and by_name["add"] is None and by_name["output"] is None
    assert list(by_name["inner_lin_1"].items()) == [
        ("inner@1", ("inner", Inner)),
        ("inner.lin@1", ("inner.lin", nn.Linear)),
    ]
    assert list(by_name["blocks_1"]) == ["blocks", "blocks.1"]


def test_nn_module_stack_is_a_copy_per_node():
    graph = minifx.graph.Tracer().trace(Outer())
    stacks = [n.meta["nn_module_stack"] for n in graph.nodes if "nn_module_stack" in n.meta]
    assert len({id(stack) for stack in stacks}) == len(stacks)


# -- node.meta["stack_trace"] ---------------------------------------------------------------

FRAME = re.compile(r'File "(.+)", line (\d+), in (.+)\n    (.*)')


# Frames of torch's machinery, which torch.fx's traces list and minifx's leave out.
MACHINERY = re.compile(r"torch/fx/|torch/nn/modules/module\.py$")


def traced_frames(tracer_class, root) -> list:
    """For each node: the frames of its stack trace, or None."""
    tracer = tracer_class()
    tracer.record_stack_traces = True
    graph = tracer.trace(root)
    return [
        (node.name, None if node.stack_trace is None else FRAME.findall(node.stack_trace))
        for node in graph.nodes
    ]


def test_stack_traces_name_the_users_lines_as_torch_fx_s_do():
    frames = traced_frames(minifx.graph.Tracer, Outer())
    theirs = [
        (name, trace if trace is None else [f for f in trace if not MACHINERY.search(f[0])])
        for name, trace in traced_frames(torch.fx.Tracer, Outer())
    ]
    assert frames == theirs
    by_name = dict(frames)
    # nn.Sequential's forward was traced through: its line is shown, as the user's code is.
    assert [name for _, _, name, _ in by_name["blocks_0_lin"]] == ["forward"] * 3
    assert by_name["x"] is None and by_name["output"] is None  # made outside forward
    assert [(name, code) for _, _, name, code in by_name["inner_lin_1"]] == [
        (
            "forward",
            "y = self.inner(y)  # the second call of the same module: keys "
            '"inner@1", "inner.lin@1"',
        ),
        ("forward", "return torch.relu(self.lin(x)) * self.gain"),
    ]


def test_minifx_stack_traces_hold_only_the_users_frames():
    # minifx differs on purpose: torch.fx's traces also list torch's own frames
    # (nn.Module's _call_impl, torch/fx/proxy.py's create_node).
    tracer = minifx.graph.Tracer()
    tracer.record_stack_traces = True
    for node in tracer.trace(Outer()).nodes:
        if node.stack_trace is not None:
            files = {file for file, *_ in FRAME.findall(node.stack_trace)}
            assert files <= {__file__, nn.Sequential.forward.__code__.co_filename}
    theirs = torch.fx.Tracer()
    theirs.record_stack_traces = True
    lin = next(n for n in theirs.trace(Outer()).nodes if n.name == "inner_lin")
    assert "torch/nn/modules/module.py" in lin.stack_trace
    assert "torch/fx/" in FRAME.findall(lin.stack_trace)[-1][0]  # its innermost frame


def relu_plus_one(x):
    return torch.relu(x) + 1


@pytest.mark.parametrize("library", TRACERS)
def test_a_function_traced_alone_gets_no_stack_trace(library):
    # Both record traces only from a frame named `forward` on.
    tracer = TRACERS[library]()
    tracer.record_stack_traces = True
    assert all("stack_trace" not in node.meta for node in tracer.trace(relu_plus_one).nodes)


@pytest.mark.parametrize("library", TRACERS)
def test_stack_traces_are_off_by_default(library):
    assert all("stack_trace" not in node.meta for node in TRACERS[library]().trace(Outer()).nodes)


@pytest.mark.parametrize("library", TRACERS)
def test_stack_traces_can_be_switched_on_for_every_tracer(library, monkeypatch):
    monkeypatch.setattr(minifx.proxy.TracerBase, "record_stack_traces", True)
    monkeypatch.setattr(torch.fx.proxy.TracerBase, "record_stack_traces", True)
    graph = TRACERS[library]().trace(Outer())
    assert [n.name for n in graph.nodes if n.stack_trace] == [
        n.name for n in graph.nodes if n.op not in ("placeholder", "output")
    ]


# -- param_shapes_constant ------------------------------------------------------------------


class ShapeDecides(nn.Module):
    """Chooses its code by its parameter's shape, in each way PyTorch's tests check."""

    def __init__(self, rows: int, query: str) -> None:
        super().__init__()
        self.param = nn.Parameter(torch.randn(rows, 3))
        self.query = query

    def small(self) -> bool:
        p = self.param
        return {
            "shape": lambda: p.shape[0] < 10,
            "size": lambda: p.size()[0] < 10,
            "size_dim": lambda: p.size(0) < 10,
            "dim": lambda: p.dim() == 2,
            "ndim": lambda: p.ndim == 2,
            "numel": lambda: p.numel() < 30,
            "nelement": lambda: p.nelement() < 30,
        }[self.query]()

    def forward(self, x):
        product = torch.mm(x, self.param)
        return product if self.small() else torch.relu(product)


QUERIES = ["shape", "size", "dim", "ndim", "numel", "nelement"]  # and "size_dim": minifx only


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("rows", [5, 15])
def test_param_shapes_constant_picks_the_branch_as_torch_fx_does(query, rows):
    graphs = {
        name: cls(param_shapes_constant=True).trace(ShapeDecides(rows, query))
        for name, cls in TRACERS.items()
    }
    assert str(graphs["minifx"]) == str(graphs["torch.fx"])
    targets = [node.target for node in graphs["minifx"].nodes]
    small = query in ("dim", "ndim") or rows < 10
    assert torch.mm in targets and (torch.relu in targets) != small


def test_param_shapes_constant_also_answers_size_of_one_dimension():
    # minifx differs on purpose: size(0) works too; torch.fx's size() takes no argument.
    graph = minifx.graph.Tracer(param_shapes_constant=True).trace(ShapeDecides(15, "size_dim"))
    assert torch.relu in [node.target for node in graph.nodes]
    with pytest.raises(TypeError):
        torch.fx.Tracer(param_shapes_constant=True).trace(ShapeDecides(15, "size_dim"))


@pytest.mark.parametrize("library", TRACERS)
def test_without_param_shapes_constant_the_branch_cannot_be_traced(library):
    with pytest.raises(torch.fx.proxy.TraceError if library == "torch.fx" else ValueError):
        TRACERS[library]().trace(ShapeDecides(5, "shape"))


def test_a_parameter_proxy_records_everything_but_shape_queries():
    seen = {}

    class Recording(minifx.graph.Tracer):
        def getattr(self, attr, attr_val, parameter_proxy_cache):
            value = super().getattr(attr, attr_val, parameter_proxy_cache)
            seen[attr] = value
            return value

    graph = Recording(param_shapes_constant=True).trace(ShapeDecides(5, "shape"))
    proxy = seen["param"]
    assert isinstance(proxy, ParameterProxy) and repr(proxy) == "ParameterProxy(param)"
    assert proxy.shape == torch.Size([5, 3]) and proxy.node.op == "get_attr"
    assert [node.op for node in graph.nodes].count("get_attr") == 1


# -- copy.deepcopy(tracer) ----------------------------------------------------------------------


def chain(x, y):
    return (x + y).relu().sin()


@pytest.mark.parametrize("library", TRACERS)
def test_a_tracer_can_be_deep_copied_before_and_after_tracing(library):
    tracer = TRACERS[library]()
    before = copy.deepcopy(tracer)
    graph = tracer.trace(chain)
    after = copy.deepcopy(tracer)
    assert str(after.graph) == str(graph) and after.graph is not graph
    assert after.root is not tracer.root
    assert after._autowrap_search == tracer._autowrap_search  # modules are shared, not copied
    assert str(before.trace(chain)) == str(graph)  # the copy still traces


@pytest.mark.parametrize("library", TRACERS)
def test_a_new_tracer_has_no_graph_and_no_root_until_it_traces(library):
    tracer = TRACERS[library]()
    assert not hasattr(tracer, "graph") and not hasattr(tracer, "root")
    assert not hasattr(copy.deepcopy(tracer), "graph")
    tracer.trace(chain)
    assert hasattr(tracer, "graph") and hasattr(tracer, "root")


def test_a_deep_copied_tracer_keeps_its_class():
    # minifx differs on purpose: torch.fx's copy of a Tracer subclass is a plain Tracer.
    def make(base):
        class Custom(base):
            def is_leaf_module(self, m, qualname):
                return True

        return Custom()

    assert type(copy.deepcopy(make(minifx.graph.Tracer))).__name__ == "Custom"
    assert type(copy.deepcopy(make(torch.fx.Tracer))) is torch.fx.Tracer
