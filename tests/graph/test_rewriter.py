"""`minifx.graph.rewriter`: `RewritingTracer`, against torch.fx's
(`torch.fx.experimental.rewriter`).

The programs (tests/graph/rewriter_cases.py) are those of PyTorch's tests of the
rewriter, plus variants with an `assert`, so that minifx's rewriting path runs. Each is
traced by both libraries; the graphs must print alike. `annotate` is tested in
test_annotation.py; `tests/codegen/test_rewriting_tracer.py` runs the programs as
GraphModules.

The last section pins the claims of chapter 2's differences box about the
rewriter, running torch.fx as well.

This module has no `from __future__ import annotations`: torch.fx's rewriter
evaluates annotations again, so its graphs would differ (see
`test_annotations_stay_as_the_module_wrote_them`).
"""

import operator
import types
from typing import Any

import pytest
import torch
import torch.fx
from torch import nn

import minifx
import minifx.graph
from minifx.proxy import TraceError
from tests.graph import rewriter_cases, rewriter_programs
from tests.graph.rewriter_cases import (
    PROGRAMS,
    REWRITERS,
    TRACERS,
    WRAPPED,
    AssertsEqual,
    AssertsWithMessage,
    HasUnusedBatchNorm,
    Program,
    lifted_leaf,
    lifted_leaf2,
    lifts_and_checks,
    nodes,
    trace,
)

pytestmark = pytest.mark.ch2


# -- the same graphs as torch.fx --------------------------------------------------------


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_programs_trace_as_with_torch_fx(program: Program):
    theirs = trace("torch.fx", program.make())[1]
    ours = trace("minifx", program.make())[1]
    assert str(ours) == str(theirs)
    assert nodes(ours) == nodes(theirs)
    ours.lint()


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_wrapped_functions_are_put_back_after_tracing(program: Program):
    for lib in REWRITERS:
        trace(lib, program.make())
        for name, function in WRAPPED.items():
            assert vars(rewriter_cases)[name] is function, f"{lib} left {name} patched"
            assert not hasattr(function, "__fx_already_patched")


@pytest.mark.parametrize("message", [None, "msg"])
def test_an_assert_becomes_a_torch_assert_node(message: str | None):
    module = AssertsWithMessage() if message else AssertsEqual()
    for lib in REWRITERS:
        graph = trace(lib, module)[1]
        check = next(node for node in graph.nodes if node.target is torch._assert)
        eq = check.args[0]
        assert (check.op, eq.target, check.args[1]) == ("call_function", operator.eq, message or "")
        assert [node.name for node in eq.all_input_nodes] == ["y", "z"]


def test_a_wrapped_call_is_one_node_after_rewriting():
    for lib in REWRITERS:
        graph = trace(lib, lifts_and_checks())[1]
        targets = [node.target for node in graph.nodes if node.op == "call_function"]
        assert targets.count(lifted_leaf) == 1 and targets.count(lifted_leaf2) == 1, lib


def test_an_assert_on_constants_runs_while_tracing():
    class Holds(nn.Module):
        def forward(self, x):
            assert 2 > 1, "always"
            return x

    class Fails(nn.Module):
        def forward(self, x):
            assert 1 > 2, "never"
            return x

    for lib in REWRITERS:
        assert "_assert" not in str(trace(lib, Holds())[1])
        with pytest.raises(AssertionError, match="never"):
            trace(lib, Fails())


