"""Property tests (hypothesis) of graph editing and of `Graph.lint`.

1. Random sequences of legal edits (create at a random valid insertion point,
   erase an unused node, replace_all_uses_with, move, node_copy, change an
   argument) keep `lint()` passing and the use-def lists equal to what the
   arguments say. The same sequence runs on a torch.fx.Graph alongside, and
   the two must print the same and list the same users after every step.
2. Starting from a valid random graph, each kind of corruption makes `lint()`
   raise a RuntimeError that names the invariant it breaks.
"""

from __future__ import annotations

import operator
import warnings
from typing import Any

import pytest
import torch
import torch.fx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minifx.graph

pytestmark = pytest.mark.ch2

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# call_function targets, each with a way to lay out its inputs in args/kwargs
# (flat, in a list, in kwargs, nested in a tuple and a slice), so the
# use-def lists are exercised on every container a node may store.
LAYOUTS = [
    (operator.add, lambda a, b: ((a, b), {})),
    (torch.cat, lambda a, b: (([a, b],), {"dim": 0})),
    (torch.relu, lambda a, b: ((a,), {"extra": b})),
    (operator.getitem, lambda a, b: (((a, 1), slice(b, None)), {})),
    (torch.stack, lambda a, b: (({"k": [a, (b, 2)]},), {})),
]


def nodes_in(node) -> dict:
    """The nodes in a node's arguments, read from the arguments themselves."""
    found: dict = {}
    minifx.graph.map_arg((node.args, node.kwargs), found.setdefault)
    return found


def assert_use_def_consistent(graph) -> None:
    nodes = list(graph.nodes)
    for node in nodes:
        used = nodes_in(node)
        assert node.all_input_nodes == list(used)  # same nodes, in order of first use
        for input_node in used:
            assert node in input_node.users
        for user in node.users:
            assert user in nodes and node in nodes_in(user)


class Twin:
    """A minifx graph and a torch.fx graph edited by the same calls.

    `twin` maps each minifx node to the torch.fx node made by the same call.
    Choices are made on minifx's graph, then applied to both.
    """

    def __init__(self, placeholders: int) -> None:
        self.ours, self.theirs = minifx.graph.Graph(), torch.fx.Graph()
        self.twin: dict[Any, Any] = {}
        for i in range(placeholders):
            self._pair(self.ours.placeholder(f"p{i}"), self.theirs.placeholder(f"p{i}"))
        self.log: list[str] = []  # what was done, for hypothesis's failure report

    def _pair(self, ours, theirs) -> None:
        self.twin[ours] = theirs

    def order(self) -> list:
        return list(self.ours.nodes)

    def both(self, method: str, *args: Any, **kwargs: Any) -> tuple:
        """Call `method` on minifx's node/graph args and on their torch.fx twins."""
        ours = _call(method, args, kwargs)
        theirs = _call(method, *self._translate(args, kwargs))
        return ours, theirs

    def _translate(self, args: tuple, kwargs: dict) -> tuple:
        def mapping(value):
            return self.twin[value] if isinstance(value, minifx.graph.Node) else value

        convert = lambda a: torch.fx.node.map_aggregate(a, mapping)  # noqa: E731
        translated = tuple(self.theirs if a is self.ours else convert(a) for a in args)
        return translated, {k: convert(v) for k, v in kwargs.items()}

    def check(self) -> None:
        self.ours.lint()
        self.theirs.lint()
        assert_use_def_consistent(self.ours)
        assert str(self.ours) == str(self.theirs), "\n".join(self.log)
        for ours, theirs in zip(self.ours.nodes, self.theirs.nodes):
            assert [n.name for n in ours.users] == [n.name for n in theirs.users]
            assert [n.name for n in ours.all_input_nodes] == [
                n.name for n in theirs.all_input_nodes
            ]
        assert len(self.ours.nodes) == len(self.theirs.nodes)


def _call(method: str, args: tuple, kwargs: dict) -> Any:
    owner, *rest = args
    return getattr(owner, method)(*rest, **kwargs)


# -- the edits; each draws its choices and returns without acting if none is legal --


