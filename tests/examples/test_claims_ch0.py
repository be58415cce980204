"""Chapter 0's claims about torch.fx, each checked by running torch.fx as well as minifx.

Chapter 0 has no "Differences from torch.fx" box: it places torch.fx (and minifx,
which follows it) in the design space of program capture. Where it says what
torch.fx does, a test here runs torch.fx, so that a claim that stops being true
fails instead of misleading the reader. Each docstring quotes its claim.

Pinned elsewhere: "Today's `torch.compile` and `torch.export` still produce torch.fx
graphs" by chapter 9's examples, which tests/test_docs_examples.py runs
(`isinstance(gm, torch.fx.GraphModule)` in a Dynamo backend and on
`torch.export.export(...).graph_module`), and by tests/examples/test_claims_ch9.py.
"""

from __future__ import annotations

import pytest
import torch
import torch.fx

import minifx
from examples.ch0_capture import TinyNet, plus_zeros, shift

pytestmark = pytest.mark.ch0

SIX_OPCODES = ["placeholder", "get_attr", "call_function", "call_method", "call_module", "output"]


def test_tinynet_is_captured_as_torch_fx_captures_it():
    """`minifx.symbolic_trace` captures `TinyNet` without running it on any data ... That round
    trip — Python in, graph, Python out — is the whole of torch.fx."""
    torch.manual_seed(0)
    model = TinyNet()
    theirs, ours = torch.fx.symbolic_trace(model), minifx.symbolic_trace(model)
    assert str(ours.graph) == str(theirs.graph)
    assert ours.code == theirs.code
    x = torch.randn(2, 4)
    assert torch.equal(ours(x), theirs(x)) and torch.equal(ours(x), model(x))


def _builtin_type(error: BaseException) -> type:
    """The built-in exception class an error derives from: what an `except` clause names."""
    return next(cls for cls in type(error).__mro__ if cls.__module__ == "builtins")


def branches_on_length(x):
    return torch.arange(len(x))


@pytest.mark.parametrize(
    "program", [shift, branches_on_length, plus_zeros], ids=["if", "len", "int()"]
)
def test_symbolic_tracing_fails_on_code_that_needs_a_tensors_value(program):
    """symbolic tracing | `torch.fx.symbolic_trace`, `minifx.symbolic_trace` | yes, on Proxies |
    ... | fails on code that needs a tensor's value: `if`, `len`, `int()` ..."""
    with pytest.raises(Exception) as theirs:
        torch.fx.symbolic_trace(program)
    with pytest.raises(Exception) as ours:
        minifx.symbolic_trace(program)
    assert isinstance(ours.value, _builtin_type(theirs.value))


def test_a_branch_on_a_value_stops_the_trace_with_torch_fxs_words():
    """when the program asks a question only data could answer, the trace stops and says so."""
    with pytest.raises(torch.fx.proxy.TraceError) as theirs:
        torch.fx.symbolic_trace(shift)
    with pytest.raises(minifx.TraceError) as ours:
        minifx.symbolic_trace(shift)
    assert (
        str(theirs.value)
        == "symbolically traced variables cannot be used as inputs to control flow"
    )
    assert str(theirs.value) in str(ours.value)


def repeat(x, times=3):
    for _ in range(times):
        x = x * 2
    return x


def test_concrete_args_become_a_check_in_the_generated_code_as_in_torch_fx():
    """an argument you promise will not change can be fixed with `concrete_args` — which minifx,
    like torch.fx, turns into a check in the generated code rather than a silent assumption."""
    theirs = torch.fx.symbolic_trace(repeat, concrete_args={"times": 2})
    ours = minifx.symbolic_trace(repeat, concrete_args={"times": 2})
    assert ours.code == theirs.code
    assert "torch._assert(eq, 'times has been specialized to have value 2" in theirs.code
    assert [n.op for n in theirs.graph.nodes].count("call_function") == 4  # ==, _assert, two *


def test_torch_fx_has_six_opcodes_and_a_root_sentinel_that_never_prints():
    """it is a flat list of nodes, each one of **six opcodes** ... (The installed torch's
    `torch/fx/node.py` lists one more, `root`, for the sentinel node that closes a graph's linked
    list; chapter 2's graph has one too, and it never appears in a printout.)"""
    assert sorted(torch.fx.node._legal_ops) == sorted([*SIX_OPCODES, "root"])
    theirs, ours = torch.fx.symbolic_trace(TinyNet()).graph, minifx.symbolic_trace(TinyNet()).graph
    assert theirs._root.op == ours._root.op == "root"
    assert theirs._root not in list(theirs.nodes) and ours._root not in list(ours.nodes)
    assert "root" not in str(theirs) and "root" not in str(ours)
    assert {n.op for n in theirs.nodes} == {
        "placeholder",
        "call_module",
        "call_function",
        "call_method",
        "output",
    }
