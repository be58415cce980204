"""`minifx/graph/node_conveniences.py`: one-argument edits and `stack_trace`, against torch.fx."""

from __future__ import annotations

import operator

import pytest
import torch
import torch.fx

import minifx.graph

pytestmark = pytest.mark.ch2


def edited(fx):
    """Build x, y -> add(x, 1) -> output, then edit it with every convenience."""
    graph = fx.Graph()
    x, y = graph.placeholder("x"), graph.placeholder("y")
    add = graph.call_function(operator.add, (x, 1))
    graph.output(add)
    add.update_arg(1, y)
    add.update_kwarg("alpha", x)
    add.insert_arg(0, [y, 3])
    return graph, x, y, add


def test_the_edits_leave_the_same_graph_and_use_def_lists_as_torch_fx():
    ours, theirs = edited(minifx.graph), edited(torch.fx)
    assert str(ours[0]) == str(theirs[0])
    assert [n.name for n in ours[3].all_input_nodes] == [n.name for n in theirs[3].all_input_nodes]
    for mine, other in zip(ours[1:3], theirs[1:3]):
        assert [n.name for n in mine.users] == [n.name for n in other.users]
    ours[0].lint()


def test_insert_arg_adds_uses_without_reordering_the_others():
    graph, x, y, add = edited(minifx.graph)
    assert add.all_input_nodes == [x, y]  # y first used in args[0] now, but kept its place


def test_stack_trace_reads_and_writes_meta():
    graph, _, _, add = edited(minifx.graph)
    assert add.stack_trace is None
    add.stack_trace = 'File "model.py", line 3'
    assert add.meta["stack_trace"] == 'File "model.py", line 3'
