"""Unit tests of the Graph/Node editing API, differential against torch.fx.

Most tests build one graph twice, with `torch.fx.Graph` (the oracle) and with
`minifx.graph.Graph`, through the same sequence of calls, and then require the
same printout byte for byte and the same node names. A build function receives
a `Lib` (tests/graph/support.py: the library's `Graph`, `map_arg`, ...) so that one body
serves both.

Where minifx differs from torch.fx on purpose (messages, lint's extra
invariants, ...), the test says so; chapter 2's "Differences from torch.fx"
claims are pinned against torch.fx in test_differences.py.
"""

from __future__ import annotations

import copy
import inspect
import operator
import typing
import warnings
from collections import namedtuple

import pytest
import torch
import torch.fx
import torch.fx.node

import minifx
import minifx.graph
from tests.graph.support import MINI, TORCH, chain, differential, names

pytestmark = pytest.mark.ch2


# -- naming -----------------------------------------------------------------------


@pytest.mark.task("2.2")
def test_repeated_targets_count_up():
    def build(lib):
        graph = lib.Graph()
        x = graph.placeholder("x")
        for _ in range(3):
            x = graph.call_function(operator.add, (x, 1))
        graph.call_function(operator.mul, (x, 2))
        return graph, names(graph.nodes)

    _, found = differential(build)
    assert found == ["x", "add", "add_1", "add_2", "mul"]


def test_explicit_names_are_made_unique():
    def build(lib):
        graph = lib.Graph()
        for name in ["foo", "foo", "x_3", "x", "x", "add_1"]:
            graph.create_node("placeholder", "p", name=name)
        # The automatic names must skip the explicit add_1 taken above.
        for _ in range(3):
            graph.call_function(operator.add, (1, 2))
        return graph, names(graph.nodes)

    _, found = differential(build)
    # Counting goes on from the highest suffix seen for a base: after x_3, x_4.
    assert found == ["foo", "foo_1", "x_3", "x", "x_4", "add_1", "add", "add_2", "add_3"]


@pytest.mark.parametrize(
    "op, target, name, expected",
    [
        ("call_method", "if", None, "if_1"),  # a keyword
        ("call_function", sum, None, "sum_1"),  # a builtin
        ("call_function", torch.relu, "input", "input_1"),
        ("call_function", getattr, None, "getattr_1"),
        ("placeholder", "torch", None, "torch_1"),  # would shadow the torch module
        ("placeholder", "len", None, "len_1"),
    ],
    ids=["if", "sum", "input", "getattr", "torch", "len"],
)
def test_names_that_would_shadow_keywords_or_builtins_get_a_suffix(op, target, name, expected):
    def build(lib):
        graph = lib.Graph()
        node = graph.create_node(op, target, name=name)
        return graph, node.name

    _, found = differential(build)
    assert found == expected


@pytest.mark.parametrize(
    "op, target, name, expected",
    [
        ("call_module", "layer1.0.conv", None, "layer1_0_conv"),
        ("get_attr", "0.weight", None, "_0_weight"),
        ("call_method", "__getitem__", None, "getitem"),
        ("call_method", "batchNorm", None, "batch_norm"),
        ("placeholder", "x", "a-b", "a_b"),
        ("placeholder", "x", "", "_unnamed"),
    ],
    ids=["dotted", "leading-digit", "magic", "camel", "illegal-char", "empty"],
)
def test_targets_and_names_become_identifiers(op, target, name, expected):
    def build(lib):
        graph = lib.Graph()
        node = graph.create_node(op, target, name=name)
        return graph, node.name

    _, found = differential(build)
    assert found == expected


# -- printing ------------------------------------------------------------------------


