"""`RewritingTracer` and `annotate`, against torch.fx's (`torch.fx.experimental.rewriter`).

The programs are those of PyTorch's tests of the rewriter (`test_ast_rewriter_*` in
test_fx.py, `test_subgraph_rewriter_annotations_int`), in our own words, plus
variants with an `assert`, so that minifx's rewriting path runs (minifx leaves a
function without one as it is). Each is traced by both libraries; the graphs must
print alike. `tests/codegen/test_rewriting_tracer.py` runs them as GraphModules.

The last section pins the claims of chapter 2's differences box about the
rewriter, running torch.fx as well.

This module has no `from __future__ import annotations`: torch.fx's rewriter
evaluates annotations again, so its graphs would differ (see
`test_annotations_stay_as_the_module_wrote_them`).
"""

import dataclasses
import operator
import types
from typing import Any, Callable

import pytest
import torch
import torch.fx
import torch.fx.experimental.rewriter as torch_rewriter
from torch import nn

# torch.fx's rewritten code calls `annotate` by name in the globals of the function's
# module, so the programs below need it here (minifx's needs no import).
from torch.fx.annotate import annotate

import minifx
import minifx.graph
from minifx.proxy import TraceError
from tests.graph import rewriter_programs

pytestmark = pytest.mark.ch2

REWRITERS = {"torch.fx": torch_rewriter.RewritingTracer, "minifx": minifx.graph.RewritingTracer}
TRACERS = {"torch.fx": torch.fx.Tracer, "minifx": minifx.graph.Tracer}
ANNOTATE = {"torch.fx": annotate, "minifx": minifx.annotate}


# -- wrapped functions, registered with torch.fx.wrap (minifx honours it too) ----------


def lifted_leaf(a, b):
    return a[0] + a[1] + b


torch.fx.wrap("lifted_leaf")


def lifted_leaf2(a, b):
    return a[0] + a[1] + b


torch.fx.wrap(lifted_leaf2)


@torch.fx.wrap
def wrapped_via_decorator(a):
    return a + 1


def wrapped_with_submodule(x, batchnorm1d):
    return batchnorm1d(x)


torch.fx.wrap("wrapped_with_submodule")

WRAPPED = {
    "lifted_leaf": lifted_leaf,
    "lifted_leaf2": lifted_leaf2,
    "wrapped_via_decorator": wrapped_via_decorator,
    "wrapped_with_submodule": wrapped_with_submodule,
}


# -- the programs -----------------------------------------------------------------------


class AssertsEqual(nn.Module):
    def forward(self, x: torch.Tensor, y: int, z: int):
        assert y == z
        return torch.add(x, x)


class AssertsWithMessage(nn.Module):
    def forward(self, x: torch.Tensor, y: int, z: int):
        assert y == z, "msg"
        return torch.add(x, x)


class HasUnusedBatchNorm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bn = nn.BatchNorm2d(100)

    def forward(self, x: torch.Tensor):
        return torch.add(x, x)


def lifts_by_name():
    def to_trace(y):
        return lifted_leaf((4, y), 3) + lifted_leaf((3, 4), 5) + lifted_leaf((y, y), y)

    return to_trace


def lifts_directly():
    def to_trace(y):
        return lifted_leaf2((4, y), 3) + lifted_leaf2((3, 4), 5) + lifted_leaf2((y, y), y)

    return to_trace


def lifts_and_checks():
    def to_trace(y):
        assert y > 0, "y must be positive"
        return lifted_leaf((4, y), 3) + lifted_leaf2((y, y), y)

    return to_trace


class CallsWrappedViaDecorator(nn.Module):
    def forward(self, x):
        return wrapped_via_decorator(x)


class ChecksAndCallsWrappedViaDecorator(nn.Module):
    def forward(self, x):
        assert x >= 0
        return wrapped_via_decorator(x)


class PassesSubmoduleToWrapped(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.batchnorm1d = nn.BatchNorm1d(2, affine=False)

    def forward(self, x: torch.Tensor):
        assert x.dim() == 2, "a batch of rows"
        return wrapped_with_submodule(x, self.batchnorm1d)


class AnnotatesInt(nn.Module):
    def forward(self, x):
        y: int = x
        return torch.add(x, y)


class AnnotatesResults(nn.Module):
    def forward(self, x):
        r: torch.Tensor = torch.relu(x)
        s: float = x.sum()
        return r + s


class AssertsInALoop(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x, y):
        for dim in range(2):
            assert x.size(dim) == y.size(dim), f"dimension {dim} differs"
        return self.lin(x) + y


@dataclasses.dataclass
class Program:
    """A program of the comparison: how to make it fresh, and inputs for running it."""

    make: Callable[[], Any]
    inputs: Callable[[], tuple]

    @property
    def name(self) -> str:
        return self.make.__name__


def _tensor_pair(*shape):
    return lambda: (torch.randn(*shape), 3, 3)


PROGRAMS = [
    Program(AssertsEqual, _tensor_pair(2, 3)),
    Program(AssertsWithMessage, _tensor_pair(2, 3)),
    Program(HasUnusedBatchNorm, lambda: (torch.randn(2, 3),)),
    Program(lifts_by_name, lambda: (2,)),
    Program(lifts_directly, lambda: (2,)),
    Program(lifts_and_checks, lambda: (2,)),
    Program(CallsWrappedViaDecorator, lambda: (0,)),
    Program(ChecksAndCallsWrappedViaDecorator, lambda: (0,)),
    Program(PassesSubmoduleToWrapped, lambda: (torch.rand(3, 2),)),
    Program(AnnotatesInt, lambda: (torch.randn(3),)),
    Program(AnnotatesResults, lambda: (torch.randn(3),)),
    Program(AssertsInALoop, lambda: (torch.randn(2, 3), torch.randn(2, 3))),
]


def trace(lib: str, root: Any, tracer_class: type | None = None) -> tuple[Any, Any]:
    """`(tracer, graph)`: `root` traced by `lib`'s RewritingTracer (or `tracer_class`)."""
    tracer = (tracer_class or REWRITERS[lib])()
    return tracer, tracer.trace(root)


def nodes(graph: Any) -> list[tuple]:
    return [(node.name, node.op, node.type) for node in graph.nodes]


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
            assert globals()[name] is function, f"{lib} left {name} patched"
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


# -- annotate ---------------------------------------------------------------------------


class CallsAnnotate(nn.Module):
    def forward(self, x):
        y = annotate(x, int)
        return torch.add(x, y)


class CallsMinifxAnnotate(nn.Module):
    def forward(self, x):
        y = minifx.annotate(x, int)
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
        minifx.annotate(x, float)
    message = str(error.value)
    assert message.startswith("annotate(%x, float): %x already has the type int.")
    assert "Why: a node has one type" in message
    assert "How to fix: annotate each value once" in message


def test_annotating_a_result_twice_says_to_annotate_once():
    graph = minifx.graph.Graph()
    x = minifx.proxy.Proxy(graph.placeholder("x"))
    total = minifx.annotate(x.sum(), int)
    with pytest.raises(RuntimeError, match=r"How to fix: annotate each value once\.$"):
        minifx.annotate(total, float)


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
    assert traces["minifx"].startswith(f'File "{__file__}", line ')
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
