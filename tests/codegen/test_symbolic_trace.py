"""`minifx.codegen.symbolic_trace`: a module or a function in, a `GraphModule` out, against
`torch.fx.symbolic_trace`.

Every test of tests/codegen/ calls it; these pin its own contract: what it returns
(the default Tracer's graph in a GraphModule named after the root, holding the root's
own submodules), what `concrete_args` does, and the error on something it cannot trace.
"""

from __future__ import annotations

import pytest
import torch
import torch.fx

import minifx
import minifx.graph
from minifx.codegen import GraphModule, symbolic_trace
from minifx.graph import PH

pytestmark = pytest.mark.ch3

LIBRARIES = {"minifx": symbolic_trace, "torch.fx": torch.fx.symbolic_trace}


def shifted(x, flag):
    return x + 1 if flag else x - 1


def pair_sum(pair):
    return pair[0] * pair[1]


def traced_both(root, concrete_args=None) -> dict:
    return {name: trace(root, concrete_args) for name, trace in LIBRARIES.items()}


@pytest.mark.parametrize(
    "make, concrete_args, name",
    [
        (lambda: shifted, {"flag": True}, "shifted"),
        (lambda: torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()), None, "Sequential"),
    ],
    ids=["function", "module"],
)
def test_it_returns_the_default_tracer_s_graph_in_a_graph_module_named_after_the_root(
    make, concrete_args, name
):
    root = make()
    gms = traced_both(root, concrete_args)
    ours, theirs = gms["minifx"], gms["torch.fx"]
    assert isinstance(ours, GraphModule) and not isinstance(ours, torch.fx.GraphModule)
    assert type(ours).__name__ == type(theirs).__name__ == name
    assert ours.code == theirs.code and str(ours.graph) == str(theirs.graph)
    assert str(ours.graph) == str(minifx.graph.Tracer().trace(root, concrete_args))
    ours.graph.lint()


def test_a_module_s_submodules_are_shared_not_copied():
    root = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())
    gms = traced_both(root)
    for gm in gms.values():
        assert gm.get_submodule("0") is root[0] and gm.get_submodule("1") is root[1]
    x = torch.randn(3, 2)
    torch.testing.assert_close(gms["minifx"](x), root(x))


@pytest.mark.parametrize("flag", [True, False])
def test_concrete_args_specialise_the_graph_and_check_the_value_as_torch_fx_does(flag):
    gms = traced_both(shifted, {"flag": flag})
    assert gms["minifx"].code == gms["torch.fx"].code
    assert "specialized to have value" in gms["minifx"].code
    x = torch.ones(2)
    torch.testing.assert_close(gms["minifx"](x, flag), x + 1 if flag else x - 1)
    with pytest.raises(AssertionError, match=f"flag has been specialized to have value {flag}"):
        gms["minifx"](x, not flag)


def test_concrete_args_with_ph_keep_part_of_a_structure_symbolic():
    ours = symbolic_trace(pair_sum, concrete_args={"pair": (PH, PH)})
    theirs = torch.fx.symbolic_trace(pair_sum, concrete_args={"pair": (torch.fx.PH, torch.fx.PH)})
    assert ours.code == theirs.code
    assert [n.op for n in ours.graph.nodes].count("placeholder") == 2
    assert ours((torch.tensor(2.0), torch.tensor(3.0))) == torch.tensor(6.0)


def test_without_concrete_args_control_flow_on_an_input_cannot_be_traced():
    with pytest.raises(torch.fx.proxy.TraceError):
        torch.fx.symbolic_trace(shifted)
    with pytest.raises(minifx.TraceError, match="was used as a Python bool"):
        symbolic_trace(shifted)


@pytest.mark.parametrize(
    "root", [3, "shifted", None, [shifted]], ids=["int", "str", "None", "list-of-function"]
)
def test_something_that_is_no_function_or_module_is_refused_with_the_reason(root):
    with pytest.raises(AssertionError):  # torch.fx's type, which minifx's error also is
        torch.fx.symbolic_trace(root)
    with pytest.raises(TypeError) as error:
        symbolic_trace(root)
    assert isinstance(error.value, AssertionError)
    assert str(error.value) == (
        f"cannot trace {root!r}: the tracer needs a Python function (or a module whose "
        "forward is one), because it reads the parameter names from its code. Wrap the "
        "callable in a def."
    )


def test_it_is_exported_where_torch_fx_has_it():
    assert minifx.symbolic_trace is minifx.codegen.symbolic_trace is symbolic_trace
