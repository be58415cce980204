"""`minifx/graph/node_index.py`: the index behind `Graph.find_nodes`.

`find_nodes` itself is compared with torch.fx in test_graph.py; these tests
pin the index's own bookkeeping: what `create_node`, `erase_node` and the
`op` / `target` setters leave in it.
"""

from __future__ import annotations

import operator

import pytest
import torch

from minifx.graph import Graph, Node
from minifx.graph.node_index import NodeIndex

pytestmark = pytest.mark.ch2


def chain() -> tuple[Graph, Node, Node, Node]:
    graph = Graph()
    x = graph.placeholder("x")
    add = graph.call_function(operator.add, (x, 1))
    relu = graph.call_function(torch.relu, (add,))
    graph.output(relu)
    return graph, x, add, relu


def test_created_nodes_are_indexed_by_op_and_by_target():
    graph, x, add, relu = chain()
    index = graph._node_index
    assert index.find("placeholder") == [x]
    assert index.find("call_function") == [add, relu]
    assert index.find("call_function", torch.relu) == [relu]
    assert index.all_nodes() == set(graph.nodes)


def test_an_erased_node_leaves_the_index():
    graph, x, add, relu = chain()
    relu.replace_all_uses_with(add)
    graph.erase_node(relu)
    assert relu not in graph._node_index
    assert graph._node_index.find("call_function", torch.relu) == []
    assert graph._node_index.remove(relu) is False  # already gone


def test_a_new_op_or_target_moves_the_node_in_the_index():
    graph, x, add, relu = chain()
    relu.target = torch.sigmoid
    assert graph.find_nodes(op="call_function", target=torch.relu) == []
    assert graph.find_nodes(op="call_function", target=torch.sigmoid) == [relu]
    relu.op, relu.target = "call_method", "sigmoid"
    assert graph.find_nodes(op="call_method", target="sigmoid") == [relu]
    assert graph.find_nodes(op="call_function") == [add]


def test_updating_leaves_a_node_that_was_not_indexed_out():
    graph, x, _, _ = chain()
    stray = Node(graph, "stray", "call_function", torch.relu, (x,), {})
    index = graph._node_index
    with index.updating(stray):
        stray._target = torch.sigmoid
    assert stray not in index and index.find("call_function", torch.sigmoid) == []


def test_find_keeps_the_order_nodes_were_added():
    index, graph = NodeIndex(), Graph()
    x = graph.placeholder("x")
    first = graph.call_method("relu", (x,))
    second = graph.call_method("sigmoid", (x,))
    for node in (second, first):
        index.add(node)
    assert index.find("call_method") == [second, first]
    assert index.find("call_method", "relu") == [first]  # by comparing targets
