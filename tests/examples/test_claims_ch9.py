"""Chapter 9's claims about torch.fx (and the torch front ends that produce its graphs),
each checked by running torch as well as minifx.

Chapter 9 has no "Differences from torch.fx" box: it describes what symbolic tracing
cannot capture and what came after it. Where it says what torch.fx, TorchDynamo or
`torch.export` does, a test here runs it, so that a claim that stops being true (a new
torch) fails instead of misleading the reader. Each docstring quotes its claim.

Pinned elsewhere:

- the chapter's own examples, which tests/test_docs_examples.py runs as printed: minifx's four
  errors, the Dynamo graphs of `clip2` (a graph break) and `shift` (a guard), each an
  `isinstance` of `torch.fx.GraphModule`, and `torch.export`'s ATen graph of `Small`;
- "Functions of Python's `math` module ... the tracer wraps them automatically", as torch.fx's
  does: the math cases of tests/graph/corpus.py, traced by both libraries in
  tests/graph/test_differential.py.
"""

from __future__ import annotations

import inspect
import io
import operator

import numpy as np
import pytest
import torch
import torch.fx
from torch import nn
from torch._subclasses.fake_tensor import FakeTensor
from torch.fx.passes.shape_prop import ShapeProp as FxShapeProp

import minifx

pytestmark = pytest.mark.ch9

LIBRARIES = {"torch.fx": torch.fx, "minifx": minifx}


def _builtin_type(error: BaseException) -> type:
    """The built-in exception class an error derives from: what an `except` clause names."""
    return next(cls for cls in type(error).__mro__ if cls.__module__ == "builtins")


# --- what symbolic tracing cannot capture --------------------------------------------------


def clip(x):
    if x.sum() > 0:
        return x
    return -x


def positions(x):
    return torch.arange(len(x))


def row_sums(x):
    return torch.stack([row.sum() for row in x])


def zeros_like_total(x):
    return torch.zeros(int(x.sum()))


@pytest.mark.parametrize("program", [clip, positions, row_sums, zeros_like_total])
def test_both_tracers_fail_on_the_four_families(program):
    """Whenever Python needs a concrete value *now* — to choose a branch, to count, to build an
    `int` — the tracer has nothing to give it, and minifx raises one `TraceError` (torch.fx's
    tracer fails too, and minifx's error is also the type torch.fx raises)."""
    with pytest.raises(Exception) as theirs:
        torch.fx.Tracer().trace(program)
    with pytest.raises(minifx.TraceError) as ours:
        minifx.Tracer().trace(program)
    assert isinstance(ours.value, _builtin_type(theirs.value))


def test_values_that_only_decide_a_size_trace_in_both():
    """an output whose *size* depends on the *values* — `x[x > 0]` or `x.nonzero()` trace without
    complaint."""

    def data_dependent(x):
        return x[x > 0], x.nonzero(), torch.zeros(x.size(0))

    graphs = {name: str(lib.Tracer().trace(data_dependent)) for name, lib in LIBRARIES.items()}
    assert graphs["minifx"] == graphs["torch.fx"]
    assert "call_method[target=nonzero]" in graphs["torch.fx"]


def numpy_sin(x):
    return torch.from_numpy(np.sin(x.numpy()))


def test_numpy_fails_with_its_own_message_in_both():
    """NumPy asks the Proxy for its array interface, gets a recorded attribute instead, and fails
    with its own message — not a `TraceError` ... torch.fx fails in exactly the same way."""
    errors = {}
    for name, lib in LIBRARIES.items():
        with pytest.raises(ValueError) as info:
            lib.Tracer().trace(numpy_sin)
        errors[name] = info.value
    assert type(errors["minifx"]) is type(errors["torch.fx"]) is ValueError
    assert str(errors["minifx"]) == str(errors["torch.fx"]) == "invalid __array_struct__"


# --- the escape hatches -------------------------------------------------------------------


def np_sin(x):
    return torch.from_numpy(np.sin(x.numpy()))


torch.fx.wrap("np_sin")
minifx.wrap("np_sin")


def sin_plus_one(x):
    return np_sin(x) + 1


def test_wrap_records_one_node_in_both():
    """`wrap` fixes the NumPy function above: the function becomes a node, and its body runs on
    real tensors when the graph does."""
    theirs, ours = torch.fx.symbolic_trace(sin_plus_one), minifx.symbolic_trace(sin_plus_one)
    assert str(ours.graph) == str(theirs.graph)
    assert [n.target for n in theirs.graph.nodes if n.op == "call_function"][0] is np_sin
    assert torch.equal(ours(torch.zeros(2)), theirs(torch.zeros(2)))


class SignFlip(nn.Module):
    def forward(self, x):
        return x if x.sum() > 0 else -x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.flip = SignFlip()

    def forward(self, x):
        return self.flip(x) * 2


