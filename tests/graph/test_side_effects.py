"""`minifx.graph.side_effects`, seen through dead-code elimination: which unused calls
stay, differential against torch.fx 2.13.

Every table below is checked on both libraries: `Node.is_impure` and what
`eliminate_dead_code` erases must agree, except for the in-place calls that
minifx keeps by their name on purpose (chapter 2's "Differences from
torch.fx"), which are pinned here against torch.fx too, so that the claim
fails if torch.fx changes. The scenarios of PyTorch's own
test/fx/test_dce_pass.py are written again in tests/graph/dead_code_programs.py, in
this project's terms; chapter 3's tests/codegen/test_dead_code_runs.py runs them.
"""

from __future__ import annotations

import importlib
import operator
from typing import Any, Callable

import pytest
import torch
import torch.fx

import minifx
from tests.graph.dead_code_programs import (
    SCENARIOS,
    LeafReLUImpure,
    LogsWithMinifx,
    LogsWithTorchFx,
    log_with_minifx,
    log_with_torch_fx,
)
from tests.graph.support import MINI, TORCH, Lib, differential, names

pytestmark = pytest.mark.ch2


def log_unregistered(x):  # registered with neither library
    print("log", x)


def one_unused_call(lib: Lib, target: Any, make_args: Callable, op: str = "call_function"):
    """x -> target(*make_args(x)) (unused) -> return x."""
    graph = lib.Graph()
    x = graph.placeholder("x")
    args, kwargs = make_args(x)
    call = graph.create_node(op, target, args, kwargs)
    graph.output(x)
    return graph, call


def a(*args, **kwargs):
    """`make_args` for `one_unused_call`: `a(X, 1)` means `(x, 1)` with the placeholder for X."""

    def make(x):
        swap = lambda v: x if v is X else v  # noqa: E731
        return tuple(map(swap, args)), {key: swap(value) for key, value in kwargs.items()}

    return make


X = object()  # stands for the placeholder in `a(...)`
aten, profiler = torch.ops.aten, torch.ops.profiler

KEPT_BY_BOTH = {
    # An operator whose schema writes to an argument; a packet is judged by `.default`.
    "aten.add_.Tensor": (aten.add_.Tensor, a(X, 1)),
    "aten.add.out": (aten.add.out, a(X, X, out=X)),
    "aten.copy_ (packet)": (aten.copy_, a(X, X)),
    "aten.relu_.default": (aten.relu_.default, a(X)),
    # Registered as effectful with PyTorch's effect system.
    "aten._print": (aten._print.default, a("hello")),
    # The table: profiler ranges, asserts, setitem, grad mode and autocast.
    "_record_function_enter_new": (profiler._record_function_enter_new, a("range")),
    "_record_function_enter_new.default": (profiler._record_function_enter_new.default, a("r")),
    "_record_function_exit": (profiler._record_function_exit, a(X)),
    "_record_function_exit._RecordFunction": (profiler._record_function_exit._RecordFunction, a(X)),
    "torch._assert": (torch._assert, a(True, "message")),
    "torch._assert_async": (torch._assert_async, a(X)),
    "aten._assert_scalar": (aten._assert_scalar.default, a(True, "message")),
    "aten.sym_constrain_range": (aten.sym_constrain_range.default, a(X)),
    "operator.setitem": (operator.setitem, a(X, 0, 1.0)),
    "_set_grad_enabled": (torch._C._set_grad_enabled, a(False)),
    "_enter_autocast": (torch.amp._enter_autocast, a("cpu", None, True, None)),
    "_exit_autocast": (torch.amp._exit_autocast, a(X)),
    # Random functions advance the generator, whatever impure_random says.
    "torch.rand": (torch.rand, a(2)),
    "torch.randn": (torch.randn, a(2)),
    "torch.randint": (torch.randint, a(0, 10, (2,))),
    "torch.randperm": (torch.randperm, a(5)),
    "torch.rand_like": (torch.rand_like, a(X)),
    "torch.randn_like": (torch.randn_like, a(X)),
    "torch.randint_like": (torch.randint_like, a(X, 10)),
    "torch.normal": (torch.normal, a(0.0, 1.0, (2,))),
    "torch.poisson": (torch.poisson, a(X)),
    "torch.bernoulli": (torch.bernoulli, a(X)),
    "torch.multinomial": (torch.multinomial, a(X, 1)),
    # ... and an operator tagged nondeterministic_seeded, by default.
    "aten.rand.default": (aten.rand.default, a([2])),
    # Registered with has_side_effect (and wrapped): each library's own registry.
    "has_side_effect (torch.fx)": (log_with_torch_fx, a(X)),
}

ERASED_BY_BOTH = {
    "operator.add": (operator.add, a(X, 1)),
    "torch.relu": (torch.relu, a(X)),
    "aten.relu.default": (aten.relu.default, a(X)),
    "aten.add.Tensor": (aten.add.Tensor, a(X, X)),
    "aten.mul (packet)": (aten.mul, a(X, X)),
    "getattr": (getattr, a(X, "shape")),
    "operator.delitem": (operator.delitem, a(X, 0)),
    "print": (print, a(X)),
    "torch.manual_seed": (torch.manual_seed, a(0)),
    "F.dropout": (torch.nn.functional.dropout, a(X)),
    "not registered": (log_unregistered, a(X)),
}