def insertion_point(data, order: list):
    """A random insertion point and the nodes that may be used there.

    Returns (method, anchor, usable): `anchor is None` with inserting_after
    means the end of the graph.
    """
    choice = data.draw(st.integers(0, 2 * len(order)))
    if choice == 2 * len(order):
        return "inserting_after", None, order
    anchor = order[choice // 2]
    position = order.index(anchor)
    if choice % 2 == 0:
        return "inserting_before", anchor, order[:position]
    return "inserting_after", anchor, order[: position + 1]


def new_arguments(data, usable: list):
    target, layout = data.draw(st.sampled_from(LAYOUTS))
    pick = lambda: data.draw(st.sampled_from(usable)) if usable else 1  # noqa: E731
    args, kwargs = layout(pick(), pick())
    return target, args, kwargs


def edit_create(data, twin: Twin) -> None:
    method, anchor, usable = insertion_point(data, twin.order())
    how_many = data.draw(st.integers(1, 2))  # two under one inserting_after come out reversed
    made = []
    with getattr(twin.ours, method)(anchor), getattr(twin.theirs, method)(twin.twin.get(anchor)):
        for _ in range(how_many):
            target, args, kwargs = new_arguments(data, usable)
            ours, theirs = twin.both("call_function", twin.ours, target, args, kwargs)
            twin._pair(ours, theirs)
            made.append(ours.name)
    twin.log.append(f"{method}({anchor}): create {made}")


def edit_erase(data, twin: Twin) -> None:
    unused = [n for n in twin.order() if not n.users]
    if unused:
        node = data.draw(st.sampled_from(unused))
        twin.both("erase_node", twin.ours, node)
        twin.log.append(f"erase {node}")


def edit_replace_all_uses(data, twin: Twin) -> None:
    order = twin.order()
    if len(order) < 2:
        return
    old = data.draw(st.sampled_from(order))
    new = data.draw(st.sampled_from([n for n in order if n is not old]))
    position = {n.name: i for i, n in enumerate(order)}
    # Only users after `new` may use it; the callback picks them, by name so
    # that it works the same on both graphs.
    after_new = lambda user: position[user.name] > position[new.name]  # noqa: E731
    ours, theirs = twin.both("replace_all_uses_with", old, new, after_new)
    assert [n.name for n in ours] == [n.name for n in theirs]
    twin.log.append(f"{old}.replace_all_uses_with({new}) -> {ours}")


def edit_move(data, twin: Twin) -> None:
    order = twin.order()
    if len(order) < 2:
        return
    node = data.draw(st.sampled_from(order))
    anchor = data.draw(st.sampled_from([n for n in order if n is not node]))
    method = data.draw(st.sampled_from(["prepend", "append"]))
    moved = [n for n in order if n is not node]
    moved.insert(moved.index(anchor) + (method == "append"), node)
    spot = moved.index(node)
    legal = all(moved.index(i) < spot for i in node.all_input_nodes) and all(
        moved.index(u) > spot for u in node.users
    )
    if legal:
        twin.both(method, anchor, node)
        assert list(twin.ours.nodes) == moved
        twin.log.append(f"{anchor}.{method}({node})")


def edit_copy(data, twin: Twin) -> None:
    order = [n for n in twin.order() if n.op != "output"]
    if not order:
        return
    node = data.draw(st.sampled_from(order))
    method, anchor, usable = insertion_point(data, twin.order())
    if not set(node.all_input_nodes) <= set(usable):
        method, anchor = "inserting_after", node  # right after the original is always legal
    with getattr(twin.ours, method)(anchor), getattr(twin.theirs, method)(twin.twin.get(anchor)):
        ours, theirs = twin.both("node_copy", twin.ours, node)
    twin._pair(ours, theirs)
    twin.log.append(f"{method}({anchor}): node_copy({node}) -> {ours}")


def edit_argument(data, twin: Twin) -> None:
    order = twin.order()
    candidates = [n for n in order if n.op == "call_function" and n.args]
    if not candidates:
        return
    node = data.draw(st.sampled_from(candidates))
    earlier = order[: order.index(node)]
    value = data.draw(st.sampled_from(earlier)) if earlier else 0
    how = data.draw(st.sampled_from(["update_arg", "update_kwarg", "replace_input_with"]))
    if how == "update_arg":
        twin.both("update_arg", node, 0, value)
    elif how == "update_kwarg":
        twin.both("update_kwarg", node, "k", value)
    elif node.all_input_nodes and earlier:
        twin.both(
            "replace_input_with",
            node,
            data.draw(st.sampled_from(node.all_input_nodes)),
            data.draw(st.sampled_from(earlier)),
        )
    twin.log.append(f"{how} on {node}")


EDITS = [
    edit_create,
    edit_create,
    edit_erase,
    edit_replace_all_uses,
    edit_move,
    edit_copy,
    edit_argument,
]


@SETTINGS
@given(data=st.data())
def test_random_edits_keep_the_graph_valid_and_equal_to_torch_fx(data):
    twin = Twin(placeholders=data.draw(st.integers(1, 3), label="placeholders"))
    twin.check()
    for _ in range(data.draw(st.integers(1, 25), label="steps")):
        data.draw(st.sampled_from(EDITS), label="edit")(data, twin)
        twin.check()
    # Returning a value at the end must not change the verdict either.
    order = twin.order()
    value = data.draw(st.sampled_from(order)) if order else None
    twin.both("output", twin.ours, value)
    twin.check()


# -- corruptions: each breaks one invariant, and lint must name it --------------------


@st.composite
def valid_graphs(draw):
    """A random valid graph: 1-3 placeholders, 2-8 calls that each use an earlier
    node, and an output; at least one call uses a value."""
    graph = minifx.graph.Graph()
    nodes = [graph.placeholder(f"p{i}") for i in range(draw(st.integers(1, 3)))]
    for _ in range(draw(st.integers(2, 8))):
        target, layout = draw(st.sampled_from(LAYOUTS))
        args, kwargs = layout(draw(st.sampled_from(nodes)), draw(st.sampled_from(nodes + [1])))
        nodes.append(graph.call_function(target, args, kwargs))
    graph.output(nodes[-1])
    graph.lint()
    return graph


def calls(graph) -> list:
    return [n for n in graph.nodes if n.op == "call_function"]


def unknown_op(draw, graph):
    node = draw(st.sampled_from(list(graph.nodes)))
    node.op = draw(st.sampled_from(["call", "root", "Placeholder", "call_functions"]))


def wrong_target_type(draw, graph):
    node = draw(st.sampled_from(list(graph.nodes)))
    if node.op == "call_function":
        node.target = draw(st.sampled_from(["relu", 3, None]))
    else:
        node.target = draw(st.sampled_from([torch.relu, 3, None]))


def broken_next(draw, graph):
    nodes = list(graph.nodes)
    node = draw(st.sampled_from(nodes[:-1]))
    node._next = node._next._next  # skip one node forwards only


def broken_prev(draw, graph):
    nodes = list(graph.nodes)
    node = draw(st.sampled_from(nodes))
    node._prev = draw(st.sampled_from([n for n in nodes if n is not node._prev]))


def node_of_another_graph(draw, graph):
    draw(st.sampled_from(list(graph.nodes))).graph = minifx.graph.Graph()


def erased_but_linked(draw, graph):
    draw(st.sampled_from(list(graph.nodes)))._erased = True


def duplicate_name(draw, graph):
    nodes = list(graph.nodes)
    first = draw(st.sampled_from(nodes))
    second = draw(st.sampled_from([n for n in nodes if n is not first]))
    second.name = first.name


def use_before_definition(draw, graph):
    user = draw(st.sampled_from(calls(graph)))
    draw(st.sampled_from(user.all_input_nodes)).prepend(user)


def input_from_another_graph(draw, graph):
    user = draw(st.sampled_from(calls(graph)))
    stranger = minifx.graph.Graph().placeholder("stranger")
    user.update_arg(0, stranger)


def missing_user(draw, graph):
    user = draw(st.sampled_from(calls(graph)))
    draw(st.sampled_from(user.all_input_nodes)).users.pop(user)


def stale_inputs(draw, graph):
    draw(st.sampled_from(calls(graph)))._input_nodes.clear()


def false_user(draw, graph):
    nodes = list(graph.nodes)
    node = draw(st.sampled_from(nodes))
    node.users[draw(st.sampled_from([n for n in nodes if n not in node.users]))] = None


def two_outputs(draw, graph):
    graph.output(draw(st.sampled_from(list(graph.nodes))))


def missing_target(draw, graph):
    nodes = list(graph.nodes)
    with graph.inserting_after(draw(st.sampled_from(nodes[:-1]))):
        if draw(st.booleans()):
            graph.get_attr("missing.weight")
        else:
            graph.call_module("missing", (nodes[0],))
    graph.owning_module = torch.nn.Module()  # set afterwards: creating would warn


def not_a_module(draw, graph):
    root = torch.nn.Module()
    root.weight = torch.nn.Parameter(torch.ones(1))
    nodes = list(graph.nodes)
    with graph.inserting_after(draw(st.sampled_from(nodes[:-1]))):
        graph.call_module("weight", (nodes[0],))
    graph.owning_module = root


CORRUPTIONS = [
    (unknown_op, 1),
    (wrong_target_type, 1),
    (broken_next, 2),
    (broken_prev, 2),
    (node_of_another_graph, 2),
    (erased_but_linked, 2),
    (duplicate_name, 3),
    (use_before_definition, 4),
    (input_from_another_graph, 4),
    (missing_user, 5),
    (stale_inputs, 5),
    (false_user, 5),
    (two_outputs, 6),
    (missing_target, 7),
    (not_a_module, 7),
]


@pytest.mark.parametrize(
    "corrupt, invariant", CORRUPTIONS, ids=[corrupt.__name__ for corrupt, _ in CORRUPTIONS]
)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_each_corruption_is_caught_and_named(corrupt, invariant, data):
    graph = data.draw(valid_graphs(), label="graph")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a corruption must not need a warning to be caught
        corrupt(data.draw, graph)
    with pytest.raises(RuntimeError, match=rf"^Graph\.lint: invariant {invariant} \("):
        graph.lint()
