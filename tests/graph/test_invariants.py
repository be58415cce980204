"""`minifx/graph/invariants.py`: the shortcuts lint takes for invariants 2 and 5 (the rule
of invariant 1 is tested in test_node.py, beside the `Node` constructor that checks it). Every message of `lint` is pinned in test_lint.py."""

from __future__ import annotations

import operator

import pytest
import torch

from minifx.graph import Graph, Node

pytestmark = pytest.mark.ch2


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


def test_a_node_the_graph_did_not_create_is_found_where_it_stands():
    graph, x, add, sin = the_graph()
    sin.prepend(Node(graph, "stray", "call_function", torch.cos, (add,), {}))
    with pytest.raises(
        RuntimeError, match=r"invariant 2 .* at %stray: the graph did not create it"
    ):
        graph.lint()


def test_a_walk_that_skips_a_node_breaks_invariant_2_not_4():
    # Each step checks the link back to the node it came from, so a list that skips
    # %x forwards, though every node's own links look right, is a list problem.
    graph, x, add, sin = the_graph()
    graph._root._next = add
    with pytest.raises(
        RuntimeError, match=r"invariant 2 .* at %add: it is the first node, yet node.prev is %x"
    ):
        graph.lint()


def test_the_last_link_back_from_the_sentinel_is_checked():
    # Forwards the list is whole, but walking backwards would start at %sin, not the output.
    graph, x, add, sin = the_graph()
    graph._root._prev = sin
    with pytest.raises(
        RuntimeError, match=r"invariant 2 .* at %output: node.next.prev or node.prev.next"
    ):
        graph.lint()
