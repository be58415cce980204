"""`minifx.graph.node`: a `Node`'s place in the linked list, its use-def lists,
`replace_all_uses_with`, and `map_arg` / `map_aggregate`, differential against torch.fx.

As in test_graph.py, a build function makes the same graph with each library
(tests/graph/support.py) and `differential` requires the same printout and names.
"""

from __future__ import annotations

import operator
from collections import namedtuple

import pytest
import torch
import torch.fx

import minifx
import minifx.graph
import minifx.graph.node
from tests.graph.support import MINI, TORCH, chain, differential, names

pytestmark = pytest.mark.ch2


def test_node_repr_is_its_name():
    _, _, add, _ = chain(MINI)
    assert repr(add) == "add"


# -- the linked list -----------------------------------------------------------------------


def test_prev_and_next_walk_the_list_around_a_sentinel():
    graph, x, add, relu = chain(MINI)
    output = relu.next
    assert (x.next, add.next, add.prev, output.prev) == (add, relu, x, relu)
    # The sentinel before the first and after the last node is one and the same.
    assert x.prev is output.next
    assert x.prev.op == "root" == chain(TORCH)[1].prev.op
    assert x.prev not in list(graph.nodes)


@pytest.mark.task("2.2")
def test_prepend_and_append_move_nodes():
    def build(lib):
        graph = lib.Graph()
        x = graph.placeholder("x")
        sin = graph.call_function(torch.sin, (x,))
        cos = graph.call_function(torch.cos, (x,))
        tan = graph.call_function(torch.tan, (x,))
        sin.prepend(tan)  # x tan sin cos
        cos.append(sin)  # x tan cos sin
        tan.prepend(tan)  # next to itself: no change
        cos.append(tan)  # x cos tan sin
        return graph, (names(graph.nodes), len(graph.nodes))

    _, found = differential(build)
    assert found == (["x", "cos", "tan", "sin"], 4)


@pytest.mark.task("2.2")
def test_moving_a_node_keeps_its_users_and_inputs():
    def build(lib):
        graph, x, add, relu = chain(lib)
        sin = graph.call_function(torch.sin, (x,))
        add.prepend(sin)
        return graph, (names(x.users), names(sin.users), sin.all_input_nodes == [x])

    _, (x_users, sin_users, inputs_ok) = differential(build)
    assert x_users == ["add", "sin"] and sin_users == [] and inputs_ok


# -- invariant 1: the constructor checks the op and the target ------------------------------


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
    assert minifx.graph.node.target_problem(op, target) == expected


@pytest.mark.parametrize(
    "op, target, kind",
    [
        ("call_function", "foo", ValueError),  # PyTorch's test_fx.py: test_wrong_target_type
        ("call_method", torch.relu, ValueError),
        ("get_attr", 3, ValueError),
        ("call_fn", "x", AssertionError),
    ],
    ids=["call_function-str", "call_method-callable", "get_attr-int", "unknown-op"],
)
def test_the_constructor_refuses_what_torch_fx_s_refuses(op, target, kind):
    # torch.fx checks invariant 1 in Node's constructor, so a node made directly,
    # without create_node, is refused too.
    for node_type, graph in (
        (torch.fx.Node, torch.fx.Graph()),
        (minifx.graph.Node, minifx.graph.Graph()),
    ):
        with pytest.raises(kind):
            node_type(graph=graph, name="foo", op=op, target=target, args=(), kwargs={})


def test_the_constructor_accepts_the_sentinel_s_root_op_as_torch_fx_s_does():
    for node_type, graph in (
        (torch.fx.Node, torch.fx.Graph()),
        (minifx.graph.Node, minifx.graph.Graph()),
    ):
        assert node_type(graph, "", "root", "", (), {}).op == "root"


# -- use-def lists -------------------------------------------------------------------------


