"""The checks behind `Graph.lint()`: one check per numbered invariant.

The invariants are listed once, in the `Graph` docstring. Each check raises
`RuntimeError` with a message of the form

    Graph.lint: invariant 4 (inputs come first) is broken at %sin: ...
    How to fix: ...

so that a broken graph says which rule, which node, and what to do.

`check_all` walks the list once and checks every invariant at each node,
rather than walking once per invariant: a large graph does not fit in the
processor's caches, and each extra walk would pay again for fetching every
node. Each invariant is one condition in that walk; the functions below it
word the error, naming the rule, the node and the fix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

import torch

from ..proxy.ir import OPCODES
from .errors import MisuseError
from .module_paths import get_path, has_path
from .node import Node

if TYPE_CHECKING:
    from .graph import Graph

# Types that may hold nodes inside a node's arguments (`map_aggregate` walks the same).
_AGGREGATES = (tuple, list, dict, slice)


def check_all(graph: Graph) -> None:
    """Walk the list once; at each node, check the invariants in the order of their numbers.

    Each check is one condition here; the functions below word the error
    (and, where the condition only says that something is wrong, find what).
    """
    names: set[str] = set()
    defined: set[Node] = set()
    nodes: list[Node] = []
    outputs = uses = users = 0
    for node in walk_list(graph):  # 2: checked as the walk steps
        problem = target_problem(node._op, node._target)  # 1
        if problem is not None:
            raise _opcode_error(node, problem)
        if node.name in names:  # 3
            raise _name_error(node)
        names.add(node.name)
        if not defined.issuperset(node._input_nodes):  # 4
            raise _input_order_error(graph, node, defined)
        defined.add(node)
        nodes.append(node)
        if nodes_in_arguments(node) != node._input_nodes or not _listed_as_user(node):  # 5
            raise _use_def_error(nodes)
        uses, users = uses + len(node._input_nodes), users + len(node.users)
        if node._op == "output":  # 6
            outputs += 1
            if outputs > 1:
                raise _output_error(node)
        if graph.owning_module is not None:  # 7
            check_target_exists(graph, node)
    # 5, completed: each node is among the users of each of its inputs, so the users
    # lists hold at least one entry per use; holding exactly as many, they hold no more.
    if uses != users and (error := _use_def_error(nodes)) is not None:
        raise error


def _broken(number: int, rule: str, node: Node | None, problem: str, fix: str) -> RuntimeError:
    where = f" at %{node.name}" if node is not None else ""
    return RuntimeError(
        f"Graph.lint: invariant {number} ({rule}) is broken{where}: {problem}\nHow to fix: {fix}"
    )


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
        raise MisuseError(
            f"cannot create node %{name}: unknown opcode {op!r}. A node's op is "
            f"one of {', '.join(OPCODES)}."
        )
    if problem == "a callable":
        raise ValueError(
            f"cannot create node %{name}: a call_function target must be callable, got "
            f"{target!r} of type {type(target).__name__}. Pass the function itself "
            "(torch.relu), not its name; names are for call_method and call_module."
        )
    if problem == "a str":
        raise ValueError(
            f"cannot create node %{name}: a {op} target must be a str, got {target!r} of type "
            f"{type(target).__name__}. For a function, use op='call_function'."
        )


def _opcode_error(node: Node, problem: str) -> RuntimeError:
    """1. The op is an opcode; a call_function target is callable, the others' a str."""
    if problem == "an opcode":
        return _broken(
            1,
            "known opcodes",
            node,
            f"its op is {node.op!r}, not one of {', '.join(OPCODES)}.",
            "set node.op to one of the six opcodes.",
        )
    return _broken(
        1,
        "known opcodes",
        node,
        f"a {node.op} target must be {problem}, got {node.target!r}.",
        "store the function itself for call_function, "
        "and a method name or attribute path for the other opcodes.",
    )


def walk_list(graph: Graph) -> Iterator[Node]:
    """2. Yield the nodes in order, checking first that each is well linked
    (`n.next.prev is n`), belongs to this graph, was not erased, and was made by it."""
    created = graph._node_index.all_nodes()
    root = graph._root
    node, count = root._next, 0
    while node is not root:
        if node._next._prev is not node or node._prev._next is not node:
            raise _broken_link(node)
        if node.graph is not graph:
            raise _broken(
                2,
                "a well-linked list",
                node,
                "it belongs to another graph.",
                "copy nodes between graphs with graph.node_copy(node, arg_transform).",
            )
        if node._erased:
            raise _broken(
                2, "a well-linked list", node, "it was erased but is still linked.", _LINK_FIX
            )
        if node not in created:
            raise _broken(
                2,
                "a well-linked list",
                node,
                "the graph did not create it (it is "
                "missing from the graph's index), so its name may clash and "
                "find_nodes cannot see it.",
                "create nodes with graph.create_node "
                "(or the opcode builders, or graph.node_copy), never with Node(...).",
            )
        count += 1
        if count > graph._len:
            raise _broken(
                2,
                "a well-linked list",
                node,
                f"the list has more nodes than the {graph._len} the graph created (a cycle?).",
                _LINK_FIX,
            )
        yield node
        node = node._next


