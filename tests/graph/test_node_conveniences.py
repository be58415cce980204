"""`minifx/graph/node_conveniences.py`: one-argument edits and `stack_trace`, against torch.fx.

PyTorch's test_fx checks that `insert_arg` keeps the use-def lists right
(test_insert_arg); `_format_arg` prints the arguments of a node, and honours a value's
`_custom_fx_repr_fn` hook, as torch.fx's does. torch.fx.node's type aliases and
`_get_qualified_name`, which code written for torch.fx imports, equal torch.fx's.
"""

from __future__ import annotations

import math
import operator

import pytest
import torch
import torch.fx

import minifx.graph
from tests.graph.support import MINI, TORCH, chain, differential, names

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


def test_update_arg_and_update_kwarg():
    def build(lib):
        graph = lib.Graph()
        x, y = graph.placeholder("x"), graph.placeholder("y")
        node = graph.call_function(operator.add, (x, [x, y]), {"k": x})
        node.update_arg(0, 5)
        node.update_kwarg("k", 2)
        node.update_kwarg("j", y)  # a new key is added at the end
        return graph, (names(x.users), names(node.all_input_nodes), list(node.kwargs))

    _, (x_users, inputs, keys) = differential(build)
    assert x_users == ["add"]  # still used inside the list
    assert inputs == ["x", "y"] and keys == ["k", "j"]


def test_update_arg_out_of_range_raises_index_error():
    graph, _, add, _ = chain(MINI)
    with pytest.raises(IndexError):
        add.update_arg(2, 0)
    assert str(graph) == str(chain(TORCH)[0])  # nothing changed


# -- insert_arg ---------------------------------------------------------------------------


def test_insert_arg_into_the_output_as_pytorch_test_fx_does():
    def build(lib):
        graph, x, _, relu = chain(lib)
        output = graph.find_nodes(op="output")[0]
        with graph.inserting_before(output):
            buf = graph.get_attr("buf")
        output.insert_arg(0, buf)
        first = (len(output.args), names(buf.users), output.args[0] is buf)
        output.insert_arg(2, buf)  # the same node again: still one user entry
        second = (len(output.args), names(buf.users), output.args[2] is buf)
        return graph, (first, second, names(output.all_input_nodes))

    graph, (first, second, inputs) = differential(build)
    assert first == (2, ["output"], True) and second == (3, ["output"], True)
    assert inputs == ["relu", "buf"]  # a new input is added after the existing ones
    graph.lint()


def test_insert_arg_keeps_the_order_of_the_existing_use_def_entries():
    def build(lib):
        graph = lib.Graph()
        x, y = graph.placeholder("x"), graph.placeholder("y")
        first = graph.call_function(operator.add, (x, 1))
        second = graph.call_function(operator.mul, (x, y))
        first.insert_arg(0, [y, x])  # a list of nodes: both are recorded
        graph.output((first, second))
        return graph, (
            names(x.users),
            names(y.users),
            names(first.all_input_nodes),
            str(first.args),
        )

    graph, (x_users, y_users, inputs, args) = differential(build)
    assert x_users == ["add", "mul"] and y_users == ["mul", "add"]
    assert inputs == ["x", "y"] and args == "([y, x], x, 1)"
    graph.lint()


@pytest.mark.parametrize("idx", [-1, 3])
def test_insert_arg_out_of_range_raises_what_torch_fx_raises(idx):
    for lib in (TORCH, MINI):
        _, x, add, _ = chain(lib)
        with pytest.raises(AssertionError):  # torch.fx's type; minifx's is an IndexError too
            add.insert_arg(idx, x)
        assert add.args == (x, 1) and names(x.users) == ["add"]
    with pytest.raises(
        IndexError,
        match=r"%add.insert_arg\(" + str(idx) + r", ...\): the index "
        r"must be between 0 and len\(args\) = 2",
    ):
        add.insert_arg(idx, x)


def test_an_inserted_list_is_read_only_like_the_others():
    graph, x, add, _ = chain(MINI)
    add.insert_arg(2, [x])
    with pytest.raises(TypeError, match="cannot be changed in place"):
        add.args[2].append(1)


# -- printing arguments: torch.fx's _format_arg and its _custom_fx_repr_fn hook -------------


