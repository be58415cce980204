"""`minifx/graph/graph_conveniences.py`: `find_nodes`, `output_node` and `print_tabular`. test_graph.py
compares `find_nodes` with torch.fx's on graphs edited in place; `print_tabular` is pinned to
the table torch.fx's documentation prints, and compared with torch.fx's where `tabulate` is
installed (torch.fx needs it to print a table); dead code in subgraphs
runs as GraphModules in tests/codegen/test_dead_code_runs.py."""

from __future__ import annotations

import operator

import pytest
import torch
import torch.fx

from minifx.graph import Graph

pytestmark = pytest.mark.ch2


def reordered_graph(graph_class=Graph):
    """Two `add` nodes, the second moved before the first."""
    graph = graph_class()
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


def add_graph(graph):
    """`x + y`, the graph of the module in the "Debugging" section of torch.fx's documentation."""
    x, y = graph.placeholder("x"), graph.placeholder("y")
    graph.output(graph.call_function(operator.add, (x, y)))
    return graph


# The table torch.fx's documentation (fx.md, "Debugging the Transformation") shows for
# that graph: `tabulate` makes a column at least two wider than its header (`kwargs`).
DOCUMENTED_TABLE = """\
opcode         name    target                   args    kwargs
-------------  ------  -----------------------  ------  --------
placeholder    x       x                        ()      {}
placeholder    y       y                        ()      {}
call_function  add     <built-in function add>  (x, y)  {}
output         output  output                   (add,)  {}
"""


def test_print_tabular_prints_the_table_torch_fx_documents(capsys):
    add_graph(Graph()).print_tabular()
    assert capsys.readouterr().out == DOCUMENTED_TABLE


def test_print_tabular_of_an_empty_graph_pads_the_headers(capsys):
    Graph().print_tabular()
    assert capsys.readouterr().out.splitlines() == [
        "opcode    name    target    args    kwargs",
        "--------  ------  --------  ------  --------",
    ]


@pytest.mark.parametrize(
    "build", [lambda cls: add_graph(cls()), lambda cls: reordered_graph(cls)[0]]
)
def test_print_tabular_matches_torch_fx(build, capsys):
    """Differential where torch.fx can print a table at all (it needs `tabulate`)."""
    pytest.importorskip("tabulate")
    build(torch.fx.Graph).print_tabular()
    theirs = capsys.readouterr().out
    build(Graph).print_tabular()
    assert capsys.readouterr().out == theirs


def test_output_node_is_the_last_node_as_in_torch_fx():
    for graph_class in (torch.fx.Graph, Graph):
        graph, first, second = reordered_graph(graph_class)
        output = graph.output_node()
        assert output.op == "output" and output.args == ((first, second),)


def test_output_node_of_a_graph_that_ends_elsewhere():
    """torch.fx raises `AssertionError`; minifx's error is one too, and says what to do."""
    with pytest.raises(AssertionError):
        torch.fx.Graph().placeholder("x").graph.output_node()
    graph = Graph()
    graph.placeholder("x")
    with pytest.raises(AssertionError, match=r"ends with %x, a placeholder node") as error:
        graph.output_node()
    assert isinstance(error.value, ValueError) and "graph.output(value)" in str(error.value)


@pytest.mark.parametrize(
    "target", [torch.relu, operator.add, "CamelCase", "__add__", "layer1.conv", "batchNorm2d"]
)
def test_target_to_str_is_torch_fx_s(target):
    assert Graph()._target_to_str(target) == torch.fx.Graph()._target_to_str(target)


def test_target_to_str_of_neither_a_callable_nor_a_str_is_torch_fx_s_assertion_error():
    for graph in (Graph(), torch.fx.Graph()):
        with pytest.raises(AssertionError, match="Expected target to be str, got <class 'int'>"):
            graph._target_to_str(3)
