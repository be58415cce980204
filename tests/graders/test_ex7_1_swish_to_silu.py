"""Grader for exercise 7.1: Swish to SiLU.

Expected values are golden: each program's graph after the rewrite, and the number of
rewrites, were written out once from torch.fx's own `replace_pattern`; the graphs of the
pattern and the replacement are written out node by node, without names (a parameter may
have any name). The outputs are checked against the program before the rewrite.
"""

import pytest
import torch
from torch import nn

import minifx.passes.subgraph_rewriter as subgraph_rewriter
from minifx.codegen import symbolic_trace
from minifx.graph.node import map_arg
from minifx.proxy.ir import format_target
from tests.graders.support import (
    describe_error,
    explain,
    explain_graphs,
    explain_texts,
    graph_text,
    refuse_methods_of_its_own,
    replace_for_student,
    running_line,
    safe_repr,
    stub_hint,
    tensors_close,
)

pytestmark = pytest.mark.ch7

SEE = "chapters/07-subgraph-rewriting.md#exercise-71-swish-to-silu"
SEE_MATCH = (
    "chapters/07-subgraph-rewriting.md#placeholders-are-wildcards-everything-else-must-be-equal"
)
SEE_REPLACE = "chapters/07-subgraph-rewriting.md#rewrites-written-as-python"


@pytest.fixture
def ex(impl):
    return impl.load("ch7_swish_to_silu")


# --- the programs, and their graphs after the rewrite (golden) ------------------------


class SwishNet(nn.Module):
    """Two convolutions, each followed by a swish written by hand."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        x = self.conv1(x)
        x = x * torch.sigmoid(x)
        x = self.conv2(x)
        return x * torch.sigmoid(x)


def swish_of_swish(x):
    y = x * torch.sigmoid(x)
    return y * torch.sigmoid(y)


def near_miss(x, y):
    return x * torch.sigmoid(y)  # a gate, not a swish: two different inputs


def escaping_sigmoid(x):
    s = torch.sigmoid(x)
    return x * s, s  # the sigmoid is needed outside the product


def reversed_factors(x):
    y = x + 1
    return torch.sigmoid(x) * x + y * torch.sigmoid(y)  # only the second is x * sigmoid(x)


CASES = {  # name -> (make the root, inputs, how many swishes are rewritten)
    "SwishNet": (lambda: SwishNet().eval(), lambda: (torch.randn(2, 3, 8, 8),), 2),
    "swish_of_swish": (lambda: swish_of_swish, lambda: (torch.randn(5),), 2),
    "near_miss": (lambda: near_miss, lambda: (torch.randn(5), torch.randn(5)), 0),
    "escaping_sigmoid": (lambda: escaping_sigmoid, lambda: (torch.randn(5),), 0),
    "reversed_factors": (lambda: reversed_factors, lambda: (torch.randn(5),), 1),
}

SILU = "call_function[target=torch.nn.functional.silu]"
AFTER = {  # str(graph) after the rewrite, as torch.fx's replace_pattern leaves it
    "SwishNet": f"""\
graph():
    %x : [num_users=1] = placeholder[target=x]
    %conv1 : [num_users=1] = call_module[target=conv1](args = (%x,), kwargs = {{}})
    %silu : [num_users=1] = {SILU}(args = (%conv1,), kwargs = {{inplace: False}})
    %conv2 : [num_users=1] = call_module[target=conv2](args = (%silu,), kwargs = {{}})
    %silu_1 : [num_users=1] = {SILU}(args = (%conv2,), kwargs = {{inplace: False}})
    return silu_1""",
    "swish_of_swish": f"""\
graph():
    %x : [num_users=1] = placeholder[target=x]
    %silu : [num_users=1] = {SILU}(args = (%x,), kwargs = {{inplace: False}})
    %silu_1 : [num_users=1] = {SILU}(args = (%silu,), kwargs = {{inplace: False}})
    return silu_1""",
    "near_miss": """\
graph():
    %x : [num_users=1] = placeholder[target=x]
    %y : [num_users=1] = placeholder[target=y]
    %sigmoid : [num_users=1] = call_function[target=torch.sigmoid](args = (%y,), kwargs = {})
    %mul : [num_users=1] = call_function[target=operator.mul](args = (%x, %sigmoid), kwargs = {})
    return mul""",
    "escaping_sigmoid": """\
graph():
    %x : [num_users=2] = placeholder[target=x]
    %sigmoid : [num_users=2] = call_function[target=torch.sigmoid](args = (%x,), kwargs = {})
    %mul : [num_users=1] = call_function[target=operator.mul](args = (%x, %sigmoid), kwargs = {})
    return (mul, sigmoid)""",
    "reversed_factors": f"""\