class Shown:
    """A value that says how it prints in a graph, through torch.fx's hook."""

    def __init__(self, *parts: int) -> None:
        self.parts = parts

    def _custom_fx_repr_fn(self) -> str:
        return f"Shown({', '.join(map(str, self.parts))})"


def test_format_arg_prints_as_torch_fx_does():
    from torch.fx.node import _format_arg as torch_format_arg

    from minifx.node import _format_arg  # where torch.fx's own tests import it from

    for lib, format_arg in ((TORCH, torch_format_arg), (MINI, _format_arg)):
        graph = lib.Graph()
        x = graph.placeholder("inp")
        cases = [[x, 1, "a"], (x,), {"a": x}, list(range(20)), tuple(range(5))]
        printed = [format_arg(case) for case in cases] + [
            format_arg(case, max_list_len=3) for case in cases
        ]
        if lib is TORCH:
            want = printed
        else:
            assert printed == want
    assert want[-2] == "[0, 1, 2, ...[total_len=20]]"


def test_torch_fx_node_s_type_aliases_are_there_and_equal_to_torch_fx_s():
    """Code written for torch.fx annotates with `fx.node.Target` and `fx.node.Argument`
    (torchvision's feature-extraction tracer does, in a signature Python evaluates when the
    class is made), so `minifx.node` must have them."""
    import typing

    import minifx
    from minifx.graph.node_conveniences import BaseArgumentTypes

    assert minifx.node.Target == torch.fx.node.Target
    assert minifx.node.Argument == torch.fx.node.Argument
    assert typing.get_args(BaseArgumentTypes) == typing.get_args(torch.fx.node.BaseArgumentTypes)


@pytest.mark.parametrize(
    "target",
    [
        operator.add,
        getattr,
        torch.relu,
        torch.Tensor.add,
        torch.ops.aten.add.Tensor,
        torch.nn.functional.relu,
        torch.segment_reduce,
        math.sqrt,
    ],
)
def test_get_qualified_name_names_a_target_as_torch_fx_s_does(target):
    import minifx

    assert minifx.node._get_qualified_name(target) == torch.fx.node._get_qualified_name(target)


def test_a_value_s_custom_fx_repr_fn_prints_it_in_the_graph():
    printed = {}
    for lib in (TORCH, MINI):
        graph, x, add, _ = chain(lib)
        add.update_arg(1, Shown(1, 2))
        printed[lib.name] = str(graph)
    assert printed["torch.fx"] == printed["minifx"]
    assert "Shown(1, 2)" in printed["minifx"]


def test_rename_gives_a_unique_name_and_keeps_the_old_one_taken_as_torch_fx_does():
    def build(lib):
        graph, x, add, relu = chain(lib)
        relu._rename("add")  # taken: made unique
        add._rename("add")  # its own name: nothing changes
        x._rename("renamed")
        graph.call_function(torch.neg, (relu,))._rename("x")  # x's old name stays taken
        return graph

    differential(build)


def moved_and_erased(lib):
    """A graph whose order is not the creation order: nodes moved back and forth, one erased."""
    graph = lib.Graph()
    x = graph.placeholder("x")
    a = graph.call_function(torch.neg, (x,))
    b = graph.call_function(torch.relu, (x,))
    c = graph.call_function(operator.add, (a, b))
    d = graph.call_function(torch.sin, (x,))
    output = graph.output(c)
    x.append(b)  # b before a
    c.prepend(d)  # d before c
    graph.erase_node(d)
    with graph.inserting_before(output):
        e = graph.call_function(torch.cos, (b,))
    return [x, a, b, c, e, output]


def test_nodes_compare_by_their_place_in_the_graph_as_torch_fx_s():
    ours, theirs = moved_and_erased(MINI), moved_and_erased(TORCH)
    for compare in (operator.lt, operator.le, operator.gt, operator.ge):
        table = [[compare(a, b) for b in theirs] for a in theirs]
        assert [[compare(a, b) for b in ours] for a in ours] == table
    assert names(sorted(reversed(ours))) == names(sorted(reversed(theirs)))
    assert names(sorted(ours)) == ["x", "relu", "neg", "add", "cos", "output"]
    assert min(ours[0].users).name == min(theirs[0].users).name == "relu"
    with pytest.raises(TypeError):
        ours[0] < 3  # noqa: B015
