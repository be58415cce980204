"""`minifx.graph.immutable_collections`: the read-only list and dict a node stores in its
`args` and `kwargs`, against torch.fx's.

They refuse changes in place (so that the use-def lists cannot go stale), compare
and hash like plain containers, and are pytree nodes: PyTorch's test_fx checks that
`torch.utils._pytree` flattens and rebuilds them (test_immutable_list_pytree_ops,
test_immutable_dict_pytree_ops), which passes use to reach every node in `node.args`
with `tree_leaves` or `tree_map`.
"""

from __future__ import annotations

import copy
import pickle

import pytest
import torch
from torch.fx import immutable_collections as torch_collections
from torch.utils import _pytree as pytree

from minifx.graph.immutable_collections import immutable_dict, immutable_list
from tests.graph.support import MINI, TORCH, differential, names

pytestmark = pytest.mark.ch2


# -- read-only, hashable ---------------------------------------------------------------------


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


# Subclasses of both libraries' containers, at module level so that pickle finds them.
class MiniItems(immutable_list):
    pass


class MiniMapping(immutable_dict):
    pass


class TorchItems(torch_collections.immutable_list):
    pass


class TorchMapping(torch_collections.immutable_dict):
    pass


@pytest.mark.parametrize(
    "copier", [copy.copy, copy.deepcopy, lambda value: pickle.loads(pickle.dumps(value))]
)
def test_a_copy_of_a_subclass_keeps_the_subclass_as_in_torch_fx(copier):
    for items_type, mapping_type in [(MiniItems, MiniMapping), (TorchItems, TorchMapping)]:
        items, mapping = copier(items_type([1, [2]])), copier(mapping_type(a=1))
        assert type(items) is items_type and items == [1, [2]]
        assert type(mapping) is mapping_type and mapping == {"a": 1}
