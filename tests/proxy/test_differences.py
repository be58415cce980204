"""Every claim of chapter 1's "Differences from torch.fx" box, checked on both libraries.

Each test runs torch.fx as well as minifx, so that a claim about torch.fx that
stops being true (a new torch.fx, a changed minifx) fails here instead of
misleading the reader. One test per claim, in the box's order; the first line
of each docstring quotes it. Chapter 1's tests import only stage 1 of minifx
(`minifx.proxy`), and torch.fx.

Every claim of the box is pinned here. What the tape shares with torch.fx (names,
opcodes, targets, arguments) is compared in tests/proxy/test_differential.py.
"""

from __future__ import annotations

import inspect
import operator
import re
from pathlib import Path

import pytest
import torch
import torch.fx
from torch import nn

from minifx.proxy import (
    GraphAppendingTracer,
    Proxy,
    Tape,
    TapeRecorder,
    TraceError,
    TracerBase,
    trace_to_tape,
)

pytestmark = pytest.mark.ch1


# -- the tape ------------------------------------------------------------------------------


def add_relu_sum(x):
    return torch.relu(x + 1).sum()


def test_torch_fx_records_into_a_graph_stage_1_into_a_tape():
    """torch.fx's Proxies record into a `Graph` from the start; stage 1 records into a
    flat `Tape`."""
    theirs = torch.fx.Tracer().trace(add_relu_sum)
    ours = trace_to_tape(add_relu_sum)
    assert type(theirs) is torch.fx.Graph
    assert type(ours) is Tape and isinstance(ours.records, list)
    assert [(r.name, r.op, r.target) for r in ours] == [
        (n.name, n.op, n.target) for n in theirs.nodes
    ]


def test_proxy_and_tracer_base_are_torch_fx_s_and_record_into_any_graph():
    """The Proxy and `TracerBase` are the same; chapter 2 only supplies a different `graph`."""
    for method in ("create_proxy", "create_node", "create_arg", "to_bool", "iter", "keys", "proxy"):
        ours = inspect.signature(getattr(TracerBase, method)).parameters
        theirs = inspect.signature(getattr(torch.fx.proxy.TracerBase, method)).parameters
        assert list(ours) == list(theirs), method
    # Given torch.fx's own Graph, minifx's Proxy records what torch.fx records.
    graph = torch.fx.Graph()
    x = Proxy(graph.placeholder("x"), GraphAppendingTracer(graph))
    graph.output(add_relu_sum(x).node)
    assert str(graph) == str(torch.fx.symbolic_trace(add_relu_sum).graph)


# -- errors --------------------------------------------------------------------------------


def branch(x, other):
    return x if x.sum() > 0 else -x


def loop(x, other):
    return [v for v in x]


def length(x, other):
    return x.view(len(x), -1)


def dict_key(x, other):
    return x.view({x: 1})


def two_tracers(x, other):
    return torch.add(x, other)


def to_int(x, other):
    return x * int(x)


def to_range(x, other):
    return [i for i in range(x)]


def assign_item(x, other):
    x[0] = 1
    return x


def unrecordable(x, other):
    return x.view(object())


def proxies(lib):
    """Two Proxies of `lib` ("torch.fx" or "minifx"), each recording into its own graph."""
    if lib == "torch.fx":
        tracers = [torch.fx.proxy.GraphAppendingTracer(torch.fx.Graph()) for _ in range(2)]
        return [torch.fx.Proxy(t.graph.placeholder(name), t) for t, name in zip(tracers, "xy")]
    tracers = [GraphAppendingTracer(Tape()) for _ in range(2)]
    return [Proxy(t.graph.create_node("placeholder", name), t) for t, name in zip(tracers, "xy")]


def raised(lib, program) -> BaseException:
    with pytest.raises(Exception) as error:
        program(*proxies(lib))
    return error.value


