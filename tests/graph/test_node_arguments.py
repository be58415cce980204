"""`Node.insert_arg`, and the containers in `node.args` as pytree nodes, against torch.fx.

PyTorch's test_fx checks both: `insert_arg` keeps the use-def lists right
(test_insert_arg), and `torch.utils._pytree` flattens and rebuilds the
read-only list and dict a node stores (test_immutable_list_pytree_ops,
test_immutable_dict_pytree_ops), which passes use to reach every node in
`node.args` with `tree_leaves` or `tree_map`.
"""

from __future__ import annotations

import copy
import operator

import pytest
import torch
from torch.utils import _pytree as pytree

from minifx.graph.immutable_collections import immutable_dict, immutable_list
from tests.graph.support import MINI, TORCH, chain, differential, names

pytestmark = pytest.mark.ch2


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


# -- the stored containers as pytree nodes -------------------------------------------------


def stored(lib):
    """A node whose args and kwargs hold nested lists and dicts of nodes."""
    graph = lib.Graph()
    x, y = graph.placeholder("x"), graph.placeholder("y")
    node = graph.call_function(torch.cat, ([x, [y, 2]],), {"d": {"a": x, "b": [y]}})
    return graph, node


def test_tree_leaves_of_node_args_reaches_the_nodes():
    def build(lib):
        graph, node = stored(lib)
        return graph, (
            names(
                n for n in pytree.tree_leaves((node.args, node.kwargs)) if not isinstance(n, int)
            ),
            len(pytree.tree_leaves(node.args)),
        )

    _, (leaves, count) = differential(build)
    assert leaves == ["x", "y", "x", "y"] and count == 3


def test_tree_map_over_node_args_replaces_every_node():
    def build(lib):
        graph, node = stored(lib)
        mapped = pytree.tree_map(lambda a: a.name if hasattr(a, "name") else a, node.args)
        kw = pytree.tree_map(lambda a: a.name if hasattr(a, "name") else a, node.kwargs)
        return graph, (repr(mapped), repr(kw))

    _, (mapped, kw) = differential(build)
    assert mapped == "(['x', ['y', 2]],)" and kw == "{'d': {'a': 'x', 'b': ['y']}}"


@pytest.mark.parametrize(
    "value, container",
    [
        (immutable_list([3, immutable_list([torch.ones(1), 42])]), immutable_list),
        (immutable_dict({"a": 3, "b": immutable_list([torch.ones(1), 42])}), immutable_dict),
    ],
    ids=["list", "dict"],
)
def test_flatten_and_unflatten_keep_the_read_only_types(value, container):
    leaves, spec = pytree.tree_flatten(value)
    assert leaves[0] == 3 and leaves[2] == 42 and torch.equal(leaves[1], torch.ones(1))
    rebuilt = pytree.tree_unflatten(leaves, spec)
    assert rebuilt == value and type(rebuilt) is container
    assert type(rebuilt[1] if container is immutable_list else rebuilt["b"]) is immutable_list


def test_paths_to_the_leaves_are_list_indices_and_dict_keys_as_in_torch_fx():
    def build(lib):
        graph, node = stored(lib)
        paths = [pytree.keystr(path) for path, _ in pytree.tree_flatten_with_path(node.kwargs)[0]]
        return graph, paths

    _, paths = differential(build)
    assert paths == ["['d']['a']", "['d']['b'][0]"]


def test_deep_copies_of_the_stored_containers_are_equal():
    # test_fx's test_copy_it, on minifx's types
    mapping, items = immutable_dict([(3, 4), (5, 6)]), immutable_list([(3, 4), (5, 6)])
    assert copy.deepcopy(mapping) == mapping and type(copy.deepcopy(mapping)) is immutable_dict
    assert copy.deepcopy(items) == items and type(copy.deepcopy(items)) is immutable_list


# -- printing arguments: torch.fx's _format_arg and its _custom_fx_repr_fn hook -------------


class Shown:
    """A value that says how it prints in a graph, through torch.fx's hook."""

    def __init__(self, *parts: int) -> None:
        self.parts = parts

    def _custom_fx_repr_fn(self) -> str:
        return f"Shown({', '.join(map(str, self.parts))})"


def test_format_arg_prints_as_torch_fx_does():
    from torch.fx.node import _format_arg as torch_format_arg

    from minifx.graph.node_conveniences import _format_arg

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


def test_a_value_s_custom_fx_repr_fn_prints_it_in_the_graph():
    printed = {}
    for lib in (TORCH, MINI):
        graph, x, add, _ = chain(lib)
        add.update_arg(1, Shown(1, 2))
        printed[lib.name] = str(graph)
    assert printed["torch.fx"] == printed["minifx"]
    assert "Shown(1, 2)" in printed["minifx"]
