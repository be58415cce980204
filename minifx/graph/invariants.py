"""The checks behind `Graph.lint()`: one function per numbered invariant.

The invariants are listed once, in the `Graph` docstring. Each check raises
`RuntimeError` with a message of the form

    Graph.lint: invariant 4 (inputs come first) is broken at %sin: ...
    How to fix: ...

so that a broken graph says which rule, which node, and what to do.
"""

from __future__ import annotations

from typing import Any

import torch

from ..proxy.ir import OPCODES
from .node import Node, get_path


def check_all(graph: Any) -> None:
    """Run every check, in the order of the invariants' numbers."""
    nodes = check_links(graph)  # invariant 2 first: the others walk the list
    check_opcodes(graph, nodes)
    check_unique_names(graph, nodes)
    # Walk each node's arguments once; checks 4 and 5 both need what they use.
    uses = {node: nodes_in_arguments(node) for node in nodes}
    check_inputs_come_first(graph, nodes, uses)
    check_use_def(graph, nodes, uses)
    check_one_output(graph, nodes)
    if graph.owning_module is not None:
        check_targets_exist(graph, nodes)


def _broken(number: int, rule: str, node: Node | None, problem: str, fix: str) -> RuntimeError:
    where = f" at %{node.name}" if node is not None else ""
    return RuntimeError(f"Graph.lint: invariant {number} ({rule}) is broken{where}: {problem}\n"
                        f"How to fix: {fix}")


def check_opcodes(graph: Any, nodes: list[Node]) -> None:
    """1. Each op is an opcode; call_function targets are callable, the others str."""
    for node in nodes:
        if node.op not in OPCODES:
            raise _broken(1, "known opcodes", node, f"its op is {node.op!r}, not one of "
                          f"{', '.join(OPCODES)}.", "set node.op to one of the six opcodes.")
        wants_callable = node.op == "call_function"
        if wants_callable != callable(node.target) or (not wants_callable and not isinstance(node.target, str)):
            kind = "a callable" if wants_callable else "a str"
            raise _broken(1, "known opcodes", node, f"a {node.op} target must be {kind}, got "
                          f"{node.target!r}.", "store the function itself for call_function, "
                          "and a method name or attribute path for the other opcodes.")


def check_links(graph: Any) -> list[Node]:
    """2. Every `n.next.prev is n`; nodes belong to this graph and are not erased.

    Returns:
        The nodes, in order, for the other checks.
    """
    nodes, root, node = [], graph._root, graph._root._next
    fix = ("edit the list only with graph methods (create_node, erase_node, "
           "node.prepend/append), never by setting _prev/_next or node.graph.")
    while node is not root:
        if node._next._prev is not node or node._prev._next is not node:
            raise _broken(2, "a well-linked list", node, "node.next.prev or node.prev.next is "
                          "not the node itself, so walking forwards and backwards disagree.", fix)
        if node.graph is not graph:
            raise _broken(2, "a well-linked list", node, "it belongs to another graph.",
                          "copy nodes between graphs with graph.node_copy(node, arg_transform).")
        if node._erased:
            raise _broken(2, "a well-linked list", node, "it was erased but is still linked.", fix)
        if node not in graph._nodes_by_op.get(node.op, {}):
            raise _broken(2, "a well-linked list", node, "the graph did not create it (it is "
                          "missing from the graph's index), so its name may clash and "
                          "find_nodes cannot see it.", "create nodes with graph.create_node "
                          "(or the opcode builders, or graph.node_copy), never with Node(...).")
        nodes.append(node)
        if len(nodes) > graph._len:
            raise _broken(2, "a well-linked list", node, f"the list has more nodes than the "
                          f"{graph._len} the graph created (a cycle?).", fix)
        node = node._next
    return nodes