def test_a_leaf_module_records_one_node_in_both():
    """A tracer that makes it a leaf records one `call_module` node, and the module's own Python
    runs, branch and all, when the graph runs."""
    modules = {}
    for name, lib in LIBRARIES.items():

        class FlipLeafTracer(lib.Tracer):
            def is_leaf_module(self, m, module_qualified_name):
                return isinstance(m, SignFlip) or super().is_leaf_module(m, module_qualified_name)

        net = Net()
        modules[name] = lib.GraphModule(net, FlipLeafTracer().trace(net))
    assert str(modules["minifx"].graph) == str(modules["torch.fx"].graph)
    x = torch.tensor([-1.0, -2.0])
    assert torch.equal(modules["torch.fx"](x), torch.tensor([2.0, 4.0]))
    assert torch.equal(modules["minifx"](x), modules["torch.fx"](x))


# --- TorchDynamo and torch.compile -------------------------------------------------------


@pytest.fixture
def captured():
    """A Dynamo backend that keeps every graph it is given, with fresh Dynamo caches."""
    torch._dynamo.reset()
    graphs: list[tuple[torch.fx.GraphModule, list]] = []

    def backend(gm, example_inputs):
        graphs.append((gm, example_inputs))
        return gm.forward

    yield backend, graphs
    torch._dynamo.reset()


def test_each_graph_module_has_a_class_of_its_own(captured):
    """(Each `GraphModule` has a class of its own, as in chapter 3, hence the `isinstance` test.)"""
    backend, graphs = captured
    torch.compile(lambda x: x + 1, backend=backend)(torch.ones(2))
    dynamo_gm = graphs[0][0]
    traced = [torch.fx.symbolic_trace(lambda x: x + 1) for _ in range(2)]
    for gm in (dynamo_gm, *traced):
        assert type(gm) is not torch.fx.GraphModule and isinstance(gm, torch.fx.GraphModule)
    assert type(traced[0]) is not type(traced[1])
    assert isinstance(graphs[0][1], list)  # "a list of example inputs"


def test_a_changed_dimension_is_made_symbolic_when_dynamo_recompiles(captured):
    """(Shapes are static on the first compilation; a dimension that then changes is made symbolic
    when Dynamo recompiles.)"""
    backend, graphs = captured

    def double(x):
        return x * 2

    compiled = torch.compile(double, backend=backend)
    for n in (2, 3, 4):
        compiled(torch.ones(n))
    assert len(graphs) == 2  # the third size reuses the symbolic graph
    first, second = [
        [n.meta["example_value"] for n in gm.graph.nodes if n.op == "placeholder"]
        for gm, _ in graphs
    ]
    assert [tuple(v.shape) for v in first] == [(2,)]
    assert isinstance(second[0], torch.SymInt) and isinstance(second[1].shape[0], torch.SymInt)


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x)) * 2


def test_dynamo_inlines_modules_into_function_calls_on_parameter_inputs(captured):
    """Dynamo follows calls into your functions and modules, so `nn.Module`s are not leaves by
    default: their parameters become inputs and their layers become function calls. ... Dynamo and
    export graphs lean on `call_function`, since modules are inlined."""
    backend, graphs = captured
    torch.compile(Small(), backend=backend)(torch.ones(2, 4))
    ((gm, _),) = graphs
    ops = [n.op for n in gm.graph.nodes]
    assert "call_module" not in ops and "get_attr" not in ops
    assert ops.count("placeholder") == 3  # the weight, the bias, x
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert targets == [torch._C._nn.linear, torch.relu, operator.mul]


def test_allow_in_graph_records_one_call_and_disable_breaks_the_graph(captured):
    """`torch.compiler.disable` keeps a function out of compilation (it always runs as plain
    Python, a graph break by choice); `torch.compiler.allow_in_graph` puts a call into the graph
    without looking inside, much like `wrap` ... Its docstring advises a custom operator
    (`torch.library.custom_op`) to keep a function opaque through all of `torch.compile` and
    `torch.export`."""
    backend, graphs = captured

    def scaled_sine(x):
        return x.sin() * 2

    def kept_out(x):
        return x - 1

    opaque = torch.compiler.allow_in_graph(scaled_sine)
    plain_python = torch.compiler.disable(kept_out)
    torch.compile(lambda x: opaque(x) + 1, backend=backend)(torch.ones(3))
    assert [
        n.target for n in graphs[0][0].graph.nodes if n.op != "placeholder" and n.op != "output"
    ] == [scaled_sine, operator.add]  # one call, nothing of its body
    graphs.clear()
    torch.compile(lambda x: plain_python(x * 2) * 3, backend=backend)(torch.ones(3))
    assert len(graphs) == 2 and "sub" not in "".join(str(gm.graph) for gm, _ in graphs)
    assert "custom operator" in torch.compiler.allow_in_graph.__doc__


