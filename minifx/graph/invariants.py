"""The checks behind `Graph.lint()`: one check per numbered invariant.

The invariants are listed once, in the `Graph` docstring. A broken one raises
a `RuntimeError` that names the rule, the node and the fix; the wording is in
`invariant_errors.py`. `check_all` walks the list once and checks every
invariant at each node: a large graph does not fit in the processor's caches,
and a walk per invariant would pay again for fetching every node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import torch

from . import invariant_errors
from .invariant_errors import AGGREGATES as _AGGREGATES
from .invariant_errors import collect_nodes
from .module_paths import get_path, has_path
from .node import Node, target_problem

if TYPE_CHECKING:
    from .graph import Graph


def check_all(graph: Graph) -> None:
    """Walk the list once; at each node, check the invariants in the order of their numbers.

    Lint runs after every pass, so the checks are written out in the loop, not called
    per node; once one fails, `invariant_errors` finds out which case it was.
    """
    names: set[str] = set()
    defined: set[Node] = set()
    owner = graph.owning_module
    outputs = uses = users = 0
    for node in walk_list(graph):  # 2: checked as the walk steps
        problem = target_problem(node._op, node._target)  # 1
        if problem is not None:
            raise invariant_errors.opcode_error(node, problem)
        name = node.name
        if name in names:  # 3
            raise invariant_errors.name_error(node)
        names.add(name)
        inputs = node._input_nodes
        for input_node in inputs:  # 4, and 5: the node is among the users of each input
            if input_node not in defined or node not in input_node.users:
                raise invariant_errors.input_error(graph, node, defined)
        defined.add(node)
        used = {}  # 5: the nodes the arguments hold; the first level by hand (most are flat)
        for value in node._args:
            if isinstance(value, Node):
                used[value] = None
            elif isinstance(value, _AGGREGATES):
                collect_nodes([value], used)
        if node._kwargs:
            collect_nodes(node._kwargs.values(), used)
        if used != inputs:
            raise invariant_errors.use_def_error(graph, node)
        uses += len(inputs)
        users += len(node.users)
        if node._op == "output" and (outputs := outputs + 1) > 1:  # 6
            raise invariant_errors.output_error(node)
        if owner is not None:  # 7
            check_target_exists(graph, node)
    # 5, completed: each node is among the users of each of its inputs, so the users
    # lists hold at least one entry per use; holding exactly as many, they hold no more.
    if uses != users and (error := invariant_errors.use_def_error(graph, graph._root._prev)):
        raise error


def walk_list(graph: Graph) -> Iterator[Node]:
    """2. Yield the nodes in order, checking at each step the link back to the node before,
    and that the node was made by this graph (`created`) and not erased.

    With every link back right, the walk cannot meet a node twice, so it ends.
    """
    created = graph._node_index.all_nodes()
    root = previous = graph._root
    node = root._next
    while node is not root:
        linked = node._prev is previous and node.graph is graph and not node._erased
        if not linked or node not in created:
            raise invariant_errors.link_error(graph, node, previous, created)
        yield node
        previous, node = node, node._next
    if root._prev is not previous:  # the last link back, from the sentinel
        raise invariant_errors.broken_link(previous)


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
