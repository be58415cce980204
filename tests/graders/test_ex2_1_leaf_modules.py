"""Grader for exercise 2.1: leaf modules.

The models are the grader's own copies of the given ones, and the expected graphs are
golden: the printouts torch.fx records with the same choice of leaves.
"""

import re
import textwrap

import pytest
import torch
from torch import nn

from minifx.graph import Graph, Tracer
from minifx.proxy import TraceError
from tests.graders.support import call_graded, error_line, exactly, explain, explain_graphs

pytestmark = pytest.mark.ch2

SEE = "chapters/02-graph.md#leaf-modules"


@pytest.fixture
def ex(impl):
    return impl.load("ch2_leaf_modules")


# --- the grader's own copies of the given models -----------------------------------


def _linear_relu() -> nn.Module:
    return nn.Sequential(nn.Linear(8, 4), nn.ReLU())


class Scale(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.weight


class Clip(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if (x.abs() > 1).any():
            return x.clamp(-1, 1)
        return x


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(8, 8)
        self.scale = Scale(8)
        self.clip = Clip()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.clip(self.scale(self.linear(x)).relu())


def _golden(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


# --- running the student's tracers -------------------------------------------------


def _raised(error: BaseException) -> str:
    lines = str(error).splitlines() or [""]
    if isinstance(error, TraceError):  # its second and third lines say where it failed
        lines = [line for line in lines[:3] if not line.startswith("Why:")]
    where = error_line(error, outside="(not in your code)")
    at = "" if isinstance(error, TraceError) and where.startswith("(") else f"\n  raised at {where}"
    return f"{type(error).__name__}: " + "\n".join(lines[:3]) + at


def _missing_setup(tracer) -> list[str]:
    """The attributes `Tracer.__init__` sets that `tracer` lacks."""
    return sorted(set(vars(Tracer())) - set(vars(tracer)))


def _trace(make_tracer, model, what: str, trace_error_hint: str):
    """`make_tracer().trace(model)`, or a failed test that says what went wrong."""
    tracer, raised = call_graded(make_tracer)
    if raised is None:
        graph, raised = call_graded(tracer.trace, model)
    if raised is None:
        # Printed only as minifx's own Graph: one of graded code's could print anything.
        return exactly(graph, Graph, what, SEE)
    if isinstance(raised, NotImplementedError):
        hint = "write it: the stub still raises NotImplementedError."
    elif tracer is not None and _missing_setup(tracer):
        name = type(tracer).__name__
        hint = (
            f"call super().__init__() in {name}.__init__: Tracer sets itself up there "
            f"({', '.join(_missing_setup(tracer))} are missing)."
        )
    elif isinstance(raised, TraceError):
        hint = trace_error_hint
    else:
        hint = "your code raised at the line shown."
    pytest.fail(explain(f"{what} to trace", _raised(raised), hint, SEE), pytrace=False)


def _call_modules(graph_text: str) -> list[str]:
    return re.findall(r"call_module\[target=([^\]]+)\]", graph_text)


def _opaque_hint(got: str, want: str, model: nn.Module, leaf_types: tuple) -> str:
    """The hint for an OpaqueTracer graph that differs from the golden one."""
    got_modules, want_modules = set(_call_modules(got)), set(_call_modules(want))
    missing = sorted(want_modules - got_modules)
    chosen = [t for t in missing if isinstance(model.get_submodule(t), leaf_types)]
    if chosen:
        return (
            f"{chosen} are instances of leaf_types but were traced through: return True "
            "when isinstance(m, self.leaf_types)."
        )
    if missing:
        return (
            f"keep the default leaves: {missing} (torch.nn layers) were traced through. "
            "Return isinstance(...) or super().is_leaf_module(m, module_qualified_name)."
        )
    extra = sorted(got_modules - want_modules)
    if extra:
        return (
            f"{extra} became call_module nodes: only instances of leaf_types and the "
            "default leaves are leaves; other modules are traced through."
        )
    return "override only is_leaf_module; the rest of Tracer must stay as it is."


FLAT_LINEAR_RELU = """
    graph():
        %input_1 : [num_users=1] = placeholder[target=input]
        %_0_weight : [num_users=1] = get_attr[target=0.weight]
        %_0_bias : [num_users=1] = get_attr[target=0.bias]
        %linear : [num_users=1] = call_function[target=torch._C._nn.linear](args = (%input_1, %_0_weight, %_0_bias), kwargs = {})
        %relu : [num_users=1] = call_function[target=torch.nn.functional.relu](args = (%linear,), kwargs = {inplace: False})
        return relu
    """  # fmt: skip

FLAT_EVERY_MODULE = """
    graph():
        %input_1 : [num_users=1] = placeholder[target=input]
        %_0_weight : [num_users=1] = get_attr[target=0.weight]
        %_0_bias : [num_users=1] = get_attr[target=0.bias]
        %conv2d : [num_users=1] = call_function[target=torch.conv2d](args = (%input_1, %_0_weight, %_0_bias, (1, 1), (0, 0), (1, 1), 1), kwargs = {})
        %relu : [num_users=1] = call_function[target=torch.nn.functional.relu](args = (%conv2d,), kwargs = {inplace: False})
        %flatten : [num_users=1] = call_method[target=flatten](args = (%relu, 1, -1), kwargs = {})
        %_3_weight : [num_users=1] = get_attr[target=3.weight]
        %_3_bias : [num_users=1] = get_attr[target=3.bias]
        %linear : [num_users=1] = call_function[target=torch._C._nn.linear](args = (%flatten, %_3_weight, %_3_bias), kwargs = {})
        %_4_weight : [num_users=1] = get_attr[target=4.weight]
        %mul : [num_users=1] = call_function[target=operator.mul](args = (%linear, %_4_weight), kwargs = {})
        return mul
    """  # fmt: skip

BLOCK_CLIP_OPAQUE = """
    graph():
        %x : torch.Tensor [num_users=1] = placeholder[target=x]
        %linear : [num_users=1] = call_module[target=linear](args = (%x,), kwargs = {})
        %scale_weight : [num_users=1] = get_attr[target=scale.weight]
        %mul : [num_users=1] = call_function[target=operator.mul](args = (%linear, %scale_weight), kwargs = {})
        %relu : [num_users=1] = call_method[target=relu](args = (%mul,), kwargs = {})
        %clip : [num_users=1] = call_module[target=clip](args = (%relu,), kwargs = {})
        return clip
    """  # fmt: skip

BLOCK_SCALE_AND_CLIP_OPAQUE = """
    graph():
        %x : torch.Tensor [num_users=1] = placeholder[target=x]
        %linear : [num_users=1] = call_module[target=linear](args = (%x,), kwargs = {})
        %scale : [num_users=1] = call_module[target=scale](args = (%linear,), kwargs = {})
        %relu : [num_users=1] = call_method[target=relu](args = (%scale,), kwargs = {})
        %clip : [num_users=1] = call_module[target=clip](args = (%relu,), kwargs = {})
        return clip
    """  # fmt: skip

DEFAULT_LEAVES = """
    graph():
        %input_1 : [num_users=1] = placeholder[target=input]
        %_0 : [num_users=1] = call_module[target=0](args = (%input_1,), kwargs = {})
        %_1_weight : [num_users=1] = get_attr[target=1.weight]
        %mul : [num_users=1] = call_function[target=operator.mul](args = (%_0, %_1_weight), kwargs = {})
        %_2 : [num_users=1] = call_module[target=2](args = (%mul,), kwargs = {})
        return _2
    """  # fmt: skip

_FLAT = "FlatTracer.is_leaf_module must return False for every module, torch.nn's and yours."
_TRACES = "every module of this model traces: override only is_leaf_module."
_CLIP_LEAF = (
    "Clip's forward cannot be traced, so OpaqueTracer((Clip,)) must make it a leaf: "
    "return True when isinstance(m, self.leaf_types)."
)


@pytest.mark.parametrize("case", ["linear_relu", "every module"])
def test_flat_tracer_traces_into_every_module(ex, case):
    if case == "linear_relu":
        model, golden = _linear_relu(), FLAT_LINEAR_RELU
    else:
        model = nn.Sequential(
            nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4, 2), Scale(2)
        )
        golden = FLAT_EVERY_MODULE
    want = _golden(golden)
    got = str(_trace(ex.FlatTracer, model, f"FlatTracer().trace({case})", _FLAT))
    kept = _call_modules(got)
    hint = (
        f"{kept} stayed call_module nodes: {_FLAT}"
        if kept
        else "override only is_leaf_module; the rest of Tracer must stay as it is."
    )
    assert got == want, explain_graphs(
        "no call_module node: each module recorded as what its forward does", want, got, hint, SEE
    )


def test_opaque_clip_makes_the_block_traceable(ex):
    model, want = Block(), _golden(BLOCK_CLIP_OPAQUE)
    got = str(
        _trace(
            lambda: ex.OpaqueTracer((Clip,)),
            model,
            "OpaqueTracer((Clip,)).trace(Block())",
            _CLIP_LEAF,
        )
    )
    assert got == want, explain_graphs(
        "Clip as one call_module node, Scale traced through",
        want,
        got,
        _opaque_hint(got, want, model, (Clip,)),
        SEE,
    )


def test_other_user_modules_are_traced_through(ex):
    graph = _trace(
        lambda: ex.OpaqueTracer((Clip,)),
        Block(),
        "OpaqueTracer((Clip,)).trace(Block())",
        _CLIP_LEAF,
    )
    modules = [node.target for node in graph.nodes if node.op == "call_module"]
    reads = [node.target for node in graph.nodes if node.op == "get_attr"]
    assert "scale" not in modules and "scale.weight" in reads, explain(
        "Scale, which is not in leaf_types, traced through: a get_attr of 'scale.weight', "
        "no call_module 'scale'",
        f"call_module targets {modules}, get_attr targets {reads}",
        "only instances of leaf_types (and torch.nn's layers) are leaves; Scale is neither.",
        SEE,
    )


def test_default_leaves_stay_leaves(ex):
    model = nn.Sequential(nn.Linear(8, 8), Scale(8), nn.ReLU())
    graph = _trace(lambda: ex.OpaqueTracer((Scale,)), model, "OpaqueTracer((Scale,))", _TRACES)
    modules = [node.target for node in graph.nodes if node.op == "call_module"]
    hint = (
        "Scale is in leaf_types: return True when isinstance(m, self.leaf_types)."
        if "1" not in modules
        else "keep the default leaves: return isinstance(...) or "
        "super().is_leaf_module(m, module_qualified_name)."
    )
    assert modules == ["0", "1", "2"], explain(
        "call_module nodes for '0' (nn.Linear), '1' (Scale, chosen) and '2' (nn.ReLU)",
        f"call_module targets {modules}:\n{graph}",
        hint,
        SEE,
    )


def test_several_leaf_types(ex):
    model, want = Block(), _golden(BLOCK_SCALE_AND_CLIP_OPAQUE)
    got = str(
        _trace(
            lambda: ex.OpaqueTracer((Scale, Clip)),
            model,
            "OpaqueTracer((Scale, Clip))",
            "Clip is the second of leaf_types: every class in leaf_types makes a leaf "
            "(isinstance accepts the whole tuple).",
        )
    )
    hint = _opaque_hint(got, want, model, (Scale, Clip))
    if "scale" not in _call_modules(got) and "clip" in _call_modules(got):
        hint = (
            "Scale is the first of leaf_types and was traced through: every class in "
            "leaf_types makes a leaf."
        )
    assert got == want, explain_graphs(
        "both Scale and Clip as call_module nodes", want, got, hint, SEE
    )


def test_subclasses_of_a_leaf_type_are_leaves(ex):
    class StrictClip(Clip):
        pass

    model = nn.Sequential(nn.Linear(8, 8), StrictClip())
    subclass = (
        "an instance of a subclass of Clip is an instance of Clip: test "
        "isinstance(m, self.leaf_types), not type(m)."
    )
    graph = _trace(
        lambda: ex.OpaqueTracer((Clip,)),
        model,
        "OpaqueTracer((Clip,)) on a subclass of Clip",
        subclass,
    )
    modules = [node.target for node in graph.nodes if node.op == "call_module"]
    hint = (
        subclass
        if "1" not in modules
        else (
            "keep the default leaves (here nn.Linear): return isinstance(...) or "
            "super().is_leaf_module(m, module_qualified_name)."
        )
    )
    assert modules == ["0", "1"], explain(
        "call_module targets ['0', '1']: '0' an nn.Linear (a default leaf) and '1' an "
        "instance of a subclass of Clip",
        f"call_module targets {modules}:\n{graph}",
        hint,
        SEE,
    )


def test_no_leaf_types_is_the_default_tracer(ex):
    model, want = nn.Sequential(nn.Linear(8, 8), Scale(8), nn.ReLU()), _golden(DEFAULT_LEAVES)
    got = str(_trace(lambda: ex.OpaqueTracer(()), model, "OpaqueTracer(())", _TRACES))
    assert got == want, explain_graphs(
        "OpaqueTracer(()) records what Tracer() records",
        want,
        got,
        _opaque_hint(got, want, model, ()),
        SEE,
    )