def test_placeholders_print_defaults_annotations_and_users():
    def build(lib):
        graph = lib.Graph()
        x = graph.placeholder("x", type_expr=int)
        y = graph.placeholder("y", default_value=3)
        z = graph.placeholder("z", type_expr=torch.Tensor, default_value=None)
        graph.placeholder("unused", type_expr=typing.List[int])
        graph.output(graph.call_function(operator.add, (x, y), {"alpha": z}))
        return graph

    graph = differential(build)
    assert str(graph) == (
        "graph():\n"
        "    %x : int [num_users=1] = placeholder[target=x]\n"
        "    %y : [num_users=1] = placeholder[target=y](default=3)\n"
        "    %z : torch.Tensor [num_users=1] = placeholder[target=z](default=None)\n"
        "    %unused : typing.List[int] [num_users=0] = placeholder[target=unused]\n"
        "    %add : [num_users=1] = call_function[target=operator.add]"
        "(args = (%x, %y), kwargs = {alpha: %z})\n"
        "    return add"
    )


@pytest.mark.task("2.2")
def test_every_opcode_prints_like_torch_fx():
    class Custom:
        pass

    def build(lib):
        graph = lib.Graph()
        x = graph.placeholder("x", default_value="abc")
        w = graph.get_attr("layer1.0.weight", type_expr=torch.Tensor)
        conv = graph.call_module("layer1.0.conv", (x,), {"w": w})
        view = graph.call_method("view", (conv, -1), type_expr=Custom)
        item = graph.call_function(operator.getitem, (view, slice(None, 2)), type_expr=int)
        tup = graph.call_function(torch.cat, ([x, w],), {"dim": 0}, type_expr=typing.Optional[int])
        graph.output({"a": item, "b": [tup, (x, None)]})
        return graph, [node.format_node() for node in graph.nodes]

    differential(build)


@pytest.mark.parametrize("type_expr", [0, "", False])
def test_a_falsy_type_is_printed_for_all_but_placeholders(type_expr):
    # torch.fx tests a placeholder's type for truth, the other nodes' for None.
    def build(lib):
        graph = lib.Graph()
        x = graph.placeholder("x", type_expr=type_expr)
        graph.call_method("relu", (x,), type_expr=type_expr)
        graph.get_attr("w", type_expr=type_expr)
        return graph

    lines = str(differential(build)).splitlines()
    assert lines[1] == "    %x : [num_users=1] = placeholder[target=x]"
    assert lines[2].startswith(f"    %relu : {type_expr!r} [num_users=0]")


def test_output_of_a_container_prints_python_repr():
    def build(lib):
        graph = lib.Graph()
        x = graph.placeholder("x")
        graph.output({"a": x, "b": [x, (x, 1, "s")]})
        return graph

    assert str(differential(build)).endswith("return {'a': x, 'b': [x, (x, 1, 's')]}")


def test_node_repr_is_its_name():
    _, _, add, _ = chain(MINI)
    assert repr(add) == "add"


def test_print_tabular_has_a_header_and_a_row_per_node(capsys):
    graph, *_ = chain(MINI)
    graph.print_tabular()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    rows = lines[2:]
    assert len(rows) == len(graph.nodes) == 4
    for row, node in zip(rows, graph.nodes):
        assert row.split()[:2] == [node.op, node.name]
    # Columns line up: every row has its name where the header has "name".
    name_column = lines[0].index("name")
    assert [row[name_column:].split()[0] for row in rows] == ["x", "add", "relu", "output"]


# -- insertion points ----------------------------------------------------------------


@pytest.mark.task("2.2")
def test_new_nodes_go_to_the_end_by_default():
    def build(lib):
        graph, x, _, _ = chain(lib)
        graph.call_function(torch.sin, (x,))
        return graph, names(graph.nodes)

    _, found = differential(build)
    assert found == ["x", "add", "relu", "output", "sin"]


@pytest.mark.task("2.3")
def test_inserting_before_keeps_the_order_of_creation():
    def build(lib):
        graph, x, _, relu = chain(lib)
        with graph.inserting_before(relu):
            sin = graph.call_function(torch.sin, (x,))
            graph.call_function(torch.cos, (sin,))
        return graph, names(graph.nodes)

    _, found = differential(build)
    assert found == ["x", "add", "sin", "cos", "relu", "output"]