graph():
    %x : [num_users=3] = placeholder[target=x]
    %add : [num_users=1] = call_function[target=operator.add](args = (%x, 1), kwargs = {{}})
    %sigmoid : [num_users=1] = call_function[target=torch.sigmoid](args = (%x,), kwargs = {{}})
    %mul : [num_users=1] = call_function[target=operator.mul](args = (%sigmoid, %x), kwargs = {{}})
    %silu : [num_users=1] = {SILU}(args = (%add,), kwargs = {{inplace: False}})
    %add_1 : [num_users=1] = call_function[target=operator.add](args = (%mul, %silu), kwargs = {{}})
    return add_1""",
}

# The pattern's and the replacement's graphs, node by node, nodes numbered instead of named.
PATTERN = """\
%0 = placeholder
%1 = call_function torch.sigmoid(%0)
%2 = call_function operator.mul(%0, %1)
return %2"""
REPLACEMENT = """\
%0 = placeholder
%1 = call_function torch.nn.functional.silu(%0, inplace=False)
return %1"""


# --- student code that raises, and where it was called from --------------------------------


def _raised(what: str, error: BaseException, stub: str):
    pytest.fail(
        explain(f"{what} runs", describe_error(error), stub_hint(error, stub), SEE), pytrace=False
    )


# --- the pattern and the replacement, traced -----------------------------------------


class _Ref:
    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def _shape(graph) -> str:
    """The graph node by node, each node numbered (`%0`) instead of named."""
    numbers, lines = {}, []
    for i, node in enumerate(graph.nodes):
        numbers[node] = _Ref(f"%{i}")
        args = map_arg(node.args, lambda n: numbers.get(n, _Ref("%?")))
        kwargs = map_arg(node.kwargs, lambda n: numbers.get(n, _Ref("%?")))
        if node.op == "placeholder":
            lines.append(f"%{i} = placeholder")
        elif node.op == "output":
            lines.append(f"return {args[0]!r}")
        else:
            inside = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
            lines.append(f"%{i} = {node.op} {format_target(node.target)}({', '.join(inside)})")
    return "\n".join(lines)


def _traced_shape(fn, what: str, stub: str) -> str:
    try:
        return _shape(symbolic_trace(fn).graph)
    except Exception as error:  # student code: any error becomes a message
        _raised(what, error, stub)


def _pattern_hint(shape: str) -> str:
    """The hint for a pattern whose graph is `shape`, not PATTERN."""
    if "silu" in shape:
        return (
            "your swish (the pattern) calls F.silu: the pattern is the swish as the models "
            "compute it by hand (the stub's docstring); F.silu belongs in the replacement."
        )
    if "operator.mul(%1, %0)" in shape or "operator.mul(%2, %0)" in shape:
        return (
            "your pattern multiplies with the sigmoid first: matching compares argument "
            "positions, so write the product's factors in the models' order, x first."
        )
    if "call_method sigmoid" in shape:
        return (
            "x.sigmoid() (or F.sigmoid) records a call_method node; the models call "
            "torch.sigmoid, a call_function, and matching compares opcodes and targets."
        )
    if "torch.mul(" in shape:
        return (
            "torch.mul records call_function torch.mul, while `*` records operator.mul: the "
            "models use `*`, and matching compares targets."
        )
    return (
        "the pattern must record exactly what the models record for a swish: one "
        "torch.sigmoid, one `*`, and one parameter that both read."
    )


def _replacement_hint(shape: str) -> str:
    """The hint for a replacement whose graph is `shape`, not REPLACEMENT."""
    if "silu" not in shape and "sigmoid" in shape:
        return (
            "your silu (the replacement) computes the swish again: it must compute the same "
            "value with one call of F.silu."
        )
    if "inplace=True" in shape:
        return "call F.silu without inplace=True: the replacement must not overwrite its input."
    return "the replacement is one call of F.silu on its one parameter, and nothing else."


def _problem(ex) -> str | None:
    """The hint for what is wrong with the student's pattern or replacement, if anything."""
    for fn, want, hint in (
        (getattr(ex, "swish", None), PATTERN, _pattern_hint),
        (getattr(ex, "silu", None), REPLACEMENT, _replacement_hint),
    ):
        try:
            shape = _shape(symbolic_trace(fn).graph)
        except Exception:  # student code: reported by its own test
            return None
        if shape != want:
            return hint(shape)
    return None


# --- running swish_to_silu, with replace_pattern's calls recorded ----------------------


def _rewrite(ex, name: str, monkeypatch, device: str = "cpu"):
    """(gm, what swish_to_silu returned, the replace_pattern calls, inputs)."""
    make_root, inputs, _ = CASES[name]
    torch.manual_seed(0)
    root = make_root()
    root = root.to(device) if isinstance(root, nn.Module) else root
    gm = symbolic_trace(root)
    calls = []
    original = subgraph_rewriter.replace_pattern

    def recording(gm, pattern, replacement, *args, **kwargs):
        calls.append((pattern, replacement, running_line()))
        return original(gm, pattern, replacement, *args, **kwargs)

    replace_for_student(monkeypatch, subgraph_rewriter, "replace_pattern", recording, ex)
    torch.manual_seed(1)
    args = tuple(a.to(device) for a in inputs())
    try:
        got = ex.swish_to_silu(gm)
    except Exception as error:  # student code: any error becomes a message
        _raised("swish_to_silu(gm)", error, "swish_to_silu")
    # Checked first: a pass that returns no count has not done its work, and an object of
    # its own in place of the count could answer == with True.
    assert type(got) is int, explain(
        f"swish_to_silu({name}) returns how many swishes it rewrote, an int",
        safe_repr(got),
        _count_hint(ex, name, got, calls),
        SEE,
    )
    refuse_methods_of_its_own(gm, f"gm after swish_to_silu ({name})", SEE)
    return gm, got, calls, args