@pytest.mark.task("2.1")
def test_use_def_lists_of_nodes_made_directly_are_torch_fx_s():
    # Nodes made by their constructor, not by create_node (task 2.2): only the
    # use-def bookkeeping is at work.
    def build(node_type, graph):
        x, y = (node_type(graph, name, "placeholder", name, (), {}) for name in "xy")
        add = node_type(graph, "add", "call_function", operator.add, (x, [y, (x,)]), {"k": y})
        mul = node_type(graph, "mul", "call_function", operator.mul, (add, add), {})
        seen = []
        for change in (
            lambda: None,
            lambda: setattr(add, "args", (y, 2)),
            lambda: setattr(add, "kwargs", {"k": {"z": x}}),
            lambda: setattr(mul, "args", (x, y)),
            lambda: setattr(add, "kwargs", {}),
        ):
            change()
            seen.append(
                [
                    (names(n.users), names(n.all_input_nodes), str(n.args), str(n.kwargs))
                    for n in (x, y, add, mul)
                ]
            )
        return seen

    ours = build(minifx.graph.Node, minifx.graph.Graph())
    assert ours == build(torch.fx.Node, torch.fx.Graph())
    assert ours[0][0] == (["add"], [], "()", "{}")  # x, at first
    assert ours[0][2] == (["mul"], ["x", "y"], "(x, [y, (x,)])", "{'k': y}")  # add, at first
    assert ours[-1][0] == (["mul"], [], "()", "{}")  # x, at last: add no longer uses it
    assert ours[-1][2] == ([], ["y"], "(y, 2)", "{}")  # add, at last: mul no longer uses it


@pytest.mark.task("2.2")
def test_users_and_inputs_are_ordered_sets():
    def build(lib):
        graph = lib.Graph()
        x, y, z = (graph.placeholder(name) for name in "xyz")
        node = graph.call_function(
            operator.add, (y, [x, y], {"k": (x, slice(z, None, 2))}), {"alpha": x, "beta": z}
        )
        twice = graph.call_function(operator.add, (x, x))  # two uses, one user
        return graph, (
            names(node.all_input_nodes),
            names(twice.all_input_nodes),
            names(x.users),
            names(z.users),
        )

    _, (inputs, twice_inputs, x_users, z_users) = differential(build)
    assert inputs == ["y", "x", "z"]  # order of first use, args before kwargs
    assert twice_inputs == ["x"]
    assert x_users == ["add", "add_1"] and z_users == ["add"]


def test_assigning_args_and_kwargs_updates_both_sides():
    def build(lib):
        graph = lib.Graph()
        x, y = graph.placeholder("x"), graph.placeholder("y")
        node = graph.call_function(operator.add, (x, 1), {"alpha": x})
        node.args = (y, 2)
        after_args = (names(x.users), names(y.users), names(node.all_input_nodes))
        node.kwargs = {"alpha": 3}
        after_kwargs = (names(x.users), names(y.users), names(node.all_input_nodes))
        return graph, (after_args, after_kwargs)

    _, (after_args, after_kwargs) = differential(build)
    assert after_args == (["add"], ["add"], ["y", "x"])
    assert after_kwargs == ([], ["add"], ["y"])


def test_args_assigned_as_a_list_stay_a_list_through_later_edits():
    def build(lib):
        graph, x, add, relu = chain(lib)
        relu.args = [add, x]  # printed `[%add, %x]`, as torch.fx prints it
        kinds = [type(relu.args).__name__]
        add.replace_all_uses_with(x)
        kinds.append(type(relu.args).__name__)
        return graph, kinds

    _, kinds = differential(build)
    assert kinds == ["immutable_list", "immutable_list"]


@pytest.mark.task("2.4")
def test_replace_input_with_swaps_every_occurrence():
    def build(lib):
        graph = lib.Graph()
        x, y = graph.placeholder("x"), graph.placeholder("y")
        node = graph.call_function(operator.add, (x, [x, (x, y)]), {"k": x})
        node.replace_input_with(x, y)
        return graph, (names(x.users), names(y.users), names(node.all_input_nodes))

    _, found = differential(build)
    assert found == ([], ["add"], ["y"])