@pytest.mark.task("2.3")
def test_two_nodes_inserted_after_one_node_come_out_reversed():
    # torch.fx's quirk: each new node goes right after `x`, in front of the
    # previous new one. minifx copies it so that passes port unchanged.
    def build(lib):
        graph, x, _, _ = chain(lib)
        with graph.inserting_after(x):
            graph.call_function(torch.sin, (x,))
            graph.call_function(torch.cos, (x,))
        return graph, names(graph.nodes)

    _, found = differential(build)
    assert found == ["x", "cos", "sin", "add", "relu", "output"]


@pytest.mark.task("2.3")
def test_inserting_after_the_newest_node_builds_a_chain():
    def build(lib):
        graph, x, _, _ = chain(lib)
        last = x
        for function in (torch.sin, torch.cos, torch.tan):
            with graph.inserting_after(last):
                last = graph.call_function(function, (last,))
        return graph, names(graph.nodes)

    _, found = differential(build)
    assert found == ["x", "sin", "cos", "tan", "add", "relu", "output"]


@pytest.mark.task("2.3")
def test_none_means_the_start_before_and_the_end_after():
    def build(lib):
        graph, x, add, _ = chain(lib)
        with graph.inserting_before(add):  # somewhere else first, to see None override it
            with graph.inserting_before(None):
                graph.placeholder("first")
            with graph.inserting_after(None):
                graph.call_function(torch.sin, (x,))
        return graph, names(graph.nodes)

    _, found = differential(build)
    assert found == ["first", "x", "add", "relu", "output", "sin"]


@pytest.mark.task("2.3")
def test_insertion_point_is_restored_on_exit_even_after_an_error():
    def build(lib):
        graph, x, add, _ = chain(lib)
        with graph.inserting_before(add):
            with graph.inserting_after(x):
                graph.call_function(torch.sin, (x,))
            graph.call_function(torch.cos, (x,))  # back to "before add"
        with pytest.raises(KeyError):
            with graph.inserting_before(x):
                raise KeyError("boom")
        graph.call_function(torch.tan, (x,))  # back to the end
        return graph, names(graph.nodes)

    _, found = differential(build)
    assert found == ["x", "sin", "cos", "add", "relu", "output", "tan"]


def test_inserting_before_without_with_moves_the_point_for_good():
    def build(lib):
        graph, x, add, _ = chain(lib)
        graph.inserting_before(add)
        graph.call_function(torch.sin, (x,))
        graph.call_function(torch.cos, (x,))
        return graph, names(graph.nodes)

    _, found = differential(build)
    assert found == ["x", "sin", "cos", "add", "relu", "output"]


def test_nodes_inserted_during_iteration_are_visited():
    def build(lib):
        graph, x, _, _ = chain(lib)
        seen = []
        for node in graph.nodes:
            seen.append(node.name)
            if node is x:
                with graph.inserting_after(x):
                    graph.call_function(torch.sin, (x,))
        return graph, seen

    _, seen = differential(build)
    assert seen == ["x", "sin", "add", "relu", "output"]


# -- the linked list ----------------------------------------------------------------


def test_prev_and_next_walk_the_list_around_a_sentinel():
    graph, x, add, relu = chain(MINI)
    output = relu.next
    assert (x.next, add.next, add.prev, output.prev) == (add, relu, x, relu)
    # The sentinel before the first and after the last node is one and the same.
    assert x.prev is output.next
    assert x.prev.op == "root" == chain(TORCH)[1].prev.op
    assert x.prev not in list(graph.nodes)


def test_len_iteration_and_reversed():
    graph, *_ = chain(MINI)
    assert len(graph.nodes) == 4
    assert names(reversed(graph.nodes)) == ["output", "relu", "add", "x"]
    assert names(graph.nodes) == ["x", "add", "relu", "output"]  # reversing made no copy


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


# -- use-def lists -------------------------------------------------------------------


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


# -- erasing ---------------------------------------------------------------------------


@pytest.mark.task("2.4")
def test_erase_node_refuses_a_node_with_users():
    def build(lib):
        graph, _, add, _ = chain(lib)
        with pytest.raises(RuntimeError, match="still ha"):  # both libraries say so
            graph.erase_node(add)
        return graph, len(graph.nodes)

    _, length = differential(build)
    assert length == 4


