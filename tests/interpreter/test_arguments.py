"""`minifx.interpreter.arguments`: the checks on what `run` and `boxed_run` are given.

The messages are pinned against torch.fx in test_errors.py and
test_differential.py; these test the helpers one by one.
"""

from __future__ import annotations

import collections

import pytest
import torch

import minifx
from minifx.interpreter import Interpreter
from minifx.interpreter.arguments import (
    boxed_inputs,
    check_argument_count,
    graph_of,
    map_nodes,
    next_argument,
)

pytestmark = pytest.mark.ch4


Point = collections.namedtuple("Point", ["x", "y"])


def add(x, y):
    return x + y


def test_next_argument_takes_the_next_value_then_the_default() -> None:
    values = iter([None])
    assert next_argument(values, "x", default=()) is None  # None is a value, not "missing"
    assert next_argument(values, "y", default=(2,)) == 2


def test_next_argument_without_a_value_or_a_default_says_so() -> None:
    with pytest.raises(RuntimeError, match="Expected positional argument for parameter y"):
        next_argument(iter([]), "y", default=())


def test_boxed_inputs_maps_the_placeholders_and_empties_the_list() -> None:
    gm = minifx.symbolic_trace(add)
    inputs = [torch.ones(1), torch.zeros(1)]
    env = boxed_inputs(gm.graph, inputs)
    assert [node.name for node in env] == ["x", "y"] and inputs == []


def test_boxed_inputs_refuses_a_list_of_the_wrong_length() -> None:
    gm = minifx.symbolic_trace(add)
    with pytest.raises(RuntimeError, match="missing arguments"):
        boxed_inputs(gm.graph, [torch.ones(1)])


def test_check_argument_count_refuses_more_arguments_than_placeholders() -> None:
    interpreter = Interpreter(minifx.symbolic_trace(add))
    check_argument_count(interpreter, (1, 2))
    with pytest.raises(TypeError, match=r"got 3 arguments, but the graph takes 2 \(%x, %y\)"):
        check_argument_count(interpreter, (1, 2, 3))


def test_graph_of_refuses_a_module_without_a_minifx_graph() -> None:
    gm = minifx.symbolic_trace(add)
    assert graph_of(gm) is gm.graph
    with pytest.raises(TypeError, match="has no `graph` attribute"):
        graph_of(torch.nn.ReLU())


def test_map_nodes_builds_plain_containers_and_keeps_named_tuples_and_slices() -> None:
    graph = minifx.Graph()
    x = graph.placeholder("x")
    node = graph.call_function(torch.cat, ([x, x],), {"dim": slice(x, None)})
    point = Point(x, 1)
    mapped = map_nodes((node.args, node.kwargs, point), lambda n: n.name)
    assert mapped == ((["x", "x"],), {"dim": slice("x", None)}, Point("x", 1))
    assert type(mapped[0][0]) is list and type(mapped[1]) is dict  # not immutable_list/dict
    assert type(mapped[2]) is Point
