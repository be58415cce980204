"""The wording of a broken invariant: which rule, which node, and how to fix it.

`invariants.py` decides whether a rule holds; the functions here build the
exception it raises (and, for invariants 2 and 5, find which case broke), of the form

    Graph.lint: invariant 4 (inputs come first) is broken at %sin: ...
    How to fix: ...

`lint` raises these `RuntimeError`s. A node is refused before it exists when its
op and target break invariant 1: that error is `errors.new_node_error`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..proxy.ir import OPCODES
from .node import Node

if TYPE_CHECKING:
    from .graph import Graph

# Types that may hold nodes inside a node's arguments (`map_aggregate` walks the same).
AGGREGATES = (tuple, list, dict, slice)

_LINK_FIX = (
    "edit the list only with graph methods (create_node, erase_node, "
    "node.prepend/append), never by setting _prev/_next or node.graph."
)
_USE_DEF_FIX = (
    "change arguments only by assigning node.args / node.kwargs (or update_arg, "
    "replace_input_with), which keeps users and inputs in step; never edit node.users."
)


def broken(number: int, rule: str, node: Node | None, problem: str, fix: str) -> RuntimeError:
    """The error of `lint` for invariant `number`, broken at `node`."""
    where = f" at %{node.name}" if node is not None else ""
    return RuntimeError(
        f"Graph.lint: invariant {number} ({rule}) is broken{where}: {problem}\nHow to fix: {fix}"
    )


def opcode_error(node: Node, problem: str) -> RuntimeError:
    """1. The op is an opcode; a call_function target is callable, the others' a str."""
    if problem == "an opcode":
        return broken(
            1,
            "known opcodes",
            node,
            f"its op is {node.op!r}, not one of {', '.join(OPCODES)}.",
            "set node.op to one of the six opcodes.",
        )
    return broken(
        1,
        "known opcodes",
        node,
        f"a {node.op} target must be {problem}, got {node.target!r}.",
        "store the function itself for call_function, "
        "and a method name or attribute path for the other opcodes.",
    )


def _list_broken(node: Node, problem: str, fix: str = _LINK_FIX) -> RuntimeError:
    """Invariant 2's error; most fixes are the same."""
    return broken(2, "a well-linked list", node, problem, fix)


def _use_def_broken(node: Node, problem: str) -> RuntimeError:
    """Invariant 5's error, whose fix is always the same."""
    return broken(5, "use-def lists agree", node, problem, _USE_DEF_FIX)


def broken_link(node: Node) -> RuntimeError:
    """2. `node.next.prev` or `node.prev.next` is not the node itself."""
    return _list_broken(
        node,
        "node.next.prev or node.prev.next is not "
        "the node itself, so walking forwards and backwards disagree.",
    )


def foreign_node(node: Node) -> RuntimeError:
    """2. The list holds a node of another graph."""
    return _list_broken(
        node,
        "it belongs to another graph.",
        "copy nodes between graphs with graph.node_copy(node, arg_transform).",
    )


def erased_but_linked(node: Node) -> RuntimeError:
    """2. The list holds an erased node."""
    return _list_broken(node, "it was erased but is still linked.")


def not_created(node: Node) -> RuntimeError:
    """2. The list holds a node the graph did not create (one made by `Node(...)`)."""
    return _list_broken(
        node,
        "the graph did not create it (it is "
        "missing from the graph's index), so its name may clash and "
        "find_nodes cannot see it.",
        "create nodes with graph.create_node "
        "(or the opcode builders, or graph.node_copy), never with Node(...).",
    )


def first_node_link(node: Node) -> RuntimeError:
    """2. The list starts at `node`, but `node.prev` is another node."""
    return _list_broken(
        node,
        f"it is the first node, yet node.prev is %{node._prev.name}, not the start of the "
        "list, so walking forwards and backwards disagree.",
    )


def walked_in_a_cycle(node: Node, previous: Node) -> RuntimeError:
    """2. Walking forwards from `previous` came back to `node`: the list has a cycle."""
    return _list_broken(
        node,
        f"walking forwards came back to it after %{previous.name}: the list has a cycle.",
    )


def name_error(node: Node) -> RuntimeError:
    """3. An earlier node has this node's name."""
    return broken(
        3,
        "unique names",
        node,
        f"an earlier node is also named {node.name!r}, "
        "so generated code would overwrite one value with the other.",
        "let the graph choose names (create_node(name=...) makes them unique) "
        "instead of assigning node.name.",
    )


def input_order_error(graph: Graph, node: Node, defined: set[Node]) -> RuntimeError:
    """4. The first input of `node` that is not among the nodes `defined` before it:
    the node itself, a node of another graph, or one that comes later (or was erased)."""
    input_node = next(n for n in node._input_nodes if n not in defined)
    if input_node is node:
        return broken(
            4,
            "inputs come first",
            node,
            "it uses itself, so its value would be needed before it is computed.",
            f"give %{node.name} the node it should read instead (node.replace_input_with).",
        )
    if input_node.graph is not graph:
        return broken(
            4,
            "inputs come first",
            node,
            f"it uses %{input_node.name}, which "
            "does not belong to this Graph (it is a node of another graph).",
            "when copying nodes from another graph, map their inputs: "
            "graph.node_copy(node, lambda n: val_map[n]).",
        )
    return broken(
        4,
        "inputs come first",
        node,
        f"it uses %{input_node.name}, which was "
        "used before it has been defined: it comes later in the graph (or "
        "was erased).",
        f"move %{input_node.name} before %{node.name} "
        f"(node.prepend) or insert %{node.name} after it.",
    )


