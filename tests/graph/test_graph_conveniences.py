"""`minifx/graph/graph_conveniences.py`: `find_nodes` and `print_tabular`. test_graph.py
compares `find_nodes` with torch.fx's on graphs edited in place; dead code in subgraphs
runs as GraphModules in tests/codegen/test_dead_code_runs.py."""

from __future__ import annotations

import operator

import pytest
import torch

from minifx.graph import Graph

pytestmark = pytest.mark.ch2


def reordered_graph():
    """Two `add` nodes, the second moved before the first."""
    graph = Graph()
    x = graph.placeholder("x")
    first = graph.call_function(operator.add, (x, 1))
    second = graph.call_function(operator.add, (x, 2))
    graph.output((first, second))
    first.prepend(second)
    return graph, first, second


def test_find_nodes_in_graph_order_or_in_creation_order():
    graph, first, second = reordered_graph()
    assert graph.find_nodes(op="call_function", target=operator.add) == [second, first]
    assert graph.find_nodes(op="call_function", target=operator.add, sort=False) == [
        first,
        second,
    ]
    assert graph.find_nodes(op="call_function", target=torch.relu) == []
    assert [n.name for n in graph.find_nodes(op="placeholder")] == ["x"]


def test_print_tabular_prints_a_header_and_a_row_per_node(capsys):
    graph, _, _ = reordered_graph()
    graph.print_tabular()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert [line.split()[1] for line in lines[2:]] == ["x", "add_1", "add", "output"]