@pytest.mark.task("2.4")
def test_erase_node_removes_it_from_its_inputs_users():
    def build(lib):
        graph, x, add, relu = chain(lib)
        sin = graph.call_function(torch.sin, (x,), {"k": [add]})
        graph.erase_node(sin)
        return graph, (names(x.users), names(add.users), len(graph.nodes), sin.all_input_nodes)

    _, (x_users, add_users, length, inputs) = differential(build)
    assert x_users == ["add"] and add_users == ["relu"] and length == 4 and inputs == []


def test_erase_unused_nodes_while_iterating_forwards():
    def build(lib):
        graph = lib.Graph()
        x = graph.placeholder("x")
        relus = [graph.call_function(torch.relu, (x,)) for _ in range(4)]
        graph.output(relus[1])
        seen = []
        for node in graph.nodes:
            seen.append(node.name)
            if node.op == "call_function" and not node.users:
                graph.erase_node(node)
        return graph, (seen, len(graph.nodes))

    _, (seen, length) = differential(build)
    assert seen == ["x", "relu", "relu_1", "relu_2", "relu_3", "output"]
    assert length == 3


@pytest.mark.task("2.4")
def test_erase_a_chain_while_iterating_backwards():
    def build(lib):
        graph = lib.Graph()
        x = graph.placeholder("x")
        dead = graph.call_function(torch.sin, (x,))
        dead = graph.call_function(torch.cos, (dead,))
        graph.output(x)
        for node in reversed(graph.nodes):
            if node.op == "call_function" and not node.users:
                graph.erase_node(node)  # frees its input, reached next
        return graph, names(reversed(graph.nodes))

    _, found = differential(build)
    assert found == ["output", "x"]


def test_a_node_erased_ahead_of_the_loop_is_skipped():
    def build(lib):
        graph, x, _, _ = chain(lib)
        sin = graph.call_function(torch.sin, (x,))
        seen = []
        for node in graph.nodes:
            seen.append(node.name)
            if node.op == "output":
                graph.erase_node(sin)
        return graph, seen

    _, seen = differential(build)
    assert seen == ["x", "add", "relu", "output"]


def test_erasing_twice_warns_and_changes_nothing():
    def build(lib):
        graph, x, _, _ = chain(lib)
        sin = graph.call_function(torch.sin, (x,))
        graph.erase_node(sin)
        with pytest.warns(UserWarning, match="already erased"):
            graph.erase_node(sin)
        return graph, len(graph.nodes)

    _, length = differential(build)
    assert length == 4


def test_erased_nodes_are_not_found():
    def build(lib):
        graph, x, _, _ = chain(lib)
        graph.erase_node(graph.call_function(torch.relu, (x,)))
        return graph, names(graph.find_nodes(op="call_function", target=torch.relu))

    _, found = differential(build)
    assert found == ["relu"]


# -- copies ------------------------------------------------------------------------------


def test_node_copy_into_another_graph_maps_inputs_and_keeps_names():
    def build(lib):
        source = lib.Graph()
        x = source.placeholder("x")
        scaled = source.call_function(operator.mul, (x, 2), name="scaled")
        relu = source.call_function(torch.relu, (scaled,), type_expr=torch.Tensor)
        scaled.meta["tag"] = ["a"]
        target = lib.Graph()
        target.placeholder("relu")  # taken, so the copy of %relu gets relu_1
        env = {}
        for node in source.nodes:
            env[node] = target.node_copy(node, lambda n: env[n])
        copied = env[scaled]
        return target, (
            names(target.nodes),
            copied.meta,
            copied.meta is scaled.meta,
            copied.meta["tag"] is scaled.meta["tag"],
            str(env[relu].type),
            copied.graph is target,
            names(env[x].users),
        )

    _, (found, meta, same_dict, same_value, relu_type, owned, x_users) = differential(build)
    # The copy starts from the node's own name, not from its target's.
    assert found == ["relu", "x", "scaled", "relu_1"]
    assert x_users == ["scaled"]
    # meta is copied one level deep: a new dict holding the same values.
    assert meta == {"tag": ["a"]} and not same_dict and same_value
    assert relu_type == str(torch.Tensor) and owned