# minifx's intended difference: in-place by PyTorch's naming rule, with no schema to say so.
KEPT_BY_MINIFX_ONLY = {
    "x.add_(1) (call_method)": ("call_method", "add_", a(X, 1)),
    "torch.relu_": ("call_function", torch.relu_, a(X)),
    "torch.Tensor.add_": ("call_function", torch.Tensor.add_, a(X, 1)),
    "aten.add_ (packet without .default)": ("call_function", aten.add_, a(X, 1)),
}


def is_impure_and_changed(target, make_args, op="call_function", **is_impure_options):
    def build(lib):
        graph, call = one_unused_call(lib, target, make_args, op)
        impure = call.is_impure(**is_impure_options)
        return graph, (
            impure,
            graph.eliminate_dead_code(lambda n: n.is_impure(**is_impure_options)),
        )

    return build


@pytest.mark.parametrize("target, make_args", KEPT_BY_BOTH.values(), ids=KEPT_BY_BOTH.keys())
@pytest.mark.task("2.5")
def test_calls_with_side_effects_survive_in_both(target, make_args):
    graph, (impure, changed) = differential(is_impure_and_changed(target, make_args))
    assert impure and not changed and len(graph.nodes) == 3


@pytest.mark.parametrize("target, make_args", ERASED_BY_BOTH.values(), ids=ERASED_BY_BOTH.keys())
@pytest.mark.task("2.5")
def test_pure_calls_are_erased_by_both(target, make_args):
    graph, (impure, changed) = differential(is_impure_and_changed(target, make_args))
    assert not impure and changed and names(graph.nodes) == ["x", "output"]


@pytest.mark.parametrize(
    "op, target, make_args", KEPT_BY_MINIFX_ONLY.values(), ids=KEPT_BY_MINIFX_ONLY.keys()
)
def test_minifx_keeps_in_place_calls_by_name_which_torch_fx_erases(op, target, make_args):
    theirs, _ = one_unused_call(TORCH, target, make_args, op)
    ours, kept = one_unused_call(MINI, target, make_args, op)
    assert theirs.eliminate_dead_code() is True and len(theirs.nodes) == 2
    assert ours.eliminate_dead_code() is False and kept in list(ours.nodes)


def test_a_function_registered_only_with_minifx_is_erased_by_torch_fx():
    theirs, _ = one_unused_call(TORCH, log_with_minifx, a(X))
    ours, kept = one_unused_call(MINI, log_with_minifx, a(X))
    assert theirs.eliminate_dead_code() is True
    assert ours.eliminate_dead_code() is False and kept.target is log_with_minifx


def test_has_side_effect_returns_the_function_and_leaves_torch_fx_alone():
    def later(x):
        return x

    assert minifx.has_side_effect(later) is later
    assert minifx.has_side_effect is minifx.graph.has_side_effect
    assert later not in torch.fx.node._side_effectful_functions
    _, call = one_unused_call(MINI, later, a(X))
    assert call.is_impure()


def test_a_function_registered_later_with_torch_fx_is_kept_by_minifx_too():
    def registered_late(x):
        return x

    _, call = one_unused_call(MINI, registered_late, a(X))
    assert not call.is_impure()
    torch.fx.has_side_effect(registered_late)  # as torch.distributed does for its collectives
    assert call.is_impure()


@pytest.mark.parametrize(
    "target, make_args, expected",
    [
        (aten.rand.default, a([2]), False),  # tagged nondeterministic_seeded: follows the flag
        (aten.dropout.default, a(X, 0.5, True), False),
        (torch.rand, a(2), True),  # a random function: kept whatever the flag says
        (torch.randn_like, a(X), True),
    ],
    ids=["aten.rand.default", "aten.dropout.default", "torch.rand", "torch.randn_like"],
)
def test_impure_random_false_only_frees_seeded_operators(target, make_args, expected):
    graph, (impure, changed) = differential(
        is_impure_and_changed(target, make_args, impure_random=False)
    )
    assert impure is expected and changed is not expected


def test_auto_functionalized_takes_the_side_effects_of_the_operator_it_wraps():
    wrapper = torch.ops.higher_order.auto_functionalized

    def build(lib):
        graph = lib.Graph()
        x = graph.placeholder("x")
        kept = graph.call_function(wrapper, (profiler._record_function_exit._RecordFunction, x))
        erased = graph.call_function(wrapper, (aten.relu.default, x))
        graph.output(x)
        return graph, (kept.is_impure(), erased.is_impure())

    _, impure = differential(build)
    assert impure == (True, False)


