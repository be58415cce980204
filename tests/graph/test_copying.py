"""`minifx/graph/copying.py`: `graph_copy` and `copy.deepcopy(graph)`.

test_graph.py compares both with torch.fx; these pin the rest: splicing a
graph onto existing values, and what a deep copy shares and what it does not.
"""

from __future__ import annotations

import copy
import operator

import pytest
import torch
import torch.fx

from minifx.graph import Graph

pytestmark = pytest.mark.ch2


def small() -> Graph:
    graph = Graph()
    x = graph.placeholder("x")
    y = graph.call_function(torch.relu, (x,))
    y.meta["tag"] = "kept"
    graph.output(y)
    return graph


def test_graph_copy_splices_onto_values_already_mapped():
    host = Graph()
    a = host.placeholder("a")
    doubled = host.call_function(operator.mul, (a, 2))
    source = small()
    x = next(iter(source.nodes))
    value = host.graph_copy(source, val_map={x: doubled})
    host.output(value)
    assert [n.name for n in host.nodes] == ["a", "mul", "relu", "output"]
    assert value.args == (doubled,)
    host.lint()


def test_deepcopy_is_a_plain_graph_with_its_own_nodes_and_meta():
    class MyGraph(Graph):
        pass

    original = MyGraph()
    original.output(original.graph_copy(small(), {}))
    copied = copy.deepcopy(original)
    assert type(copied) is Graph  # as torch.fx's deepcopy makes
    assert str(copied) == str(original)
    ours, theirs = list(copied.nodes)[1], list(original.nodes)[1]
    assert ours is not theirs and ours.graph is copied
    assert ours.meta == theirs.meta and ours.meta is not theirs.meta
    copied.lint()


@pytest.mark.parametrize("graph_class", [torch.fx.Graph, Graph], ids=["torch.fx", "minifx"])
def test_deepcopy_called_without_a_memo_as_torch_fx_allows(graph_class):
    graph = graph_class()
    graph.output(graph.call_function(torch.relu, (graph.placeholder("x"),)))
    copied = graph.__deepcopy__()
    assert str(copied) == str(graph)
    assert next(iter(copied.nodes)) is not next(iter(graph.nodes))


def test_deepcopy_of_an_empty_graph():
    copied = copy.deepcopy(Graph())
    assert len(copied.nodes) == 0