def inputs_disagree(node: Node, used: dict[Node, None]) -> RuntimeError:
    """5. `all_input_nodes` is not the nodes that the arguments use."""
    return _use_def_broken(
        node,
        f"its arguments use {_names(used)} but all_input_nodes is {_names(node.all_input_nodes)}.",
    )


def missing_user(node: Node, input_node: Node) -> RuntimeError:
    """5. `node` uses `input_node` but is not among its `users`."""
    return _use_def_broken(
        node,
        f"it uses %{input_node.name}, but is missing from %{input_node.name}.users.",
    )


def false_user(node: Node, user: Node) -> RuntimeError:
    """5. `user` is among the `users` of `node` but does not use it."""
    return _use_def_broken(
        node,
        f"%{user.name} is listed among its users but does not use it.",
    )


def output_error(node: Node) -> RuntimeError:
    """6. `node` is a second `output` node."""
    count = sum(1 for n in node.graph.nodes if n.op == "output")
    return broken(
        6,
        "one output",
        node,
        f"the graph has {count} output nodes; a program returns once.",
        "erase the extra output nodes, or return a tuple from a single graph.output((a, b)).",
    )


def missing_target(node: Node) -> RuntimeError:
    """7. The owning module has no attribute at the node's target."""
    return broken(
        7,
        "targets exist",
        node,
        f"the owning module has no attribute {node.target!r}.",
        "add it to the module (setattr, add_submodule) or fix the node's target.",
    )


def not_a_module(node: Node) -> RuntimeError:
    """7. A `call_module` target is not an `nn.Module`."""
    return broken(
        7,
        "targets exist",
        node,
        f"{node.target!r} is not an nn.Module, so it cannot be called as a module.",
        "use get_attr to read it and call_function to compute with it.",
    )


def _names(nodes: Any) -> str:
    return "[" + ", ".join(f"%{n.name}" for n in nodes) + "]"


# --- Which case broke, once a check of `check_all` has failed ----------------------------


def link_error(graph: Graph, node: Node, previous: Node, created: set[Node]) -> RuntimeError:
    """2. Why `node`, reached from `previous`, breaks the list: a broken link at `node`, a
    node of another graph, an erased one, one the graph did not make (not in `created`),
    one the walk met before (a cycle), or else a broken link at `previous` or, for the
    first node, at the start (`node.prev` is another node)."""
    if node._next._prev is not node or node._prev._next is not node:
        return broken_link(node)
    if node.graph is not graph:
        return foreign_node(node)
    if node._erased:
        return erased_but_linked(node)
    if node not in created:
        return not_created(node)
    if node in walked_before(graph, previous):
        return walked_in_a_cycle(node, previous)
    if previous is graph._root:
        return first_node_link(node)
    return broken_link(previous)


def walked_before(graph: Graph, last: Node) -> set[Node]:
    """The nodes from the first one to `last`, which the walk met without a problem."""
    walked, node = set(), graph._root
    while node is not last:
        node = node._next
        walked.add(node)
    return walked


def input_error(graph: Graph, node: Node, defined: set[Node]) -> RuntimeError:
    """4 or 5 at `node`: one of its inputs is not `defined` yet, or does not list it among
    its users. Invariant 4 is reported first, as `lint` checks the invariants in order."""
    if not defined.issuperset(node._input_nodes):
        return input_order_error(graph, node, defined)
    return use_def_error(graph, node)


def use_def_error(graph: Graph, last: Node) -> RuntimeError | None:
    """5. The error for the first node up to `last` whose use-def lists disagree with its
    arguments (`None` if only nodes of other graphs use these nodes)."""
    node = graph._root
    while node is not last:
        node = node._next
        used = nodes_in_arguments(node)
        if used.keys() != node._input_nodes.keys():
            return inputs_disagree(node, used)
        for input_node in used:
            if node not in input_node.users:
                return missing_user(node, input_node)
        for user in node.users:
            if node not in nodes_in_arguments(user):
                return false_user(node, user)
    return None


def nodes_in_arguments(node: Node) -> dict[Node, None]:
    """The nodes in `node.args` and `node.kwargs`, read from the arguments themselves
    (not from the use-def lists that lint is checking), in order of first use."""
    found: dict[Node, None] = {}
    collect_nodes(node._args, found)
    collect_nodes(node._kwargs.values(), found)
    return found


def collect_nodes(values: Any, found: dict[Node, None]) -> None:
    """Add the nodes in `values`, and in the tuples, lists, dicts and slices among them."""
    for value in values:
        if isinstance(value, Node):
            found[value] = None
        elif isinstance(value, AGGREGATES):
            if isinstance(value, dict):
                value = value.values()
            elif isinstance(value, slice):
                value = (value.start, value.stop, value.step)
            collect_nodes(value, found)
