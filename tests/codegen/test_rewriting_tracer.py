"""The programs of `tests/graph/test_rewriter.py` (tests/graph/rewriter_cases.py), run as
GraphModules.

As in PyTorch's `test_ast_rewriter_*` tests, the GraphModule is built from the
tracer's root (`GraphModule(tracer.root, graph, "gm")`); its code must be
torch.fx's (after the normalisation `test_differential.py` documents: torch.fx writes
`wrap` as `torch.fx._symbolic_trace.wrap`), and it must compute what the program computes.
"""

from __future__ import annotations

import pytest
import torch
import torch.fx

import minifx
from tests.codegen.compare import assert_same
from tests.codegen.support import torch_code
from tests.graph import rewriter_cases as programs
from tests.graph.rewriter_cases import PROGRAMS, REWRITERS, Program

pytestmark = pytest.mark.ch3

LIBRARIES = {"torch.fx": torch.fx, "minifx": minifx}


def graph_module(lib: str, root) -> torch.nn.Module:
    tracer = REWRITERS[lib]()
    graph = tracer.trace(root)
    return LIBRARIES[lib].GraphModule(tracer.root, graph, "gm")


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_programs_give_torch_fx_s_code_and_the_program_s_results(program: Program):
    root = program.make()
    if isinstance(root, torch.nn.Module):
        root.eval()  # BatchNorm: the same result on every run
    gms = {lib: graph_module(lib, root) for lib in REWRITERS}
    assert gms["minifx"].code == torch_code(gms["torch.fx"].code)
    inputs = program.inputs()
    expected = root(*inputs)
    for gm in gms.values():
        gm.graph.lint()
        assert_same(gm(*inputs), expected)


def test_wrapped_calls_run_the_real_functions():
    """PyTorch's numbers: `lifted_leaf` sums to 27 for 2; `wrapped_via_decorator` adds one."""
    for lib in REWRITERS:
        assert graph_module(lib, programs.lifts_by_name())(2) == 27
        assert graph_module(lib, programs.lifts_directly())(2) == 27
        assert graph_module(lib, programs.ChecksAndCallsWrappedViaDecorator())(0) == 1
        code = graph_module(lib, programs.lifts_and_checks()).code
        assert "lifted_leaf(" in code and "lifted_leaf2(" in code


def test_a_recorded_assert_checks_its_inputs_when_the_module_runs():
    for lib in REWRITERS:
        gm = graph_module(lib, programs.AssertsWithMessage())
        with pytest.raises(AssertionError, match="msg"):
            gm(torch.randn(2), 3, 4)


def test_the_generated_forward_names_the_user_s_file():
    """The generated `forward`'s file name names the user's file and line, as with `Tracer`;
    torch.fx's rewriter compiles the code under the file name "" at line 1."""
    module = programs.AssertsEqual
    line = module.forward.__code__.co_firstlineno
    names = {lib: graph_module(lib, module()).forward.__code__.co_filename for lib in REWRITERS}
    assert names["torch.fx"].endswith(" from :1 in forward")
    assert names["minifx"].endswith(f" from {programs.__file__}:{line} in forward")


def test_a_graph_module_is_retraced_as_by_torch_fx():
    graphs = {}
    for lib in REWRITERS:
        gm = graph_module(lib, programs.AssertsWithMessage())
        graphs[lib] = str(REWRITERS[lib]().trace(gm))
        assert graphs[lib] == str(gm.graph)
    assert graphs["minifx"] == graphs["torch.fx"]
