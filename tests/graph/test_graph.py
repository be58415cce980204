"""Unit tests of the Graph editing API, differential against torch.fx (a Node's own API is
in test_node.py, test_node_conveniences.py and test_immutable_collections.py).

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

import pytest
import torch
import torch.fx
import torch.fx.node

import minifx
import minifx.graph
from minifx.graph.errors import MisuseError
from tests.graph.support import MINI, chain, differential, names

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


@pytest.mark.task("2.2")
@pytest.mark.parametrize(
    "args, kwargs, what",
    [(["x"], None, "args"), (("x",), [("dim", 0)], "kwargs"), ([], (("dim", 0),), "kwargs")],
)
def test_create_node_refuses_args_that_are_no_tuple_and_kwargs_that_are_no_dict(args, kwargs, what):
    # As torch.fx does (an AssertionError): a list given as args is easily meant as one
    # list argument, and silently read as the arguments it would build the wrong call.
    for library, error in ((torch.fx, AssertionError), (minifx.graph, MisuseError)):
        graph = library.Graph()
        x = graph.placeholder("x")
        args = type(args)(x if a == "x" else a for a in args)
        with pytest.raises(error, match=f"{what} must be a"):
            graph.create_node("call_function", torch.sum, args, kwargs)
    assert issubclass(MisuseError, AssertionError)


@pytest.mark.task("2.2")
def test_create_node_takes_empty_args_and_kwargs_of_any_type_as_none():
    def build(lib):
        graph = lib.Graph()
        x = graph.placeholder("x")
        graph.create_node("call_function", torch.relu, (x,), [])
        graph.create_node("call_method", "relu", (x,), ())
        graph.create_node("call_function", torch.rand, [], None)
        return graph, [(repr(n.args), dict(n.kwargs)) for n in graph.nodes]

    differential(build)


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


def test_len_iteration_and_reversed():
    graph, *_ = chain(MINI)
    assert len(graph.nodes) == 4
    assert names(reversed(graph.nodes)) == ["output", "relu", "add", "x"]
    assert names(graph.nodes) == ["x", "add", "relu", "output"]  # reversing made no copy


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
