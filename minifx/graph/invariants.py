"""The checks behind `Graph.lint()`: one check per numbered invariant.

The invariants are listed once, in the `Graph` docstring. A broken one raises
a `RuntimeError` that names the rule, the node and the fix; the wording is in
`invariant_errors.py`. `check_all` walks the list once and checks every
invariant at each node: a large graph does not fit in the processor's caches,
and a walk per invariant would pay again for fetching every node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

import torch

from ..proxy.ir import OPCODES
from . import invariant_errors
from .module_paths import get_path, has_path
from .node import Node

if TYPE_CHECKING:
    from .graph import Graph

# Types that may hold nodes inside a node's arguments (`map_aggregate` walks the same).
_AGGREGATES = (tuple, list, dict, slice)


def check_all(graph: Graph) -> None:
    """Walk the list once; at each node, check the invariants in the order of their numbers."""
    names: set[str] = set()
    defined: set[Node] = set()
    nodes: list[Node] = []
    outputs = uses = users = 0
    for node in walk_list(graph):  # 2: checked as the walk steps
        problem = target_problem(node._op, node._target)  # 1
        if problem is not None:
            raise invariant_errors.opcode_error(node, problem)
        if node.name in names:  # 3
            raise invariant_errors.name_error(node)
        names.add(node.name)
        if not defined.issuperset(node._input_nodes):  # 4
            raise invariant_errors.input_order_error(graph, node, defined)
        defined.add(node)
        nodes.append(node)
        if nodes_in_arguments(node) != node._input_nodes or not _listed_as_user(node):  # 5
            raise _use_def_error(nodes)
        uses, users = uses + len(node._input_nodes), users + len(node.users)
        if node._op == "output":  # 6
            outputs += 1
            if outputs > 1:
                raise invariant_errors.output_error(node)
        if graph.owning_module is not None:  # 7
            check_target_exists(graph, node)
    # 5, completed: each node is among the users of each of its inputs, so the users
    # lists hold at least one entry per use; holding exactly as many, they hold no more.
    if uses != users and (error := _use_def_error(nodes)) is not None:
        raise error


# --8<-- [start:op_target]
def target_problem(op: str, target: Any) -> str | None:
    """The rule of invariant 1, decided here only: `None` if `op` and `target` are fine;
    else `"an opcode"`, or what the target must be: `"a callable"` or `"a str"`."""
    if op == "call_function":
        return None if callable(target) else "a callable"
    if op not in OPCODES:
        return "an opcode"
    return None if isinstance(target, str) else "a str"


# --8<-- [end:op_target]


def check_new_node(name: str, op: str, target: Any) -> None:
    """Invariant 1 for a node `Graph.create_node` is about to make (else `ValueError`)."""
    problem = target_problem(op, target)
    if problem is not None:
        raise invariant_errors.new_node_error(name, op, target, problem)


def walk_list(graph: Graph) -> Iterator[Node]:
    """2. Yield the nodes in order, checking that each is well linked, and made by this graph."""
    created = graph._node_index.all_nodes()
    root = graph._root
    node, count = root._next, 0
    while node is not root:
        if node._next._prev is not node or node._prev._next is not node:
            raise invariant_errors.broken_link(node)
        if node.graph is not graph:
            raise invariant_errors.foreign_node(node)
        if node._erased:
            raise invariant_errors.erased_but_linked(node)
        if node not in created:
            raise invariant_errors.not_created(node)
        count += 1
        if count > graph._len:
            raise invariant_errors.too_many_nodes(node, graph._len)
        yield node
        node = node._next


def _listed_as_user(node: Node) -> bool:
    """5. The node is among the `users` of each of its inputs."""
    for input_node in node._input_nodes:
        if node not in input_node.users:
            return False
    return True


def _use_def_error(nodes: list[Node]) -> RuntimeError | None:
    """5. The error for the first of `nodes` whose use-def lists disagree with its
    arguments (`None` if only nodes of other graphs use these nodes)."""
    for node in nodes:
        used = nodes_in_arguments(node)
        if used.keys() != node._input_nodes.keys():
            return invariant_errors.inputs_disagree(node, used)
        for input_node in used:
            if node not in input_node.users:
                return invariant_errors.missing_user(node, input_node)
        for user in node.users:
            if node not in nodes_in_arguments(user):
                return invariant_errors.false_user(node, user)
    return None


def check_target_exists(graph: Graph, node: Node) -> None:
    """7. A get_attr / call_module target exists on the owning module."""
    if node._op not in ("get_attr", "call_module"):
        return
    if not has_path(graph.owning_module, node.target):
        raise invariant_errors.missing_target(node)
    if node._op == "call_module" and not isinstance(
        get_path(graph.owning_module, node.target), torch.nn.Module
    ):
        raise invariant_errors.not_a_module(node)


def nodes_in_arguments(node: Node) -> dict[Node, None]:
    """The nodes in `node.args` and `node.kwargs`, read from the arguments themselves
    (not from the use-def lists that lint is checking), in order of first use."""
    found: dict[Node, None] = {}
    for value in node._args:  # the first level by hand: most arguments are flat
        if isinstance(value, Node):
            found[value] = None
        elif isinstance(value, _AGGREGATES):
            _collect_nodes([value], found)
    if node._kwargs:
        _collect_nodes(node._kwargs.values(), found)
    return found


def _collect_nodes(values: Any, found: dict[Node, None]) -> None:
    for value in values:
        if isinstance(value, Node):
            found[value] = None
        elif isinstance(value, _AGGREGATES):
            if isinstance(value, dict):
                value = value.values()
            elif isinstance(value, slice):
                value = (value.start, value.stop, value.step)
            _collect_nodes(value, found)
