"""`minifx.graph.liveness.last_uses`: where each value is used for the last time.

Differential against torch.fx 2.13, whose Interpreter computes the same table
(`user_to_last_uses`) by the same backward walk; plus the cases a reader may
wonder about: unused values, a value used twice by one node, keyword
arguments, and a graph edited after tracing.
"""

from __future__ import annotations

import operator

import pytest
import torch
import torch.fx

import minifx.graph
from minifx.graph.liveness import last_uses

pytestmark = pytest.mark.ch2


def by_name(table: dict) -> dict[str, list[str]]:
    return {user.name: [value.name for value in values] for user, values in table.items()}


def chain(x):
    return x.exp().sin().cos()


def diamond(x, y):
    a = x + y
    b = a * x
    c = torch.relu(a)
    return torch.cat([b, c, y], dim=0)


def keywords(x, y):
    return torch.add(x, other=y, alpha=2).relu()


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        h = self.linear(x)
        return h + self.linear.weight.sum() + x


@pytest.mark.parametrize(
    "program", [chain, diamond, keywords, Block()], ids=["chain", "diamond", "keywords", "module"]
)
@pytest.mark.task("3.1")
def test_last_uses_is_torch_fx_user_to_last_uses(program) -> None:
    ours = minifx.graph.Tracer().trace(program)
    root = program if isinstance(program, torch.nn.Module) else torch.nn.Module()
    theirs = torch.fx.GraphModule(root, torch.fx.Tracer().trace(program))
    expected = by_name(torch.fx.Interpreter(theirs).user_to_last_uses)
    assert by_name(last_uses(ours)) == expected


@pytest.mark.task("3.1")
def test_chain_frees_each_value_at_the_next_node() -> None:
    graph = minifx.graph.Tracer().trace(chain)
    assert by_name(last_uses(graph)) == {
        "output": ["cos"],
        "cos": ["sin"],
        "sin": ["exp"],
        "exp": ["x"],
    }


@pytest.mark.task("3.1")
def test_an_unused_value_has_no_last_use() -> None:
    graph = minifx.graph.Graph()
    x = graph.placeholder("x")
    unused = graph.call_function(torch.neg, (x,))
    used = graph.call_function(torch.relu, (x,))
    graph.output(used)
    table = last_uses(graph)
    assert unused not in [value for values in table.values() for value in values]
    assert unused not in table  # it uses x, but relu uses x later
    assert by_name(table) == {"output": ["relu"], "relu": ["x"]}


@pytest.mark.task("3.1")
def test_a_value_used_twice_by_one_node_is_listed_once() -> None:
    graph = minifx.graph.Graph()
    x = graph.placeholder("x")
    square = graph.call_function(operator.mul, (x, x))
    graph.output(square)
    assert by_name(last_uses(graph)) == {"output": ["mul"], "mul": ["x"]}


def test_the_table_follows_edits_to_the_graph() -> None:
    graph = minifx.graph.Tracer().trace(chain)
    sin = next(n for n in graph.nodes if n.name == "sin")
    sin.replace_all_uses_with(sin.args[0])
    graph.erase_node(sin)
    assert by_name(last_uses(graph)) == {"output": ["cos"], "cos": ["exp"], "exp": ["x"]}
