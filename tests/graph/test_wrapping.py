"""`minifx.graph.wrapping`: `wrap`, which records a call of a module-level function as one
node instead of tracing through it, against torch.fx.

The programs are in tests/graph/wrapped_helpers.py (its docstring says why `minifx.wrap`
and `torch.fx.wrap` registrations are kept apart); the corpus traces them in
test_differential.py. These tests keep those comparisons honest, check that the
patched globals are restored after a trace, and pin `wrap`'s error messages.
"""

from __future__ import annotations

import pytest
import torch
import torch.fx
import torch.fx._symbolic_trace

import minifx
import minifx.graph
from minifx.graph.errors import NotAGlobalFunction
from minifx.graph.wrapping import Patcher
from tests.graph import wrapped_helpers as wh
from tests.graph.corpus import CASES_BY_NAME
from tests.graph.support import (
    diff,
    error_of,
    getitem_listed_in,
    tensor_left_as_torch_fx_found_it,
)
from tests.oracle import trace_minifx, trace_torch

pytestmark = pytest.mark.ch2


def test_minifx_wrapped_helpers_are_unknown_to_torch_fx():
    """The minifx.wrap cases would prove nothing if torch.fx.wrap registered them too,
    because minifx honours torch.fx.wrap registrations as well."""
    registered = {name for (_, name) in torch.fx._symbolic_trace._wrapped_fns_to_patch}
    assert registered.isdisjoint(wh.MINI_WRAPPED_NAMES)


@pytest.mark.parametrize(
    "root",
    [wh.uses_mini_rows_prefix, wh.uses_mini_clamp_positive, wh.uses_wrapped_round],
    ids=lambda fn: fn.__name__,
)
def test_minifx_wrapped_helpers_cannot_be_traced_through(root):
    """Without autowrap_functions, torch.fx traces into the helper and fails, so a
    minifx graph holding one call of it shows that minifx.wrap took effect."""
    with pytest.raises((TypeError, ValueError)):
        torch.fx.Tracer().trace(root)


def _unwrapped_rows_prefix(x):
    # The body of wrapped_helpers.rows_prefix, in a module where nothing is wrapped.
    return x[: min(len(x), 2)]


@pytest.mark.parametrize(
    "tracer", [torch.fx.Tracer, minifx.graph.Tracer], ids=["torch.fx", "minifx"]
)
def test_wrapped_helper_body_cannot_be_traced_through(tracer: type):
    """So a graph that holds one call of `rows_prefix` shows its registration took effect."""
    with pytest.raises(Exception, match="len"):
        tracer().trace(_unwrapped_rows_prefix)


def test_wrapped_call_is_marked_in_meta():
    """Both libraries mark the node of a wrapped call with meta["is_wrapped"]."""
    c = CASES_BY_NAME["minifx_wrapped_by_name"]
    for graph in (trace_torch(c).graph, trace_minifx(c).graph):
        wrapped = [n for n in graph.nodes if n.meta.get("is_wrapped")]
        assert [n.name for n in wrapped] == ["mini_rows_prefix"]


def test_tracing_leaves_torch_nn_unpatched():
    """After a trace (even a failing one) nn.Module's __call__ and __getattr__ are back."""
    call, getattr_ = torch.nn.Module.__call__, torch.nn.Module.__getattr__
    trace_minifx(CASES_BY_NAME["NestedUserModules"])
    with pytest.raises(minifx.TraceError):
        minifx.graph.Tracer().trace(_unwrapped_rows_prefix)
    assert (torch.nn.Module.__call__, torch.nn.Module.__getattr__) == (call, getattr_)
    assert wh.mini_rows_prefix.__name__ == "mini_rows_prefix"
    assert not getattr(wh.mini_rows_prefix, "_minifx_stand_in", False)


MINIFX_WRAPPED_BUILTIN_GRAPH = """\
graph():
    %x : [num_users=1] = placeholder[target=x]
    %mul : [num_users=1] = call_function[target=operator.mul](args = (%x, 10), kwargs = {})
    %round_1 : [num_users=1] = call_function[target=builtins.round](args = (%mul,), kwargs = {})
    %truediv : [num_users=1] = call_function[target=operator.truediv](args = (%round_1, 10), kwargs = {})
    return truediv"""


def test_minifx_wrapped_builtin_golden():
    """minifx.wrap("round") has no torch.fx.Tracer equivalent in this module, so the graph
    is pinned. It is what torch.fx prints for the same program in a module that calls
    torch.fx.wrap("round") instead (`round_1`, because `round` is a builtin's name)."""
    actual = str(minifx.graph.Tracer().trace(wh.uses_wrapped_round))
    expected = MINIFX_WRAPPED_BUILTIN_GRAPH
    assert actual == expected, f"printout changed:\n{diff(expected, actual)}"


# -- wrap's errors ------------------------------------------------------------------------


def register_inside_a_function():
    minifx.wrap("torch_sum_helper")