def test_allow_in_graph_still_runs_the_function_on_fake_tensors(captured):
    """(though Dynamo still runs it on fake tensors while compiling, so a branch on a tensor's value
    inside it still breaks the graph, where `wrap`'s function runs only with the graph)"""
    backend, graphs = captured
    seen = []

    def recording_clip(x):
        seen.append(type(x))
        return clip(x)

    opaque_clip = torch.compiler.allow_in_graph(recording_clip)
    compiled = torch.compile(lambda x: opaque_clip(x) + 1, backend=backend)
    assert torch.equal(compiled(-torch.ones(3)), torch.full((3,), 2.0))
    assert FakeTensor in seen
    assert len(graphs) > 1  # the branch broke the graph
    assert all(n.target is not recording_clip for gm, _ in graphs for n in gm.graph.nodes)

    traced = torch.fx.symbolic_trace(sin_plus_one)  # wrap: the body does not run while tracing
    assert torch.equal(traced(torch.zeros(2)), torch.ones(2))


# --- torch.export --------------------------------------------------------------------------


def test_export_is_non_strict_by_default():
    """By default (`strict=False`) `torch.export` traces by running the Python program."""
    assert inspect.signature(torch.export.export).parameters["strict"].default is False


def test_an_exported_program_runs_new_inputs_and_serializes():
    """`torch.export` ... returns an `ExportedProgram`: one whole graph, captured ahead of time,
    that can be run with new inputs or serialized (`torch.export.save`)."""
    torch.manual_seed(0)
    model = Small()
    exported = torch.export.export(model, (torch.ones(2, 4),))
    buffer = io.BytesIO()
    torch.export.save(exported, buffer)
    buffer.seek(0)
    loaded = torch.export.load(buffer)
    x = torch.randn(2, 4)
    torch.testing.assert_close(loaded.module()(x), model(x))
    torch.testing.assert_close(exported.module()(x), model(x))


def clip2(x):
    y = torch.relu(x) * 2
    if y.sum() > 0:
        return y + 1
    return y - 1


class Clip2(nn.Module):
    def forward(self, x):
        return clip2(x)


class Clip2Cond(nn.Module):
    def forward(self, x):
        y = torch.relu(x) * 2
        return torch.cond(y.sum() > 0, lambda y: y + 1, lambda y: y - 1, (y,))


def test_a_branch_on_a_value_cannot_be_exported_and_torch_cond_records_both_branches():
    """exporting a module whose `forward` calls `clip2` fails with a `GuardOnDataDependentSymNode`
    error ("Could not guard on data-dependent expression"), and the fix is to express the branch
    as data, for instance with `torch.cond`, which records both branches as subgraphs."""
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    with pytest.raises(
        GuardOnDataDependentSymNode, match="Could not guard on data-dependent expression"
    ):
        torch.export.export(Clip2(), (torch.ones(3),))
    exported = torch.export.export(Clip2Cond(), (torch.ones(3),))
    gm = exported.graph_module
    assert [n.target for n in gm.graph.nodes if n.op == "get_attr"] == [
        "true_graph_0",
        "false_graph_0",
    ]
    assert all(
        isinstance(gm.get_submodule(name), torch.fx.GraphModule)
        for name in ("true_graph_0", "false_graph_0")
    )
    for x in (torch.ones(3), -torch.ones(3)):
        assert torch.equal(exported.module()(x), clip2(x))


# --- what carries over ----------------------------------------------------------------------


def test_torch_fx_shape_prop_is_an_interpreter_and_runs_on_dynamo_and_export_graphs(captured):
    """torch.fx's own `ShapeProp` is an `Interpreter`, and runs on these graphs as on yours. ... a
    pass that walks `graph.nodes` and matches on `op` and `target` works on a `GraphModule` from any
    front end, as long as it matches the targets that front end produces (`torch.relu` from Dynamo,
    `torch.ops.aten.relu.default` from export)."""
    assert issubclass(FxShapeProp, torch.fx.Interpreter)
    torch.manual_seed(0)
    model, x = Small(), torch.randn(2, 4)
    backend, graphs = captured
    torch.compile(model, backend=backend)(x)
    dynamo_gm = graphs[0][0]
    export_gm = torch.export.export(model, (x,)).graph_module
    traced = torch.fx.symbolic_trace(model)
    inputs = {
        "dynamo": (dynamo_gm, (model.lin.weight, model.lin.bias, x)),
        "export": (export_gm, (model.lin.weight, model.lin.bias, x)),
        "symbolic_trace": (traced, (x,)),
    }
    relu_targets = {}
    for name, (gm, args) in inputs.items():
        FxShapeProp(gm).propagate(*args)
        relu = next(n for n in gm.graph.nodes if n.name == "relu")
        assert relu.meta["tensor_meta"].shape == (2, 4), name
        relu_targets[name] = relu.target
    assert relu_targets == {
        "dynamo": torch.relu,
        "export": torch.ops.aten.relu.default,
        "symbolic_trace": torch.relu,
    }
