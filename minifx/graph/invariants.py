"""The checks behind `Graph.lint()`: one function per numbered invariant.

The invariants are listed once, in the `Graph` docstring. Each check raises
`RuntimeError` with a message of the form

    Graph.lint: invariant 4 (inputs come first) is broken at %sin: ...
    How to fix: ...

so that a broken graph says which rule, which node, and what to do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from ..proxy.tape import OPCODES
from .errors import MisuseError
from .module_paths import get_path, has_path
from .node import Node

if TYPE_CHECKING:
    from .graph import Graph

# Types that may hold nodes inside a node's arguments (`map_aggregate` walks the same).
_AGGREGATES = (tuple, list, dict, slice)


def check_all(graph: Graph) -> None:
    """Run every check, in the order of the invariants' numbers."""
    nodes = check_links(graph)  # invariant 2 first: the others walk the list
    check_opcodes(graph, nodes)
    check_unique_names(graph, nodes)
    check_inputs_come_first(graph, nodes)
    check_use_def(graph, nodes)
    check_one_output(graph, nodes)
    if graph.owning_module is not None:
        check_targets_exist(graph, nodes)


def _broken(number: int, rule: str, node: Node | None, problem: str, fix: str) -> RuntimeError:
    where = f" at %{node.name}" if node is not None else ""
    return RuntimeError(f"Graph.lint: invariant {number} ({rule}) is broken{where}: {problem}\n"
                        f"How to fix: {fix}")


# --8<-- [start:op_target]
def target_problem(op: str, target: Any) -> str | None:
    """The rule of invariant 1 for one node: what its `op` and `target` must be.

    The one place the rule is decided; `lint`, `Graph.create_node`, codegen
    and `GraphModule` each word the answer as torch.fx does at that point.

    Returns:
        `None` if the pair is fine; `"an opcode"` if `op` is none of the six;
        otherwise what the target must be: `"a callable"` for `call_function`,
        `"a str"` for the other opcodes.
    """
    if op == "call_function":
        return None if callable(target) else "a callable"
    if op not in OPCODES:
        return "an opcode"
    return None if isinstance(target, str) else "a str"
# --8<-- [end:op_target]


def check_new_node(name: str, op: str, target: Any) -> None:
    """Invariant 1 for a node `Graph.create_node` is about to make.

    Raises:
        ValueError: the rule is broken (an unknown opcode is also the
            `AssertionError` torch.fx raises).
    """
    problem = target_problem(op, target)
    if problem == "an opcode":
        raise MisuseError(f"cannot create node %{name}: unknown opcode {op!r}. A node's op is "
                          f"one of {', '.join(OPCODES)}.")
    if problem == "a callable":
        raise ValueError(
            f"cannot create node %{name}: a call_function target must be callable, got "
            f"{target!r} of type {type(target).__name__}. Pass the function itself "
            "(torch.relu), not its name; names are for call_method and call_module.")
    if problem == "a str":
        raise ValueError(
            f"cannot create node %{name}: a {op} target must be a str, got {target!r} of type "
            f"{type(target).__name__}. For a function, use op='call_function'.")


def check_opcodes(graph: Graph, nodes: list[Node]) -> None:
    """1. Each op is an opcode; call_function targets are callable, the others str."""
    for node in nodes:
        problem = target_problem(node._op, node._target)
        if problem == "an opcode":
            raise _broken(1, "known opcodes", node, f"its op is {node.op!r}, not one of "
                          f"{', '.join(OPCODES)}.", "set node.op to one of the six opcodes.")
        if problem is not None:
            raise _broken(1, "known opcodes", node, f"a {node.op} target must be {problem}, got "
                          f"{node.target!r}.", "store the function itself for call_function, "
                          "and a method name or attribute path for the other opcodes.")


def check_links(graph: Graph) -> list[Node]:
    """2. Every `n.next.prev is n`; nodes belong to this graph and are not erased.

    Returns:
        The nodes, in order, for the other checks.
    """
    nodes: list[Node] = []
    created = graph._node_index.all_nodes()
    root = graph._root
    node = root._next
    while node is not root:
        if node._next._prev is not node or node._prev._next is not node:
            raise _broken(2, "a well-linked list", node, "node.next.prev or node.prev.next is "
                          "not the node itself, so walking forwards and backwards disagree.",
                          _LINK_FIX)
        if node.graph is not graph:
            raise _broken(2, "a well-linked list", node, "it belongs to another graph.",
                          "copy nodes between graphs with graph.node_copy(node, arg_transform).")
        if node._erased:
            raise _broken(2, "a well-linked list", node, "it was erased but is still linked.",
                          _LINK_FIX)
        if node not in created:
            raise _broken(2, "a well-linked list", node, "the graph did not create it (it is "
                          "missing from the graph's index), so its name may clash and "
                          "find_nodes cannot see it.", "create nodes with graph.create_node "
                          "(or the opcode builders, or graph.node_copy), never with Node(...).")
        nodes.append(node)
        if len(nodes) > graph._len:
            raise _broken(2, "a well-linked list", node, f"the list has more nodes than the "
                          f"{graph._len} the graph created (a cycle?).", _LINK_FIX)
        node = node._next
    return nodes


