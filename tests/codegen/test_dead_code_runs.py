"""After dead-code elimination the recompiled module still computes what eager mode does.

Chapter 2 decides which nodes stay (tests/graph/test_side_effects.py); this runs
the programs, with each library, as PyTorch's test/fx/test_dce_pass.py does:
trace, eliminate, recompile, and compare with the module on a fresh copy of
the same inputs. A kept in-place call shows up in the result.
"""

from __future__ import annotations

import copy
import io
from contextlib import redirect_stdout

import pytest
import torch
import torch.fx

import minifx
from minifx.codegen import GraphModule, symbolic_trace
from tests.graph import dead_code_programs as cases

pytestmark = pytest.mark.ch3

LIBRARIES = {
    "torch.fx": (torch.fx.symbolic_trace, torch.fx.GraphModule),
    "minifx": (symbolic_trace, GraphModule),
}


def add_in_place_then_double(a):
    torch.ops.aten.add_.Tensor(a, 1)
    return a * 2


def add_out_then_return(a, b):
    torch.ops.aten.add.out(b, b, out=a)
    return a


@pytest.mark.parametrize("lib", LIBRARIES)
@pytest.mark.parametrize(
    "fn, inputs, expected",
    [
        (add_in_place_then_double, lambda: (torch.tensor([1.5]),), torch.tensor([5.0])),
        (
            add_out_then_return,
            lambda: (torch.tensor([0.0]), torch.tensor([2.0])),
            torch.tensor([4.0]),
        ),
    ],
    ids=["add_.Tensor", "add.out"],
)
def test_in_place_operators_still_run_after_dce(lib, fn, inputs, expected):
    # The repro: minifx used to erase these, and returned 3.0 for 1.5.
    trace, _ = LIBRARIES[lib]
    gm = trace(fn)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    assert torch.equal(gm(*inputs()), expected)


@pytest.mark.parametrize("lib", LIBRARIES)
@pytest.mark.parametrize(
    "module_type, changes", cases.SCENARIOS, ids=[s[0].__name__ for s in cases.SCENARIOS]
)
def test_dce_pass_scenarios_compute_what_eager_computes(lib, module_type, changes):
    module = module_type()
    tracer = type(
        "Tracer",
        (cases.LeafReLUImpure, {"torch.fx": torch.fx.Tracer, "minifx": minifx.graph.Tracer}[lib]),
        {},
    )()
    gm = LIBRARIES[lib][1](module, tracer.trace(module))
    assert gm.graph.eliminate_dead_code() is changes
    gm.recompile()
    inputs = [torch.tensor([1.5]) for n in gm.graph.nodes if n.op == "placeholder"]
    torch.manual_seed(0)
    expected = module(*copy.deepcopy(inputs))
    torch.manual_seed(0)
    assert torch.equal(gm(*inputs), expected)


def test_a_registered_function_still_runs_after_dce():
    gm = symbolic_trace(cases.LogsWithMinifx())
    gm.graph.eliminate_dead_code()
    gm.recompile()
    printed = io.StringIO()
    with redirect_stdout(printed):
        gm(torch.tensor([3.0]))
    assert printed.getvalue() == "log tensor([3.])\n"
    assert "log_with_minifx(x)" in gm.code


def dead_code_in_a_subgraph(lib: str, read: bool = True):
    """A GraphModule with a child GraphModule that has dead code; `read`: a `get_attr`
    node of the parent reads the child (as the branches of `cond` are read)."""
    trace, graph_module = LIBRARIES[lib]

    def branch(x):
        unused = x * 3  # noqa: F841
        return x + 1

    root = torch.nn.Module()
    root.branch = trace(branch)
    graph = {"torch.fx": torch.fx.Graph, "minifx": minifx.graph.Graph}[lib]()
    x = graph.placeholder("x")
    graph.output((x, graph.get_attr("branch")) if read else x)
    return graph_module(root, graph), root.branch


@pytest.mark.parametrize("read", [True, False], ids=["read-by-get_attr", "not-read"])
def test_dce_cleans_the_graph_modules_that_get_attr_reads_as_torch_fx_does(read):
    results = {}
    for lib in LIBRARIES:
        gm, branch = dead_code_in_a_subgraph(lib, read)
        changed = gm.graph.eliminate_dead_code()
        results[lib] = (changed, str(gm.graph), str(branch.graph), branch.code)
    assert results["minifx"] == results["torch.fx"]
    changed, _, branch_graph, branch_code = results["minifx"]
    assert changed is read
    assert ("mul" in branch_graph) is ("mul" in branch_code) is (not read)