class AddsConstant(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        assert x.dim() == 2
        return self.lin(x) + torch.ones(3)


def _state(module: nn.Module) -> dict:
    return {
        key: dict(value) if isinstance(value, dict) else value
        for key, value in vars(module).items()
    }


def test_the_traced_root_shares_the_module_s_state_and_leaves_it_unchanged():
    module = AddsConstant()
    before = _state(module)
    for lib in REWRITERS:
        tracer, graph = trace(lib, module)
        assert tracer.root.lin is module.lin
        assert tracer.root._tensor_constant0.shape == (3,)
        assert _state(module) == before, f"{lib} changed the module"


# -- errors -----------------------------------------------------------------------------


def test_a_function_without_source_raises_os_error():
    namespace: dict = {}
    exec("def made_by_exec(x):\n    assert x > 0\n    return x\n", namespace)
    for lib in REWRITERS:
        with pytest.raises(OSError):
            trace(lib, namespace["made_by_exec"])
    with pytest.raises(OSError, match="cannot rewrite made_by_exec: its source code is not"):
        trace("minifx", namespace["made_by_exec"])


def test_a_submodule_without_source_runs_as_it_is():
    namespace: dict = {}
    exec(
        "import torch\nclass NoSource(torch.nn.Module):\n    def forward(self, x):\n"
        "        return x + 1\n",
        namespace,
    )

    class HasNoSourceSubmodule(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.sub = namespace["NoSource"]()

        def forward(self, x):
            assert x.dim() == 1
            return self.sub(x)

    graphs = {lib: str(trace(lib, HasNoSourceSubmodule())[1]) for lib in REWRITERS}
    assert graphs["minifx"] == graphs["torch.fx"]
    assert "call_function[target=operator.add](args = (%x, 1)" in graphs["minifx"]


def test_a_builtin_raises_type_error():
    for lib in REWRITERS:
        with pytest.raises(TypeError):
            trace(lib, len)


def test_an_untraceable_line_after_an_assert_names_the_user_s_line():
    class Branches(nn.Module):
        def forward(self, x):
            assert x.dim() == 1
            if x.sum() > 0:
                return x
            return -x

    with pytest.raises(TraceError) as error:
        trace("minifx", Branches())
    assert f'File "{__file__}"' in str(error.value)
    assert "if x.sum() > 0:" in str(error.value)


# -- chapter 2's differences box --------------------------------------------------------


def _outcome(lib: str, root: Any) -> Any:
    """The graph `lib`'s RewritingTracer makes of `root`, or the type of what it raised."""
    try:
        return trace(lib, root)[1]
    except Exception as error:  # any error: its type is the result
        return type(error)


def _has_assert(outcome: Any) -> bool:
    return any(node.target is torch._assert for node in outcome.nodes)


def closure_program():
    limit = 4

    def to_trace(x):
        assert x.size(0) <= limit, "too many rows"
        return x * limit

    return to_trace


class Base(nn.Module):
    def forward(self, x):
        return x + 1


class CallsSuper(Base):
    def forward(self, x):
        assert x.dim() == 1
        return super().forward(x) * 2


class CallsHelper(nn.Module):
    def helper(self, x):
        return x * 2

    def forward(self, x):
        assert x.dim() == 1
        return self.helper(x)


class ChecksInside(nn.Module):
    def forward(self, x):
        assert x.dim() == 2, "rows"
        return x.relu()


class HasCheckingSubmodule(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = ChecksInside()

    def forward(self, x):
        return self.inner(x) + 1


class DeclaresOnly(nn.Module):
    def forward(self, x):
        assert x.dim() == 1
        y: int  # noqa: F842 (a bare annotation: what the tracer must ignore)
        return x


@pytest.mark.parametrize(
    "make, torch_fx_raises",
    [
        (lambda: rewriter_programs.top_level_check, AssertionError),
        (closure_program, NameError),
        (CallsSuper, RuntimeError),
        (CallsHelper, AttributeError),
        (HasCheckingSubmodule, torch.fx.proxy.TraceError),
        (DeclaresOnly, ValueError),
    ],
    ids=["top-level function", "closure", "super", "helper method", "submodule", "bare annotation"],
)
def test_the_rewriter_rewrites_what_torch_fx_s_cannot(make, torch_fx_raises):
    """Module-level functions, closures, `super()`, other methods of the class, submodules
    traced through, bare annotations (`y: int`): minifx records the assert, torch.fx raises."""
    assert _outcome("torch.fx", make()) is torch_fx_raises
    assert _has_assert(_outcome("minifx", make()))


def test_the_rewriter_keeps_the_closure_and_the_class():
    """The rewritten code reads the closure's cells and the class's methods."""
    graph = trace("minifx", closure_program())[1]
    assert "args = (%x, 4)" in str(graph)
    for module in (CallsSuper(), CallsHelper()):
        graph = trace("minifx", module)[1]
        assert [node.target for node in graph.nodes if node.op == "call_function"] == [
            operator.eq,
            torch._assert,
            *[operator.add] * isinstance(module, Base),
            operator.mul,
        ]


def test_the_rewritten_code_keeps_the_user_s_file_and_lines():
    """A node's stack trace names the user's file and line; torch.fx's names file "" instead."""
    traces = {}
    for lib in REWRITERS:
        tracer = REWRITERS[lib]()
        tracer.record_stack_traces = True
        graph = tracer.trace(AssertsWithMessage())
        traces[lib] = next(node for node in graph.nodes if node.name == "eq").stack_trace
    assert 'File "", line 2, in forward' in traces["torch.fx"]
    assert traces["minifx"].startswith(f'File "{rewriter_cases.__file__}", line ')
    assert traces["minifx"].rstrip().endswith('assert y == z, "msg"')


def test_annotations_stay_as_the_module_wrote_them():
    """Under `from __future__ import annotations`, minifx's types stay strings, as with
    Tracer; torch.fx's rewriter evaluates them."""
    module = rewriter_programs.FutureAnnotated
    assert module.forward.__annotations__["x"] == "torch.Tensor"
    assert "%x : 'torch.Tensor' [num_users" in str(trace("minifx", module())[1])
    assert "%x : torch.Tensor [num_users" in str(trace("torch.fx", module())[1])


def test_no_annotate_import_is_needed():
    """minifx's rewritten code calls its own `annotate`; torch.fx's needs the name in the module."""
    assert _outcome("torch.fx", rewriter_programs.AnnotatesWithoutImport()) is NameError
    graph = trace("minifx", rewriter_programs.AnnotatesWithoutImport())[1]
    assert graph.find_nodes(op="call_method", target="sum")[0].type is int


def test_the_root_is_the_module_unless_its_forward_is_rewritten():
    """`tracer.root` is the module itself when nothing is rewritten, else a copy whose class
    subclasses the module's; torch.fx's root is always a copy of another class."""
    for module in (HasUnusedBatchNorm(), AssertsEqual()):
        theirs = trace("torch.fx", module)[0].root
        assert not isinstance(theirs, type(module))
    plain = HasUnusedBatchNorm()
    assert trace("minifx", plain)[0].root is plain
    checked = CallsHelper()
    root = trace("minifx", checked)[0].root
    assert root is not checked and isinstance(root, CallsHelper)
    assert type(root).forward is not CallsHelper.forward


def test_a_lambda_is_traced_as_it_is():
    """A lambda holds no statement to rewrite; it is traced like any function."""
    assert str(trace("minifx", lambda x: x + 1)[1]) == str(
        TRACERS["minifx"]().trace(lambda x: x + 1)
    )


def test_rewritten_function_is_a_function_of_its_module():
    rewritten = minifx.graph.rewriter.rewrite(closure_program())
    assert isinstance(rewritten, types.FunctionType)
    assert rewritten.__globals__ is globals()
    assert rewritten.__qualname__ == "closure_program.<locals>.to_trace"
