"""The shared oracle helpers catch what they are there to catch."""

from __future__ import annotations

import pytest
import torch

import minifx
from tests.oracle import assert_well_formed

pytestmark = pytest.mark.meta


def program(x):
    return torch.relu(x) + 1


def test_a_faithful_graph_module_is_well_formed():
    x = torch.randn(3)
    got = assert_well_formed(minifx.symbolic_trace(program), program, x)
    torch.testing.assert_close(got, program(x))


def test_a_graph_module_that_computes_something_else_is_caught():
    gm = minifx.symbolic_trace(lambda x: torch.relu(x) + 2)
    with pytest.raises(AssertionError):
        assert_well_formed(gm, program, torch.randn(3))


def test_a_graph_that_does_not_lint_is_caught():
    gm = minifx.symbolic_trace(program)
    relu = next(n for n in gm.graph.nodes if n.op == "call_function")
    relu.name = "x"  # the placeholder's name: lint refuses a duplicate
    with pytest.raises(RuntimeError, match="invariant 3 .unique names."):
        assert_well_formed(gm, program, torch.randn(3))