def check_unique_names(graph: Any, nodes: list[Node]) -> None:
    """3. No two nodes share a name."""
    seen: set[str] = set()
    for node in nodes:
        if node.name in seen:
            raise _broken(3, "unique names", node, f"an earlier node is also named {node.name!r}, "
                          "so generated code would overwrite one value with the other.",
                          "let the graph choose names (create_node(name=...) makes them unique) "
                          "instead of assigning node.name.")
        seen.add(node.name)


def check_inputs_come_first(graph: Any, nodes: list[Node], uses: dict[Node, dict]) -> None:
    """4. Every input of a node is a node of this graph that comes before it."""
    defined: set[Node] = set()
    for node in nodes:
        for used in uses[node]:
            if used is node:
                raise _broken(4, "inputs come first", node, "it uses itself, so its value "
                              "would be needed before it is computed.", f"give %{node.name} "
                              "the node it should read instead (node.replace_input_with).")
            if used.graph is not graph:
                raise _broken(4, "inputs come first", node, f"it uses %{used.name}, which does "
                              "not belong to this Graph (it is a node of another graph).", "when "
                              "copying nodes from another graph, map their inputs: "
                              "graph.node_copy(node, lambda n: val_map[n]).")
            if used not in defined:
                raise _broken(4, "inputs come first", node, f"it uses %{used.name}, which was "
                              "used before it has been defined: it comes later in the graph (or "
                              f"was erased).", f"move %{used.name} before %{node.name} "
                              f"(node.prepend) or insert %{node.name} after it.")
        defined.add(node)


def check_use_def(graph: Any, nodes: list[Node], uses: dict[Node, dict]) -> None:
    """5. `all_input_nodes` and `users` agree with every node's arguments."""
    fix = "change arguments only by assigning node.args / node.kwargs (or update_arg, " \
          "replace_input_with), which keeps users and inputs in step; never edit node.users."
    for node in nodes:
        used = uses[node]
        if used.keys() != node._input_nodes.keys():
            raise _broken(5, "use-def lists agree", node, f"its arguments use "
                          f"{_names(used)} but all_input_nodes is {_names(node.all_input_nodes)}.", fix)
        for input_node in used:
            if node not in input_node.users:
                raise _broken(5, "use-def lists agree", node, f"it uses %{input_node.name}, "
                              f"but is missing from %{input_node.name}.users.", fix)
        for user in node.users:
            user_uses = uses[user] if user in uses else nodes_in_arguments(user)
            if node not in user_uses:
                raise _broken(5, "use-def lists agree", node, f"%{user.name} is listed among its "
                              "users but does not use it.", fix)


def check_one_output(graph: Any, nodes: list[Node]) -> None:
    """6. At most one `output` node."""
    outputs = [node for node in nodes if node.op == "output"]
    if len(outputs) > 1:
        raise _broken(6, "one output", outputs[1], f"the graph has {len(outputs)} output "
                      "nodes; a program returns once.", "erase the extra output nodes, or "
                      "return a tuple from a single graph.output((a, b)).")


def check_targets_exist(graph: Any, nodes: list[Node]) -> None:
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


def has_path(root: Any, path: str) -> bool:
    """Whether the dotted attribute `path` (`"layer1.0.conv1"`) exists on `root`."""
    missing = object()
    return get_path(root, path, missing) is not missing


def nodes_in_arguments(node: Node) -> dict[Node, None]:
    """The nodes in `node.args` and `node.kwargs`, read from the arguments themselves
    (not from the use-def lists that lint is checking), in order of first use."""
    found: dict[Node, None] = {}
    pending = [node.kwargs, node.args]
    while pending:
        value = pending.pop()
        if isinstance(value, Node):
            found[value] = None
        elif isinstance(value, (tuple, list)):
            pending.extend(reversed(value))
        elif isinstance(value, dict):
            pending.extend(reversed(list(value.values())))
        elif isinstance(value, slice):
            pending.extend((value.step, value.stop, value.start))
    return found


def _names(nodes: list[Node]) -> str:
    return "[" + ", ".join(f"%{n.name}" for n in nodes) + "]"
