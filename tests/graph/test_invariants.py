"""`minifx/graph/invariants.py`: the rule of invariant 1 decided once, and the shortcuts
lint takes for invariants 2 and 5. Every message of `lint` is pinned in test_lint.py."""

from __future__ import annotations

import operator

import pytest
import torch

from minifx.graph import Graph, Node
from minifx.graph.invariants import check_new_node, target_problem

pytestmark = pytest.mark.ch2


@pytest.mark.parametrize(
    "op, target, expected",
    [
        ("call_function", torch.relu, None),
        ("call_function", "relu", "a callable"),
        ("call_method", "relu", None),
        ("call_method", torch.relu, "a str"),
        ("placeholder", "x", None),
        ("get_attr", 3, "a str"),
        ("call_fn", "x", "an opcode"),
        ("root", "", "an opcode"),  # the sentinel's opcode is no node's
    ],
)
def test_target_problem(op, target, expected):
    assert target_problem(op, target) == expected


def test_check_new_node_raises_torch_fx_s_types():
    check_new_node("x", "placeholder", "x")
    with pytest.raises(AssertionError):
        check_new_node("x", "call_fn", "x")
    with pytest.raises(ValueError):
        check_new_node("relu", "call_function", "relu")


def the_graph():
    graph = Graph()
    x = graph.placeholder("x")
    add = graph.call_function(operator.add, (x, 1))
    sin = graph.call_function(torch.sin, (add,))
    graph.output(sin)
    return graph, x, add, sin


def test_a_missing_user_and_an_extra_one_do_not_cancel_out():
    # The count of users stays right, so lint must not rely on the count alone.
    graph, x, add, sin = the_graph()
    del x.users[add]
    x.users[sin] = None
    with pytest.raises(RuntimeError, match=r"invariant 5 .* at %x: %sin is listed among its users"):
        graph.lint()


def test_a_user_in_another_graph_that_uses_the_node_is_accepted():
    graph, x, _, _ = the_graph()
    other = Graph()
    other.call_function(torch.neg, (x,))  # x.users now holds a node of another graph
    graph.lint()


def test_a_node_the_graph_did_not_create_is_found_before_the_count_runs_out():
    graph, x, add, sin = the_graph()
    sin.prepend(Node(graph, "stray", "call_function", torch.cos, (add,), {}))
    with pytest.raises(
        RuntimeError, match=r"invariant 2 .* at %stray: the graph did not create it"
    ):
        graph.lint()