def test_wait_tensor_of_functional_collectives_is_kept_in_both():
    # torch.distributed registers wait_tensor with torch.fx.has_side_effect when its
    # functional collectives are imported; minifx reads that registry, so it keeps it too.
    if not torch.distributed.is_available():
        pytest.skip("this torch build has no torch.distributed")
    importlib.import_module("torch.distributed._functional_collectives")

    c10d = torch.ops._c10d_functional
    for reduce, wait in [
        (c10d.all_reduce.default, c10d.wait_tensor.default),
        (c10d.all_reduce, c10d.wait_tensor),
    ]:

        def build(lib):
            graph = lib.Graph()
            a_, b_, c_ = graph.placeholder("a"), graph.placeholder("b"), graph.placeholder("c")
            d = graph.call_function(aten.mul.Tensor, (a_, b_))
            e = graph.call_function(aten.mul.Tensor, (a_, c_))
            future = graph.call_function(reduce, (e, "sum", "0"))
            graph.call_function(wait, (future,))
            graph.output(d)
            return graph, graph.eliminate_dead_code()

        graph, changed = differential(build)
        assert changed is False and len(graph.nodes) == 8


# -- PyTorch's test_dce_pass scenarios, traced by each library's Tracer ------------------


def traced(lib_tracer: type, module: torch.nn.Module):
    tracer = type("Tracer", (LeafReLUImpure, lib_tracer), {})()
    return tracer.trace(module)


def unused_pure_nodes(graph) -> list[str]:
    return [n.name for n in graph.nodes if not n.users and not n.is_impure()]


@pytest.mark.parametrize("module_type, changes", SCENARIOS, ids=[s[0].__name__ for s in SCENARIOS])
def test_dce_pass_scenarios_match_torch_fx(module_type, changes):
    module = module_type()
    theirs, ours = traced(torch.fx.Tracer, module), traced(minifx.graph.Tracer, module)
    # torch.fx asks the owning module whether a call_module node is impure.
    theirs.owning_module, ours.owning_module = module, module
    assert str(ours) == str(theirs)
    assert bool(unused_pure_nodes(ours)) is changes
    inputs = [n.name for n in ours.nodes if n.op == "placeholder"]
    assert ours.eliminate_dead_code() is theirs.eliminate_dead_code() is changes
    assert str(ours) == str(theirs)
    assert (
        unused_pure_nodes(ours) == []
        and [n.name for n in ours.find_nodes(op="placeholder")] == inputs
    )


def test_dce_pass_custom_is_impure_node_keeps_what_it_says():
    # test_dce_pass's custom rule: every aten.add call is impure.
    def forward(a):
        b = a + 1
        c = torch.ops.aten.add(b, b)  # noqa: F841
        return a

    def custom(node):
        return node.is_impure() or node.target == torch.ops.aten.add

    theirs, ours = torch.fx.Tracer().trace(forward), minifx.graph.Tracer().trace(forward)
    assert ours.eliminate_dead_code(custom) is theirs.eliminate_dead_code(custom) is False
    assert str(ours) == str(theirs)
    assert ours.eliminate_dead_code() is theirs.eliminate_dead_code() is True
    assert str(ours) == str(theirs) and names(ours.nodes) == ["a", "output"]


@pytest.mark.parametrize(
    "module_type, log",
    [(LogsWithMinifx, log_with_minifx), (LogsWithTorchFx, log_with_torch_fx)],
    ids=["minifx.has_side_effect", "torch.fx.has_side_effect"],
)
def test_a_wrapped_and_registered_function_survives_tracing_and_dce(module_type, log):
    graph = minifx.graph.Tracer().trace(module_type())
    assert [n.target for n in graph.nodes if n.op == "call_function"] == [log]
    assert graph.eliminate_dead_code() is False and len(graph.nodes) == 3


def test_torch_fx_keeps_its_registered_function_the_same_way():
    graph = torch.fx.Tracer().trace(LogsWithTorchFx())
    assert graph.eliminate_dead_code() is False and len(graph.nodes) == 3


def test_the_profiler_range_of_pytorch_test_fx_survives():
    def build(lib):
        graph = lib.Graph()
        handle = graph.call_function(profiler._record_function_enter_new, ("test_range",))
        graph.call_function(profiler._record_function_exit, (handle,))
        graph.output(None)
        return graph, graph.eliminate_dead_code()

    graph, changed = differential(build)
    assert changed is False
    assert [n.target for n in graph.nodes][:2] == [
        profiler._record_function_enter_new,
        profiler._record_function_exit,
    ]


def test_call_module_without_an_owning_module_is_pure_in_minifx_and_an_error_in_torch_fx():
    def build(lib):
        graph = lib.Graph()
        x = graph.placeholder("x")
        graph.call_module("lin", (x,))
        graph.output(x)
        return graph

    with pytest.raises(AssertionError, match="owning_module"):
        build(TORCH).eliminate_dead_code()
    ours = build(MINI)
    assert ours.eliminate_dead_code() is True and names(ours.nodes) == ["x", "output"]


def test_the_table_leaves_out_operators_this_torch_build_lacks():
    from minifx.graph.side_effects import _operators

    found = _operators("aten.relu.default", "aten.no_such_operator.default", "no_such_namespace.op")
    assert found == [torch.ops.aten.relu.default]