def test_wrap_inside_a_function():
    message = error_of(NotImplementedError, register_inside_a_function)  # torch.fx's type
    assert message == (
        "wrap('torch_sum_helper') was called inside register_inside_a_function(), but it must "
        "be called at the top level of a module: it replaces the name in that module's globals "
        "while tracing. Move the call next to the function's definition."
    )


def test_wrap_as_a_decorator_inside_a_function():
    def decorate_inside():
        @minifx.graph.wrap
        def helper(x):
            return x

    message = error_of(NotImplementedError, decorate_inside)
    assert message == (
        "wrap('helper') was called inside decorate_inside(), but it must be called at the top "
        "level of a module: it replaces the name in that module's globals while tracing. Move "
        "the call next to the function's definition."
    )


@pytest.mark.parametrize(
    "value, shown", [(3, "int: 3"), (None, "NoneType: None"), (["f"], "list: ['f']")]
)
def test_wrap_of_something_neither_callable_nor_a_name(value, shown):
    message = error_of(NotAGlobalFunction, lambda: minifx.wrap(value))
    assert issubclass(NotAGlobalFunction, TypeError)
    with pytest.raises(RuntimeError):  # torch.fx's type, which minifx's is as well
        torch.fx.wrap(value)
    assert message == f"wrap() takes a function or the name of a global function, got {shown}."


def test_minifx_wrap_is_the_graph_stage_wrap():
    assert minifx.wrap is minifx.graph.wrap


class AsksWhetherTraced(torch.nn.Module):
    def forward(self, x):
        if torch.fx._symbolic_trace.is_fx_tracing():  # as torch.nested's code asks
            return x + 1
        return x - 1


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_torch_fx_s_tracing_flag_is_up_while_minifx_traces_and_down_after():
    theirs = torch.fx.symbolic_trace(AsksWhetherTraced()).graph
    ours = minifx.graph.Tracer().trace(AsksWhetherTraced())
    assert str(ours) == str(theirs)
    assert [n.name for n in ours.nodes] == ["x", "add", "output"]
    assert not torch.fx._symbolic_trace.is_fx_tracing()

    def fails(x):
        assert torch.fx._symbolic_trace.is_fx_tracing()
        raise ValueError("stop")

    with pytest.raises(ValueError, match="stop"):
        minifx.graph.Tracer().trace(fails)
    assert not torch.fx._symbolic_trace.is_fx_tracing()


# -- methods listed to patch (test_fx's test_getitem) ----------------------------------


class _WithBuffer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.pe = torch.nn.Buffer(torch.arange(64.0).reshape(8, 8))


class SlicesABuffer(_WithBuffer):
    def forward(self, x):
        return self.pe[:, : x.size(0)]


class IndexesABuffer(_WithBuffer):
    def forward(self, x):
        return self.pe[x.size(0)]


@pytest.mark.parametrize("module", [SlicesABuffer, IndexesABuffer], ids=lambda m: m.__name__)
@pytest.mark.parametrize("listed_by", ["minifx", "torch.fx"])
def test_a_method_listed_to_patch_is_recorded_as_one_call_method(module, listed_by):
    """`self.pe[:, : x.size(0)]` indexes a plain tensor with a Proxy: torch.fx records it as
    `pe.__getitem__(...)` when `(torch.Tensor, "__getitem__")` is in its
    `_wrapped_methods_to_patch`; minifx honours its own list of that name and torch.fx's."""
    torch_fx_s = torch.fx._symbolic_trace._wrapped_methods_to_patch
    with tensor_left_as_torch_fx_found_it(), getitem_listed_in(torch_fx_s):
        theirs = str(torch.fx.Tracer().trace(module()))
    methods = (
        minifx.graph.wrapping._wrapped_methods_to_patch
        if listed_by == "minifx"
        else torch.fx._symbolic_trace._wrapped_methods_to_patch
    )
    before = torch.Tensor.__dict__.get("__getitem__")  # None: inherited from TensorBase
    with getitem_listed_in(methods):
        ours = minifx.graph.Tracer().trace(module())
    assert str(ours) == theirs, diff(theirs, str(ours))
    assert [n.op for n in ours.nodes if n.target == "__getitem__"] == ["call_method"]
    assert torch.Tensor.__dict__.get("__getitem__") is before  # put back as it was
    assert torch.arange(3)[1:].tolist() == [1, 2]


def test_without_the_method_listed_indexing_a_tensor_with_a_proxy_fails():
    """As in torch.fx (a TypeError there, a TraceTypeError, also a TypeError, here)."""
    with pytest.raises(TypeError):
        torch.fx.Tracer().trace(SlicesABuffer())
    with pytest.raises(TypeError, match="was converted to an int"):
        minifx.graph.Tracer().trace(SlicesABuffer())


def test_patching_an_inherited_method_leaves_it_inherited_after():
    class Base:
        def name(self):
            return "base"

    class Child(Base):
        pass

    with Patcher() as patcher:
        patcher.patch_method(Child, "name", lambda self: "patched")
        assert Child().name() == "patched"
    assert "name" not in Child.__dict__
    assert Child().name() == "base"