_LINK_FIX = ("edit the list only with graph methods (create_node, erase_node, "
             "node.prepend/append), never by setting _prev/_next or node.graph.")


def check_unique_names(graph: Graph, nodes: list[Node]) -> None:
    """3. No two nodes share a name."""
    if len({node.name for node in nodes}) == len(nodes):
        return
    seen: set[str] = set()
    for node in nodes:
        if node.name in seen:
            raise _broken(3, "unique names", node, f"an earlier node is also named {node.name!r}, "
                          "so generated code would overwrite one value with the other.",
                          "let the graph choose names (create_node(name=...) makes them unique) "
                          "instead of assigning node.name.")
        seen.add(node.name)


def check_inputs_come_first(graph: Graph, nodes: list[Node]) -> None:
    """4. Every input of a node (`all_input_nodes`) is a node of this graph that comes before it.

    Invariant 5 then checks that those inputs are what the arguments use.
    """
    defined: set[Node] = set()
    for node in nodes:
        if not defined.issuperset(node._input_nodes):
            _blame_an_input(graph, node, node._input_nodes, defined)
        defined.add(node)


def _blame_an_input(graph: Graph, node: Node, used: dict[Node, None], defined: set[Node]) -> None:
    """Raise for the first input of `node` that is not among the nodes `defined` before it."""
    for input_node in used:
        if input_node is node:
            raise _broken(4, "inputs come first", node, "it uses itself, so its value "
                          "would be needed before it is computed.", f"give %{node.name} "
                          "the node it should read instead (node.replace_input_with).")
        if input_node.graph is not graph:
            raise _broken(4, "inputs come first", node, f"it uses %{input_node.name}, which does "
                          "not belong to this Graph (it is a node of another graph).", "when "
                          "copying nodes from another graph, map their inputs: "
                          "graph.node_copy(node, lambda n: val_map[n]).")
        if input_node not in defined:
            raise _broken(4, "inputs come first", node, f"it uses %{input_node.name}, which was "
                          "used before it has been defined: it comes later in the graph (or "
                          "was erased).", f"move %{input_node.name} before %{node.name} "
                          f"(node.prepend) or insert %{node.name} after it.")


def check_use_def(graph: Graph, nodes: list[Node]) -> None:
    """5. `all_input_nodes` and `users` agree with every node's arguments.

    When each node is among the `users` of each of its inputs, the users
    lists hold at least one entry per use; if they hold exactly as many, they
    hold nothing else, and no node needs its users checked one by one.
    """
    uses_count = 0
    for node, used in zip(nodes, map(nodes_in_arguments, nodes)):
        inputs = node._input_nodes
        if used != inputs:  # as sets: both map each node to None
            _blame_a_use_def_list(nodes)
        for input_node in inputs:
            if node not in input_node.users:
                _blame_a_use_def_list(nodes)
        uses_count += len(inputs)
    if uses_count != sum([len(node.users) for node in nodes]):
        _blame_a_use_def_list(nodes)


def _blame_a_use_def_list(nodes: list[Node]) -> None:
    """Check invariant 5 node by node, and raise for the first node that breaks it."""
    fix = "change arguments only by assigning node.args / node.kwargs (or update_arg, " \
          "replace_input_with), which keeps users and inputs in step; never edit node.users."
    for node in nodes:
        used = nodes_in_arguments(node)
        if used.keys() != node._input_nodes.keys():
            raise _broken(5, "use-def lists agree", node, f"its arguments use "
                          f"{_names(used)} but all_input_nodes is {_names(node.all_input_nodes)}.", fix)
        for input_node in used:
            if node not in input_node.users:
                raise _broken(5, "use-def lists agree", node, f"it uses %{input_node.name}, "
                              f"but is missing from %{input_node.name}.users.", fix)
        for user in node.users:
            if node not in nodes_in_arguments(user):
                raise _broken(5, "use-def lists agree", node, f"%{user.name} is listed among its "
                              "users but does not use it.", fix)


def check_one_output(graph: Graph, nodes: list[Node]) -> None:
    """6. At most one `output` node."""
    outputs = [node for node in nodes if node._op == "output"]
    if len(outputs) > 1:
        raise _broken(6, "one output", outputs[1], f"the graph has {len(outputs)} output "
                      "nodes; a program returns once.", "erase the extra output nodes, or "
                      "return a tuple from a single graph.output((a, b)).")


def check_targets_exist(graph: Graph, nodes: list[Node]) -> None:
    """7. get_attr / call_module targets exist on the owning module."""
    for node in nodes:
        if node.op not in ("get_attr", "call_module"):
            continue
        if not has_path(graph.owning_module, node.target):
            raise _broken(7, "targets exist", node, f"the owning module has no attribute "
                          f"{node.target!r}.", "add it to the module (setattr, add_submodule) "
                          "or fix the node's target.")
        if node.op == "call_module" and not isinstance(get_path(graph.owning_module, node.target),
                                                       torch.nn.Module):
            raise _broken(7, "targets exist", node, f"{node.target!r} is not an nn.Module, so "
                          "it cannot be called as a module.", "use get_attr to read it and "
                          "call_function to compute with it.")


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


def _names(nodes: list[Node]) -> str:
    return "[" + ", ".join(f"%{n.name}" for n in nodes) + "]"