@pytest.mark.parametrize(
    "program, torch_fx_type, words",
    [
        (
            branch,
            torch.fx.proxy.TraceError,
            "symbolically traced variables cannot be used as inputs to control flow",
        ),
        (loop, torch.fx.proxy.TraceError, "Proxy object cannot be iterated"),
        (length, RuntimeError, "'len' is not supported in symbolic tracing by default"),
        (dict_key, RuntimeError, "ictionaries used as an argument cannot contain a Node"),
        (two_tracers, RuntimeError, None),
        (to_int, TypeError, None),
        (to_range, TypeError, None),
        (assign_item, TypeError, None),
        (unrecordable, NotImplementedError, None),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
def test_trace_errors_are_the_types_torch_fx_raises(program, torch_fx_type, words):
    """minifx raises a `TraceError` (a `ValueError`, as torch.fx's) wherever tracing must
    stop, and it is also the type torch.fx raises for the same mistake: a `TraceError`, a
    subclass of torch.fx's, for `if` and `for`; also a
    `RuntimeError` for `len()`, a Proxy as a dict key and Proxies of two tracers; also a
    `TypeError` for `int()` / `range()` and `p[0] = 1`; also a `NotImplementedError` for an
    argument that cannot be recorded. Its message keeps torch.fx's words."""
    theirs, ours = raised("torch.fx", program), raised("minifx", program)
    assert type(theirs) is torch_fx_type
    assert isinstance(ours, TraceError) and isinstance(ours, ValueError)
    assert isinstance(ours, torch_fx_type)  # `except torch.fx.proxy.TraceError` catches it too
    if words:
        assert words in str(theirs) and words in str(ours)


@pytest.mark.parametrize(
    "program", [lambda x, other: round(x), lambda x, other: divmod(x, 2)], ids=["round", "divmod"]
)
def test_builtins_that_need_a_number_raise_python_s_type_error_in_both(program):
    """Other builtins that need a number (`round(p)`, `divmod(p, 2)`) raise Python's
    `TypeError` in both."""
    theirs, ours = raised("torch.fx", program), raised("minifx", program)
    assert type(theirs) is type(ours) is TypeError
    assert str(ours) == str(theirs).replace("torch.fx.proxy.", "")


def int_by_getattr(x, other):
    return getattr(x, "__int__")()  # noqa: B009 (the case under test)


def int_kept_in_a_variable(x, other):
    to_int = x.__int__
    return to_int()


@pytest.mark.parametrize(
    "program", [int_by_getattr, int_kept_in_a_variable], ids=["getattr", "variable"]
)
def test_a_dunder_records_by_name_only_where_the_call_is_written_out(program):
    """A dunder method called by its name records as in torch.fx where the call is written
    `x.__int__(...)`; reached another way it raises the `TraceError` of `int(x)`, where
    torch.fx records it."""
    graph = torch.fx.symbolic_trace(program).graph
    assert [n.target for n in graph.nodes if n.op == "call_method"] == ["__int__"]
    with pytest.raises(TypeError, match="was converted to an int") as ours:
        trace_to_tape(program)
    assert isinstance(ours.value, TraceError)


def test_a_keyword_to_an_operator_dunder_is_a_type_error_at_the_call():
    """A keyword to an operator's dunder is a `TypeError` at the call; torch.fx records it
    and fails with an `IndexError` as it writes the code."""

    def program(x):
        return x.__add__(other=1)

    graph = torch.fx.Tracer().trace(program)
    assert [(n.target, n.kwargs) for n in graph.nodes][1] == (operator.add, {"other": 1})
    with pytest.raises(IndexError):
        torch.fx.GraphModule(torch.nn.Module(), graph)
    with pytest.raises(TypeError, match="unexpected keyword argument 'other'"):
        trace_to_tape(program)


def test_dunders_python_never_calls_record_a_method_call():
    """Python never calls `__rgetitem__`, `__div__` or `__rdiv__`; written out, they record
    a `call_method` here. torch.fx records `operator.getitem(1, x)` for `x.__rgetitem__(1)`,
    and `x.__div__(y)` raises `AttributeError`."""

    def rgetitem(x):
        return x.__rgetitem__(1)

    def div(x):
        return x.__div__(2), x.__rdiv__(2)

    ours = [(r.op, r.target, r.args) for r in trace_to_tape(rgetitem) if r.op == "call_method"]
    assert [(op, target, args[1:]) for op, target, args in ours] == [
        ("call_method", "__rgetitem__", (1,))
    ]
    graph = torch.fx.Tracer().trace(rgetitem)
    getitem = next(n for n in graph.nodes if n.op == "call_function")
    assert (getitem.target, getitem.args[0]) == (operator.getitem, 1)
    assert [r.target for r in trace_to_tape(div) if r.op == "call_method"] == [
        "__div__",
        "__rdiv__",
    ]
    with pytest.raises(AttributeError, match="has no attribute 'div'"):
        torch.fx.Tracer().trace(div)


# -- printing ------------------------------------------------------------------------------


def test_the_tape_prints_no_user_counts_and_summarises_tensors():
    """The tape prints without torch.fx's `[num_users=N]`, and a constant tensor argument
    prints as `<Tensor 2x3 float32>`, not its values."""
    graph, tape = torch.fx.Graph(), Tape()
    x = graph.placeholder("x")
    graph.output(graph.call_function(operator.add, (x, torch.zeros(2, 3))))
    x = tape.create_node("placeholder", "x")
    tape.create_node(
        "output",
        "output",
        (tape.create_node("call_function", operator.add, (x, torch.zeros(2, 3))),),
    )
    theirs = re.sub(r" : \[num_users=\d\]", "", str(graph)).replace("graph():", "tape():")
    values = "tensor([[0., 0., 0.],\n        [0., 0., 0.]])"
    assert values in theirs and "[num_users=1]" in str(graph)
    assert str(tape) == theirs.replace(values, "<Tensor 2x3 float32>")


# -- inputs and constants ------------------------------------------------------------------


def variadic(*xs):
    return xs[0]


def test_star_args_are_refused_where_torch_fx_makes_one_placeholder():
    """`def f(*xs)` is refused; torch.fx makes one `*xs` placeholder."""
    placeholders = torch.fx.symbolic_trace(variadic).graph.find_nodes(op="placeholder")
    assert [(n.name, n.target) for n in placeholders] == [("_xs", "*xs")]
    with pytest.raises(TraceError, match=r"variadic\(\) takes \*xs"):
        trace_to_tape(variadic)


CONSTANT = torch.ones(2)


def add_constant(x):
    return x + CONSTANT


@pytest.mark.parametrize("program", [nn.Linear(2, 2), add_constant], ids=["parameters", "constant"])
def test_parameters_and_constant_tensors_are_plain_arguments(program):
    """Parameters and constant tensors used by a traced function are recorded as plain
    arguments here; torch.fx records them as `get_attr` nodes."""
    theirs = torch.fx.symbolic_trace(program).graph
    ours = trace_to_tape(program)
    tensors = [arg for r in ours for arg in r.args if isinstance(arg, torch.Tensor)]
    attributes = [getattr(theirs.owning_module, n.target) for n in theirs.find_nodes(op="get_attr")]
    assert len(tensors) == len(attributes) > 0
    assert all(ours_ is theirs_ for ours_, theirs_ in zip(tensors, attributes))
    assert [r.op for r in ours if r.op == "get_attr"] == []


# -- not covered ---------------------------------------------------------------------------


def asserting(x):
    assert x.sum() > 0
    return x


def test_a_lambda_without_source_is_named_lambda_where_torch_fx_raises():
    """A lambda is named, as in torch.fx, by the text of its source before the first `=`
    [...]; one with no source to read [...] is named `<lambda>`, where torch.fx raises
    "Unable to represent lambda" as it prints the graph."""
    from minifx.proxy.qualnames import qualified_name

    named = lambda a: a  # noqa: E731 (what is tested: a lambda's name)
    assert qualified_name(named) == torch.fx.node._get_qualified_name(named)
    assert qualified_name(named).endswith(".named")
    made = eval("lambda a: a")
    assert qualified_name(made) == f"{__name__}.<lambda>"
    with pytest.raises(RuntimeError, match="Unable to represent lambda"):
        torch.fx.node._get_qualified_name(made)


def test_trace_asserts_is_not_covered():
    """Not covered: `trace_asserts`."""
    # torch.fx's switch, read by its Proxy's __bool__ (which then looks for the bytecode
    # of an `assert`; whether it finds it depends on the Python version).
    assert torch.fx.proxy.TracerBase.trace_asserts is False
    assert "self.tracer.trace_asserts" in inspect.getsource(torch.fx.Proxy.__bool__)
    assert not hasattr(TracerBase, "trace_asserts")
    recorder = TapeRecorder()
    recorder.trace_asserts = True  # nothing reads it: an assert still stops tracing
    with pytest.raises(TraceError, match="was used as a Python bool"):
        recorder.trace(asserting)


class Scripted(nn.Module):
    def forward(self, x):
        return x + 1

    @torch.jit.export
    def double(self, x):
        return x * 2


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
def test_torchscript_methods_are_not_covered():
    """Not covered: TorchScript methods in `__torch_function__` (torch.fx records a call of
    the method on its module; minifx records the method as a function)."""
    scripted = torch.jit.script(Scripted())

    def call_method(x):
        return scripted.double(x)

    theirs = torch.fx.symbolic_trace(call_method).graph
    assert [(n.op, n.target) for n in theirs.nodes][2] == ("call_method", "double")
    ours = trace_to_tape(call_method)
    assert [(r.op, type(r.target)) for r in ours][1] == ("call_function", torch.ScriptMethod)


def _torchbind_relu():
    """A TorchBind object from torch's test library (shipped in torch/lib), or skip."""
    library = Path(torch.__file__).parent / "lib" / "libtorchbind_test.so"
    if not library.exists():
        pytest.skip("torch's libtorchbind_test.so is not installed")
    torch.ops.load_library(str(library))
    return torch.classes._TorchScriptTesting._ReLUClass()


class CallsTorchBind(nn.Module):
    def __init__(self, relu):
        super().__init__()
        self.relu = relu

    def forward(self, x):
        return self.relu.run(x)


def test_torchbind_methods_are_refused_clearly():
    """Not covered: a TorchBind object's method, which has no `__name__`, called with a
    Proxy (torch.fx records a call_method on the object; minifx raises its TraceError
    saying what is not covered and how to trace around it, not an AttributeError)."""
    module = CallsTorchBind(_torchbind_relu())
    theirs = torch.fx.symbolic_trace(module).graph
    assert [(n.op, n.target) for n in theirs.nodes][2] == ("call_method", "run")
    with pytest.raises(TraceError, match=r"(?s)`run`, a method of a TorchScript.*leaf"):
        trace_to_tape(module)


def test_higher_order_operators_are_not_covered():
    """Not covered: higher-order operators in `__torch_function__` (torch.fx explains why it
    refuses one that gets an arbitrary callable; minifx treats it as any function, and
    refuses the callable as an argument it cannot record)."""
    cond = torch.ops.higher_order.cond
    assert isinstance(cond, torch._ops.HigherOrderOperator)
    branches = (lambda a: a + 1, lambda a: a - 1)
    theirs, _ = proxies("torch.fx")
    with pytest.raises(RuntimeError, match="Unable to symbolically trace the HigherOrderOperator"):
        torch.fx.Proxy.__torch_function__(cond, (), (theirs, *branches, (theirs,)))
    ours, _ = proxies("minifx")
    with pytest.raises(NotImplementedError, match="an argument of type function cannot be"):
        Proxy.__torch_function__(cond, (), (ours, *branches, (ours,)))


def test_op_overload_arguments_are_not_covered():
    """Not covered: `OpOverload` arguments (torch.fx stores one as it is; minifx refuses it)."""
    overload = torch.ops.aten.add.Tensor
    assert torch.fx.Tracer().create_arg(overload) is overload
    with pytest.raises(NotImplementedError, match="an argument of type OpOverload cannot be"):
        TapeRecorder().create_arg(overload)


class Inner(nn.Module):
    def forward(self, x):
        return x.relu()


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def forward(self, x):
        return self.inner(x)


def test_the_tape_records_no_node_metadata():
    """The metadata torch.fx attaches to nodes (stack traces, module scopes) is recorded by
    chapter 2's `Tracer`, not by the tape."""
    tracer = torch.fx.Tracer()
    tracer.record_stack_traces = True
    relu = tracer.trace(Outer()).find_nodes(op="call_method", target="relu")[0]
    assert "return x.relu()" in relu.stack_trace and list(relu.meta["nn_module_stack"]) == ["inner"]
    recorder = TapeRecorder()
    recorder.record_stack_traces = True
    for record in recorder.trace(Outer()):
        assert not hasattr(record, "meta") and not hasattr(record, "stack_trace")
