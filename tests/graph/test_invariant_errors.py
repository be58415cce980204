"""`minifx/graph/invariant_errors.py`: the wording of a broken invariant. Every message of
`lint` is pinned, through `lint` itself, in test_lint.py."""

from __future__ import annotations

import operator

import pytest

from minifx.graph import Graph
from minifx.graph.invariant_errors import broken, input_error, input_order_error

pytestmark = pytest.mark.ch2


def test_broken_names_the_rule_the_node_and_the_fix():
    graph = Graph()
    x = graph.placeholder("x")
    error = broken(3, "unique names", x, "the problem.", "the fix.")
    assert isinstance(error, RuntimeError)
    assert str(error) == (
        "Graph.lint: invariant 3 (unique names) is broken at %x: the problem.\nHow to fix: the fix."
    )
    assert "broken: the problem." in str(broken(6, "one output", None, "the problem.", "fix"))


def test_input_order_error_names_the_first_input_not_yet_defined():
    graph = Graph()
    x = graph.placeholder("x")
    y = graph.placeholder("y")
    add = graph.call_function(operator.add, (x, y))
    error = input_order_error(graph, add, defined={x})
    assert "it uses %y, which was used before it has been defined" in str(error)


def test_input_error_reports_invariant_4_before_5():
    graph = Graph()
    x = graph.placeholder("x")
    y = graph.placeholder("y")
    add = graph.call_function(operator.add, (x, y))
    x.users.pop(add)  # 5 is broken too, but 4 has the lower number
    assert "invariant 4 (inputs come first)" in str(input_error(graph, add, defined={x}))
    assert "invariant 5 (use-def lists agree)" in str(input_error(graph, add, defined={x, y}))