def _count_hint(ex, name: str, got, calls) -> str:
    """The hint for a wrong number of rewrites (or a wrong graph after them)."""
    if isinstance(got, list):
        return (
            "swish_to_silu returns how many swishes it rewrote, an int, not the list of "
            "matches that replace_pattern returns."
        )
    swapped = [
        c for c in calls if c[0] is getattr(ex, "silu", None) and c[1] is getattr(ex, "swish", None)
    ]
    if swapped:
        return (
            f"pattern and replacement are swapped at {swapped[0][2]}: replace_pattern(gm, "
            "pattern, replacement) takes what to find first."
        )
    problem = _problem(ex)
    if problem:
        return problem
    if len(calls) > 1:
        return (
            "rewrite x * torch.sigmoid(x) only, with one pattern only: near misses such as "
            f"torch.sigmoid(x) * x must stay (you call replace_pattern {len(calls)} times)."
        )
    if not calls:
        return "swish_to_silu must rewrite gm with replace_pattern(gm, pattern, replacement)."
    return (
        "swish_to_silu returns how many swishes replace_pattern rewrote: one per Match it returns."
    )


# --- the tests --------------------------------------------------------------------------


def test_the_pattern_is_the_swish_as_the_models_write_it(ex):
    got = _traced_shape(ex.swish, "symbolic_trace(swish)", "swish")
    assert got == PATTERN, explain_texts(
        "the graph of your pattern swish", PATTERN, got, _pattern_hint(got), SEE_MATCH, kind="graph"
    )


def test_the_replacement_computes_silu_in_one_call(ex):
    got = _traced_shape(ex.silu, "symbolic_trace(silu)", "silu")
    assert got == REPLACEMENT, explain_texts(
        "the graph of your replacement silu",
        REPLACEMENT,
        got,
        _replacement_hint(got),
        SEE_REPLACE,
        kind="graph",
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_number_of_rewrites(ex, name, monkeypatch):
    _, got, calls, _ = _rewrite(ex, name, monkeypatch)
    want = CASES[name][2]
    assert type(got) is int and got == want, explain(
        f"{want} rewrites of {name}", repr(got), _count_hint(ex, name, got, calls), SEE
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_graph_after_the_rewrite(ex, name, monkeypatch):
    gm, got, calls, _ = _rewrite(ex, name, monkeypatch)
    want = AFTER[name]
    got = graph_text(gm.graph, f"the graph of {name} after swish_to_silu", SEE)
    assert got == want, explain_graphs(
        f"the graph of {name} after swish_to_silu",
        want,
        got,
        _count_hint(ex, name, got, calls) + " Near misses (x * sigmoid(y), a sigmoid used "
        "elsewhere, torch.sigmoid(x) * x) must stay.",
        SEE,
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_outputs_are_unchanged(ex, name, device, monkeypatch):
    gm, _, _, args = _rewrite(ex, name, monkeypatch, device)
    torch.manual_seed(0)
    root = CASES[name][0]()
    root = root.to(device) if isinstance(root, nn.Module) else root
    before = root(*args)
    try:
        after = gm(*args)
    except Exception as error:  # generated from the student's graph
        pytest.fail(
            explain(
                f"the rewritten {name} runs",
                f"{type(error).__name__}: {error}",
                _problem(ex) or "the replacement must take the pattern's input.",
                SEE,
            ),
            pytrace=False,
        )
    assert _close(after, before), explain(
        f"{name} computes the same values after the rewrite",
        "different values",
        _problem(ex)
        or "F.silu(x) is x * torch.sigmoid(x); the replacement must take the pattern's input.",
        SEE,
    )


def _close(a, b) -> bool:
    """Whether two outputs (tensors, or tuples of them) hold the same values, up to rounding."""
    if isinstance(b, tuple):
        return isinstance(a, tuple) and len(a) == len(b) and all(map(_close, a, b))
    return tensors_close(a, b, rtol=1e-5, atol=1e-6)


def test_a_second_run_finds_nothing(ex, monkeypatch):
    gm, _, _, _ = _rewrite(ex, "swish_of_swish", monkeypatch)
    try:
        again = ex.swish_to_silu(gm)
    except Exception as error:  # student code: any error becomes a message
        _raised("swish_to_silu(gm) a second time", error, "swish_to_silu")
    assert type(again) is int and again == 0, explain(
        "0 rewrites on a graph that has no swish left",
        repr(again),
        _problem(ex)
        or (
            "swish_to_silu returns an int, not the list of matches."
            if isinstance(again, list)
            else "F.silu must not match the pattern: rewrite the swish only."
        ),
        SEE,
    )