def test_node_copy_into_the_same_graph_gets_a_fresh_name():
    def build(lib):
        graph, x, add, _ = chain(lib)
        with graph.inserting_after(add):
            copy_ = graph.node_copy(add)
        return graph, (copy_.name, names(x.users))

    _, found = differential(build)
    assert found == ("add_1", ["add", "add_1"])


def test_graph_copy_returns_the_mapped_output_value():
    def build(lib):
        source = lib.Graph()
        x = source.placeholder("x")
        add = source.call_function(operator.add, (x, 1))
        source.output((add, [x]))
        target = lib.Graph()
        y = target.placeholder("x")
        target.call_function(operator.add, (y, 2))
        val_map = {x: y}  # x is spliced onto y, not copied
        value = target.graph_copy(source, val_map)
        target.output(value)
        return target, (str(value), sorted(names(val_map)), val_map[x] is y)

    graph, (value, mapped, spliced) = differential(build)
    assert value == "(add_1, [x])" and mapped == ["add", "x"] and spliced
    assert names(graph.nodes) == ["x", "add", "add_1", "output"]


def test_graph_copy_can_return_the_output_node():
    def build(lib):
        source, *_ = chain(lib)
        target = lib.Graph()
        value, old_output = target.graph_copy(source, {}, return_output_node=True)
        return target, (str(value), old_output.op, old_output.graph is source)

    _, found = differential(build)
    assert found == ("relu", "output", True)


def test_graph_copy_of_a_graph_without_output_returns_none():
    def build(lib):
        source = lib.Graph()
        source.placeholder("x")
        target = lib.Graph()
        return target, (
            target.graph_copy(source, {}),
            target.graph_copy(source, {}, return_output_node=True),
        )

    _, found = differential(build)
    assert found == (None, None)


def test_deepcopy_gives_an_equal_independent_graph():
    def build(lib):
        graph = lib.Graph()
        x = graph.placeholder("x", type_expr=torch.Tensor)
        add = graph.call_function(operator.add, (x, x), name="add_5")
        add.meta["k"] = [1]
        output = graph.output(add, type_expr=int)
        output.meta["m"] = 1
        copied = copy.deepcopy(graph)
        new_x, new_add, new_output = copied.nodes
        facts = (
            str(copied) == str(graph),
            names(copied.nodes),
            new_add.meta,
            new_add.meta is add.meta,
            new_output.meta,
            new_output.type,
            new_x.type,
            {node.graph is copied for node in copied.nodes},
            not set(copied.nodes) & set(graph.nodes),
        )
        graph.erase_node(output)  # editing the original leaves the copy alone
        return copied, facts

    _, facts = differential(build)
    same_text, found_names, meta, shared, output_meta, output_type, x_type, owners, disjoint = facts
    assert same_text and found_names == ["x", "add_5", "output"]
    assert meta == {"k": [1]} and not shared and output_meta == {"m": 1}
    assert output_type is int and x_type is torch.Tensor
    assert owners == {True} and disjoint


# -- find_nodes ----------------------------------------------------------------------------


def find_nodes_graph(lib):
    """Nodes created in one order and then moved, so graph order != creation order."""
    graph = lib.Graph()
    x = graph.placeholder("x")
    add = graph.call_function(operator.add, (x, 1))
    relu = graph.call_method("relu", (add,))
    lin = graph.call_module("lin", (relu,))
    lin2 = graph.call_module("lin2", (lin,))
    lin_again = graph.call_module("lin", (lin2,))
    add_again = graph.call_function(operator.add, (lin_again, 1))
    relu_again = graph.call_method("relu", (add_again,))
    graph.output(relu_again)
    # Unlinked from their inputs in order, this is only for searching.
    x.append(relu_again)
    x.append(lin_again)
    x.append(add_again)
    return graph