@pytest.mark.task("2.4")
def test_replace_all_uses_with_rewires_every_user():
    def build(lib):
        graph = lib.Graph()
        x, y = graph.placeholder("x"), graph.placeholder("y")
        add = graph.call_function(operator.add, (x, x), {"alpha": [x, (x, 2)]})
        view = graph.call_method("view", (x, slice(x, 3, None)))
        graph.output((add, view, x))
        changed = x.replace_all_uses_with(y)
        return graph, (names(changed), names(x.users), names(y.users))

    _, (changed, x_users, y_users) = differential(build)
    assert changed == ["add", "view", "output"]
    assert x_users == [] and y_users == ["add", "view", "output"]


@pytest.mark.task("2.4")
def test_replace_all_uses_with_asks_delete_user_cb_per_user():
    def build(lib):
        graph = lib.Graph()
        x, y = graph.placeholder("x"), graph.placeholder("y")
        add = graph.call_function(operator.add, (x, 1))
        graph.output((add, x))
        asked = []

        def keep_the_output(user):
            asked.append(user.name)
            return user.op != "output"

        changed = x.replace_all_uses_with(y, keep_the_output)
        return graph, (asked, names(changed), names(x.users), names(y.users))

    _, (asked, changed, x_users, y_users) = differential(build)
    assert asked == ["add", "output"]
    assert changed == ["add"] and x_users == ["output"] and y_users == ["add"]


def test_replace_all_uses_with_can_propagate_meta():
    def build(lib):
        graph = lib.Graph()
        x, y = graph.placeholder("x"), graph.placeholder("y")
        x.meta["val"] = [1, 2]
        graph.output(x)
        x.replace_all_uses_with(y, propagate_meta=True)
        return graph, (y.meta, y.meta["val"] is x.meta["val"], x.meta)

    _, (meta, shared, old_meta) = differential(build)
    assert meta == {"val": [1, 2]} and shared and old_meta == {"val": [1, 2]}


def test_replace_all_uses_with_without_propagate_meta_leaves_meta_alone():
    graph = MINI.Graph()
    x, y = graph.placeholder("x"), graph.placeholder("y")
    x.meta["val"], y.meta["other"] = 1, 2
    graph.output(x)
    x.replace_all_uses_with(y)
    assert y.meta == {"other": 2}


def test_replace_all_uses_with_itself_changes_nothing():
    def build(lib):
        graph, _, add, _ = chain(lib)
        return graph, names(add.replace_all_uses_with(add))

    differential(build)


# -- map_arg and map_aggregate -------------------------------------------------------------


def test_map_arg_keeps_nested_structure():
    def build(lib):
        graph = lib.Graph()
        x, y = graph.placeholder("x"), graph.placeholder("y")
        point = namedtuple("Point", "a b")
        value = (x, [y, 1, {"k": (x, slice(y, None, 2))}], "s", point(x, 2))
        mapped = lib.map_arg(value, lambda node: node.name.upper())
        kinds = lib.map_aggregate(value, lambda leaf: type(leaf).__name__)
        return graph, (repr(mapped), repr(kinds), type(mapped[3]).__name__)

    _, (mapped, kinds, point_type) = differential(build)
    assert mapped == "('X', ['Y', 1, {'k': ('X', slice('Y', None, 2))}], 's', Point(a='X', b=2))"
    assert kinds == (
        "('Node', ['Node', 'int', {'k': ('Node', slice('Node', 'NoneType', "
        "'int'))}], 'str', Point(a='Node', b='int'))"
    )
    assert point_type == "Point"


def test_map_arg_leaves_values_without_nodes_alone():
    assert minifx.graph.map_arg((1, "a", None, [2.0]), lambda n: 1 / 0) == (1, "a", None, [2.0])