_LINK_FIX = (
    "edit the list only with graph methods (create_node, erase_node, "
    "node.prepend/append), never by setting _prev/_next or node.graph."
)


def _broken_link(node: Node) -> RuntimeError:
    return _broken(
        2,
        "a well-linked list",
        node,
        "node.next.prev or node.prev.next is not "
        "the node itself, so walking forwards and backwards disagree.",
        _LINK_FIX,
    )


def _name_error(node: Node) -> RuntimeError:
    """3. No earlier node has this node's name."""
    return _broken(
        3,
        "unique names",
        node,
        f"an earlier node is also named {node.name!r}, "
        "so generated code would overwrite one value with the other.",
        "let the graph choose names (create_node(name=...) makes them unique) "
        "instead of assigning node.name.",
    )


def _input_order_error(graph: Graph, node: Node, defined: set[Node]) -> RuntimeError:
    """4. Every input of the node (`all_input_nodes`) is a node of this graph that comes
    before it (among the nodes `defined`). Invariant 5 then checks that those inputs
    are what the arguments use."""
    for input_node in node._input_nodes:
        if input_node is node:
            return _broken(
                4,
                "inputs come first",
                node,
                "it uses itself, so its value would be needed before it is computed.",
                f"give %{node.name} the node it should read instead (node.replace_input_with).",
            )
        if input_node.graph is not graph:
            return _broken(
                4,
                "inputs come first",
                node,
                f"it uses %{input_node.name}, which "
                "does not belong to this Graph (it is a node of another graph).",
                "when copying nodes from another graph, map their inputs: "
                "graph.node_copy(node, lambda n: val_map[n]).",
            )
        if input_node not in defined:
            break
    return _broken(
        4,
        "inputs come first",
        node,
        f"it uses %{input_node.name}, which was "
        "used before it has been defined: it comes later in the graph (or "
        "was erased).",
        f"move %{input_node.name} before %{node.name} "
        f"(node.prepend) or insert %{node.name} after it.",
    )


def _listed_as_user(node: Node) -> bool:
    """5. The node is among the `users` of each of its inputs."""
    for input_node in node._input_nodes:
        if node not in input_node.users:
            return False
    return True


def _use_def_error(nodes: list[Node]) -> RuntimeError | None:
    """5. `all_input_nodes` and `users` agree with the arguments: the error for the first
    of `nodes` where they do not (`None` if only nodes of other graphs use these nodes)."""
    fix = (
        "change arguments only by assigning node.args / node.kwargs (or update_arg, "
        "replace_input_with), which keeps users and inputs in step; never edit node.users."
    )
    for node in nodes:
        used = nodes_in_arguments(node)
        if used.keys() != node._input_nodes.keys():
            return _broken(
                5,
                "use-def lists agree",
                node,
                f"its arguments use {_names(used)} "
                f"but all_input_nodes is {_names(node.all_input_nodes)}.",
                fix,
            )
        for input_node in used:
            if node not in input_node.users:
                return _broken(
                    5,
                    "use-def lists agree",
                    node,
                    f"it uses %{input_node.name}, but is missing from %{input_node.name}.users.",
                    fix,
                )
        for user in node.users:
            if node not in nodes_in_arguments(user):
                return _broken(
                    5,
                    "use-def lists agree",
                    node,
                    f"%{user.name} is listed among its users but does not use it.",
                    fix,
                )
    return None


def _output_error(node: Node) -> RuntimeError:
    """6. At most one `output` node: `node` is a second one."""
    count = sum(1 for n in node.graph.nodes if n.op == "output")
    return _broken(
        6,
        "one output",
        node,
        f"the graph has {count} output nodes; a program returns once.",
        "erase the extra output nodes, or return a tuple from a single graph.output((a, b)).",
    )


def check_target_exists(graph: Graph, node: Node) -> None:
    """7. A get_attr / call_module target exists on the owning module."""
    if node._op not in ("get_attr", "call_module"):
        return
    if not has_path(graph.owning_module, node.target):
        raise _broken(
            7,
            "targets exist",
            node,
            f"the owning module has no attribute {node.target!r}.",
            "add it to the module (setattr, add_submodule) or fix the node's target.",
        )
    if node._op == "call_module" and not isinstance(
        get_path(graph.owning_module, node.target), torch.nn.Module
    ):
        raise _broken(
            7,
            "targets exist",
            node,
            f"{node.target!r} is not an nn.Module, so it cannot be called as a module.",
            "use get_attr to read it and call_function to compute with it.",
        )


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