@pytest.mark.parametrize(
    "query, expected",
    [
        (dict(op="call_function", target=operator.add), ["add_1", "add"]),
        (dict(op="call_function", target=operator.add, sort=False), ["add", "add_1"]),
        (dict(op="call_method"), ["relu_1", "relu"]),
        (dict(op="call_method", target="relu", sort=False), ["relu", "relu_1"]),
        (dict(op="call_module"), ["lin_1", "lin", "lin2"]),
        (dict(op="call_module", target="lin"), ["lin_1", "lin"]),
        (dict(op="call_module", target="lin", sort=False), ["lin", "lin_1"]),
        (dict(op="placeholder"), ["x"]),
        (dict(op="placeholder", target="x"), ["x"]),
        (dict(op="output"), ["output"]),
        (dict(op="get_attr"), []),
        (dict(op="call_function", target=operator.mul), []),
    ],
    ids=str,
)
def test_find_nodes(query, expected):
    def build(lib):
        graph = find_nodes_graph(lib)
        return graph, names(graph.find_nodes(**query))

    _, found = differential(build)
    assert found == expected


def test_find_nodes_sees_a_changed_target():
    # Passes retarget nodes in place (node.target = torch.sin); torch.fx keeps
    # its find_nodes index in step with such assignments.
    def build(lib):
        graph, _, _, relu = chain(lib)
        lin = graph.call_module("lin", (relu,))
        relu.target, lin.target = torch.sin, "other"
        return graph, (
            names(graph.find_nodes(op="call_function", target=torch.sin)),
            names(graph.find_nodes(op="call_function", target=torch.relu)),
            names(graph.find_nodes(op="call_module", target="other")),
            names(graph.find_nodes(op="call_module", target="lin")),
        )

    _, found = differential(build)
    assert found == (["relu"], [], ["lin"], [])


def test_find_nodes_sees_a_changed_op():
    def build(lib):
        graph = lib.Graph()
        x = graph.placeholder("x")
        node = graph.call_method("relu", (x,))
        node.op, node.target = "call_function", torch.relu
        return graph, (
            names(graph.find_nodes(op="call_function", target=torch.relu)),
            names(graph.find_nodes(op="call_method")),
        )

    _, found = differential(build)
    assert found == (["relu"], [])


def test_a_node_whose_op_changed_can_be_erased():
    # Rewriting x.relu() into torch.relu(x) in place, then dropping it, is
    # what a "method to function" pass does.
    def build(lib):
        graph = lib.Graph()
        x = graph.placeholder("x")
        node = graph.call_method("relu", (x,))
        node.op, node.target = "call_function", torch.relu
        graph.erase_node(node)
        return graph, names(graph.find_nodes(op="call_function", target=torch.relu))

    _, found = differential(build)
    assert found == []


@pytest.mark.parametrize("sort", [True, False])
def test_find_nodes_never_returns_an_erased_node_after_a_retarget(sort):
    def build(lib):
        graph = lib.Graph()
        x = graph.placeholder("x")
        node = graph.call_function(torch.relu, (x,))
        node.target = torch.sin
        graph.erase_node(node)
        return graph, (
            names(graph.find_nodes(op="call_function", target=torch.relu, sort=sort)),
            names(graph.find_nodes(op="call_function", target=torch.sin, sort=sort)),
        )

    _, found = differential(build)
    assert found == ([], [])


# -- dead code -------------------------------------------------------------------------------


@pytest.mark.task("2.5")
def test_eliminate_dead_code_removes_unused_pure_nodes():
    def build(lib):
        graph = lib.Graph()
        x = graph.placeholder("x")
        graph.placeholder("unused")  # an input stays: it is the graph's signature
        dead = graph.call_function(operator.add, (x, 1))
        graph.call_function(torch.relu, (dead,))  # dead too, once its user is gone
        graph.call_method("sum", (x,))
        graph.get_attr("w")
        graph.output(x)
        return graph, (graph.eliminate_dead_code(), graph.eliminate_dead_code())

    graph, changed = differential(build)
    assert changed == (True, False)
    assert names(graph.nodes) == ["x", "unused", "output"]


@pytest.mark.parametrize(
    "is_impure, expected",
    [
        (lambda node: True, ["x", "unused", "relu", "output"]),  # keep everything
        (lambda node: node.op == "output", ["output"]),  # even inputs may go
    ],
    ids=["keep-all", "only-output"],
)
@pytest.mark.task("2.5")
def test_eliminate_dead_code_asks_is_impure_node(is_impure, expected):
    def build(lib):
        graph = lib.Graph()
        x = graph.placeholder("x")
        graph.placeholder("unused")
        graph.call_function(torch.relu, (x,))
        graph.output(None)
        return graph, graph.eliminate_dead_code(is_impure)

    graph, changed = differential(build)
    assert names(graph.nodes) == expected
    assert changed is (len(expected) < 4)


# Which calls stay (side effects, randomness, registrations) is in test_side_effects.py.


def test_call_module_of_an_impure_module_is_kept():
    root = torch.nn.Module()
    root.pure, root.noisy = torch.nn.Identity(), torch.nn.Identity()
    root.noisy._is_impure = True

    def build(lib):
        graph = lib.Graph(owning_module=root)
        x = graph.placeholder("x")
        graph.call_module("pure", (x,))
        graph.call_module("noisy", (x,))
        graph.output(x)
        return graph, graph.eliminate_dead_code()

    graph, changed = differential(build)
    assert changed is True and names(graph.nodes) == ["x", "noisy", "output"]


def test_eliminate_dead_code_lints_first():
    graph, x, add, _ = chain(MINI)
    x.prepend(add)  # add now uses x before x is defined
    with pytest.raises(RuntimeError, match="invariant 4"):
        graph.eliminate_dead_code()
    assert len(graph.nodes) == 4


# -- map_arg and immutable arguments ----------------------------------------------------------


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


def test_stored_containers_compare_and_hash_like_plain_ones():
    graph = MINI.Graph()
    x = graph.placeholder("x")
    node = graph.call_function(torch.cat, ([x, x],), {"d": {"a": x}})
    stored_list, stored_dict = node.args[0], node.kwargs["d"]
    assert stored_list == [x, x] and isinstance(stored_list, list)
    assert stored_dict == {"a": x} and isinstance(stored_dict, dict)
    assert hash(stored_list) == hash((x, x))  # hashable, unlike a list
    assert hash(stored_dict) == hash(frozenset({("a", x)}))
    # Equal dicts hash alike whatever their order, as torch.fx's immutable_dict does.
    other = graph.call_function(torch.cat, (x,), {"d": {"b": 1, "a": x}}).kwargs["d"]
    assert other == {"a": x, "b": 1}
    assert hash(other) == hash(
        graph.call_function(torch.cat, (x,), {"d": {"a": x, "b": 1}}).kwargs["d"]
    )


IMMUTABLE_LIST_MESSAGE = (
    "a list inside a Node's args or kwargs cannot be changed in place, because the graph "
    "would not see the change and its use-def lists would go stale. Build a new list and "
    "assign it (new_args = (new_list, *node.args[1:]); node.args = new_args), or use "
    "node.update_arg."
)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda lst: lst.append(1),
        lambda lst: lst.extend([1]),
        lambda lst: lst.insert(0, 1),
        lambda lst: lst.pop(),
        lambda lst: lst.remove(lst[0]),
        lambda lst: lst.clear(),
        lambda lst: lst.sort(),
        lambda lst: lst.reverse(),
        lambda lst: lst.__setitem__(0, 1),
        lambda lst: lst.__delitem__(0),
        lambda lst: lst.__iadd__([1]),
        lambda lst: lst.__imul__(2),
    ],
    ids=[
        "append",
        "extend",
        "insert",
        "pop",
        "remove",
        "clear",
        "sort",
        "reverse",
        "setitem",
        "delitem",
        "iadd",
        "imul",
    ],
)
def test_a_stored_list_refuses_changes(mutate):
    for lib in (TORCH, MINI):  # both raise TypeError; minifx's message says what to do
        graph = lib.Graph()
        x = graph.placeholder("x")
        node = graph.call_function(torch.cat, ([x, x],))
        with pytest.raises(TypeError) as error:
            mutate(node.args[0])
        assert node.args[0] == [x, x]
    assert str(error.value) == IMMUTABLE_LIST_MESSAGE


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.__setitem__("z", 1),
        lambda d: d.__delitem__("a"),
        lambda d: d.pop("a"),
        lambda d: d.popitem(),
        lambda d: d.clear(),
        lambda d: d.update({}),
        lambda d: d.setdefault("z", 1),
        lambda d: d.__ior__({}),
    ],
    ids=["setitem", "delitem", "pop", "popitem", "clear", "update", "setdefault", "ior"],
)
def test_stored_dicts_refuse_changes(mutate):
    for lib in (TORCH, MINI):  # both raise TypeError
        graph = lib.Graph()
        x = graph.placeholder("x")
        node = graph.call_function(torch.cat, (x,), {"a": x})
        with pytest.raises(TypeError):
            mutate(node.kwargs)
        assert node.kwargs == {"a": x} and names(x.users) == ["cat"]


def test_a_stored_dict_says_how_to_assign_kwargs():
    graph = MINI.Graph()
    x = graph.placeholder("x")
    node = graph.call_function(torch.cat, (x,), {"a": x})
    with pytest.raises(TypeError) as error:
        node.kwargs["a"] = 1
    # The message must speak of a dict and of the kwargs setters, not of a list
    # and node.args, which would send the reader to the wrong fix.
    message = str(error.value)
    assert message.startswith("a dict inside a Node's args or kwargs cannot be changed in place")
    assert "node.kwargs = " in message and "update_kwarg" in message


# -- stage 1's Proxy on a stage 2 graph ----------------------------------------------------


def test_proxy_of_a_node_appends_to_its_graph():
    def build(lib):
        graph = lib.Graph()
        x = graph.placeholder("x")
        added = lib.Proxy(x) + 1
        relu = torch.relu(added)
        viewed = relu.view(-1)
        graph.output(viewed.node)
        return graph, (added.node.graph is graph, names(x.users))

    graph, (owned, x_users) = differential(build)
    assert owned and x_users == ["add"]
    assert str(graph) == (
        "graph():\n"
        "    %x : [num_users=1] = placeholder[target=x]\n"
        "    %add : [num_users=1] = call_function[target=operator.add]"
        "(args = (%x, 1), kwargs = {})\n"
        "    %relu : [num_users=1] = call_function[target=torch.relu]"
        "(args = (%add,), kwargs = {})\n"
        "    %view : [num_users=1] = call_method[target=view](args = (%relu, -1), kwargs = {})\n"
        "    return view"
    )
    graph.lint()


def test_proxy_records_at_the_insertion_point():
    def build(lib):
        graph, x, add, _ = chain(lib)
        with graph.inserting_before(add):
            sin = torch.sin(lib.Proxy(x))
        return graph, sin.node.name

    graph, _ = differential(build)
    assert names(graph.nodes) == ["x", "sin", "add", "relu", "output"]


def test_placeholder_default_value_sentinel():
    def build(lib):
        graph = lib.Graph()
        graph.placeholder("a", default_value=inspect.Signature.empty)
        graph.placeholder("b", default_value=None)
        return graph, [node.args for node in graph.nodes]

    _, args = differential(build)
    assert args == [(), (None,)]


def test_warnings_module_is_quiet_for_plain_graphs():
    # Building graphs without an owning module must not warn.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        graph = MINI.Graph()
        graph.get_attr("anything")
        graph.call_module("any.path", ())


def test_deepcopy_of_a_proxy_copies_its_node_as_torch_fx_does():
    for Graph_, Proxy_ in ((torch.fx.Graph, torch.fx.Proxy), (minifx.graph.Graph, minifx.Proxy)):
        graph = Graph_()
        node = graph.call_function(torch.relu, (graph.placeholder("x"),))
        copied = copy.deepcopy(Proxy_(node))
        assert copied.node is not node
        assert (copied.node.name, copied.node.target) == ("relu", torch.relu)
