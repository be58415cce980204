"""`Graph`: torch.fx's intermediate representation, a doubly linked list of `Node`s.

The list is circular around a sentinel node, so inserting or erasing a node is
O(1) anywhere: `sentinel <-> %x <-> %add <-> output <-> (back to sentinel)`.
"""

from __future__ import annotations

import copy
import inspect
import warnings
from typing import TYPE_CHECKING, Any, Callable, Iterator

import torch

from ..proxy.names import Namespace, target_to_name
from . import errors, invariants
from .codegen_hooks import CodeGenHooks
from .copying import GraphCopying
from .graph_conveniences import GraphConveniences
from .module_paths import target_warnings
from .node import Node, map_arg
from .node_index import NodeIndex

if TYPE_CHECKING:
    from .structured_inputs import PytreeInfo


class _NodeList:
    """`graph.nodes`: the nodes in order, or backwards with `reversed`; a loop may erase them."""

    def __init__(self, graph: Graph, backwards: bool = False) -> None:
        self._graph, self._backwards = graph, backwards

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self) -> Iterator[Node]:
        # One loop per direction, each reading its pointer directly: every
        # pass walks the graph, so this is the hottest loop of stage 2.
        root = self._graph._root
        if self._backwards:
            node = root._prev
            while node is not root:
                if not node._erased:
                    yield node
                node = node._prev
        else:
            node = root._next
            while node is not root:
                if not node._erased:
                    yield node
                node = node._next

    def __reversed__(self) -> Iterator[Node]:
        return iter(_NodeList(self._graph, not self._backwards))


class _InsertPoint:
    """Returned by `inserting_before/after`: the point moves when this is made (as in
    torch.fx), and back when the `with` block ends."""

    # --8<-- [task:2.3] "Insertion points" points=5 section=02-graph.md#insertion-points
    def __init__(self, graph: Graph, insert: Callable[[Node], None]) -> None:
        self._graph, self._saved = graph, graph._insert
        graph._insert = insert

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc_info: Any) -> None:
        self._graph._insert = self._saved


# --8<-- [end-task:2.3]
class Graph(GraphConveniences, GraphCopying, CodeGenHooks):
    """A program as a list of `Node`s, in an order where inputs come before users.

    Invariants (`lint()` checks each one; its messages name the number):

    1. Every node's `op` is one of the six opcodes, and its `target` is a
       callable for `call_function` and a `str` for the other opcodes.
    2. The list is well linked: `n.next.prev is n` for every node, each node
       belongs to this graph (`n.graph is self`) and none was erased.
    3. Node names are unique.
    4. Every node's inputs (`all_input_nodes`) are nodes of this graph
       that come before it.
    5. The use-def lists agree with the arguments: `n.all_input_nodes` is
       exactly the nodes in `n.args` and `n.kwargs`, `n` is among the `users`
       of each of them, and each of `n.users` really uses `n`.
    6. There is at most one `output` node.
    7. With an `owning_module`, every `get_attr` and `call_module` target
       exists on it, and `call_module` targets are modules.

    Args:
        owning_module: the module whose attributes `get_attr` and
            `call_module` targets name (set by chapter 3's GraphModule).
        tracer_cls: the tracer class that made this graph, kept for retracing.
        tracer_extras: extra arguments for that tracer.
    """

    def __init__(
        self,
        owning_module: torch.nn.Module | None = None,
        tracer_cls: type | None = None,
        tracer_extras: dict | None = None,
    ) -> None:
        # The node before the first and after the last: an empty list is the
        # sentinel alone. Its opcode "root" is never printed or linted.
        self._root = Node(self, "", "root", "", (), {})
        self._insert: Callable[[Node], None] = self._root.prepend  # append at the end
        self._len = 0
        self._graph_namespace = Namespace()
        self._node_index = NodeIndex()  # for find_nodes
        self.owning_module = owning_module
        # Set by the Tracer when inputs were given as structures (see PytreeInfo).
        self.pytree_info: PytreeInfo | None = None
        self._tracer_cls, self._tracer_extras = tracer_cls, tracer_extras

    @property
    def nodes(self) -> _NodeList:
        """The nodes in order; supports `len`, iteration and `reversed`."""
        return _NodeList(self)

    # --8<-- [start:create_node]
    # --8<-- [task:2.2]
    def create_node(
        self,
        op: str,
        target: Any,
        args: tuple | None = None,
        kwargs: dict | None = None,
        name: str | None = None,
        type_expr: Any = None,
    ) -> Node:
        """Make a node and insert it at the insertion point (by default, the end).

        Args:
            name: the name to start from (by default, from `target`); a taken
                name gets a suffix: `add`, `add_1`, ...
            type_expr: an optional type annotation.

        Raises:
            AssertionError: `args` is not a tuple or `kwargs` not a dict (as in torch.fx): a
                `MisuseError` saying `f"create_node: {what} must be {kind}..."`.
        """
        if args and not isinstance(args, tuple) or kwargs and not isinstance(kwargs, dict):
            raise errors.not_a_tuple_or_dict(args, kwargs)
        candidate = name if name is not None else target_to_name(target)
        unique_name = self._graph_namespace.create_name(candidate)
        node = Node(self, unique_name, op, target, tuple(args or ()), dict(kwargs or {}), type_expr)
        self._insert(node)
        self._len += 1
        self._node_index.add(node)
        return node

    # --8<-- [end-task:2.2]
    # --8<-- [end:create_node]

    # --8<-- [start:erase_node]
    # --8<-- [task:2.4]
    def erase_node(self, to_erase: Node) -> None:
        """Remove a node nothing uses any more, else raise `errors.still_used` (a `RuntimeError`,
        `f"tried to erase %{name} but it still had {n} users ..."`). O(1) per input."""
        if to_erase.users:
            raise errors.still_used(to_erase)
        if to_erase.graph is not self:
            raise errors.not_in_this_graph(to_erase)
        if to_erase._erased:
            warnings.warn(
                f"erase_node(%{to_erase.name}): the node was already erased", stacklevel=2
            )
            return
        to_erase._unlink()
        to_erase._erased = True
        self._len -= 1
        self._node_index.remove(to_erase)
        # Nodes in its arguments become None, which removes it from their users.
        erased_inputs = dict.fromkeys(to_erase._input_nodes)  # each one -> None
        to_erase._set_args_kwargs(to_erase._args, to_erase._kwargs, replacing=erased_inputs)

    # --8<-- [end-task:2.4]
    # --8<-- [end:erase_node]

    # --8<-- [start:inserting]
    # --8<-- [task:2.3]
    def inserting_before(self, n: Node | None = None) -> _InsertPoint:
        """Within `with graph.inserting_before(n):`, new nodes go right before `n` (or first)."""
        if n is None:
            return self.inserting_after(self._root)
        self._check_owned(n, "inserting_before")
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None) -> _InsertPoint:
        """Within `with graph.inserting_after(n):`, new nodes go right after `n` (or last).

        So two new nodes come out in reverse order; for a chain, insert after the newest.
        """
        if n is None:
            return self.inserting_before(self._root)
        self._check_owned(n, "inserting_after")
        return _InsertPoint(self, n.append)

    # --8<-- [end-task:2.3]
    # --8<-- [end:inserting]

    def _check_owned(self, n: Node, method: str) -> None:
        if n.graph is not self:
            raise errors.insertion_point_elsewhere(method, n)

    # --8<-- [start:builders]
    def placeholder(
        self, name: str, type_expr: Any = None, default_value: Any = inspect.Signature.empty
    ) -> Node:
        """An input of the program, named `name`, with an optional default."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any = None) -> Node:
        """Read an attribute of the module, such as `"layer1.0.weight"`."""
        self._warn_if_missing(qualified_name, "get_attr")
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(
        self,
        module_name: str,
        args: tuple | None = None,
        kwargs: dict | None = None,
        type_expr: Any = None,
    ) -> Node:
        """Call the submodule at path `module_name`, such as `"layer1.0.conv1"`."""
        self._warn_if_missing(module_name, "call_module")
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(
        self,
        method_name: str,
        args: tuple | None = None,
        kwargs: dict | None = None,
        type_expr: Any = None,
    ) -> Node:
        """Call the method `method_name` on `args[0]`: `x.view(2, 3)`."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(
        self,
        the_function: Callable,
        args: tuple | None = None,
        kwargs: dict | None = None,
        type_expr: Any = None,
        name: str | None = None,
    ) -> Node:
        """Call a free function, such as `torch.relu` or `operator.add`."""
        return self.create_node("call_function", the_function, args, kwargs, name, type_expr)

    def output(self, result: Any, type_expr: Any = None) -> Node:
        """Return `result` (a node, or a tuple/list/dict of them) from the program."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    # --8<-- [end:builders]

    def _warn_if_missing(self, path: str, op: str) -> None:
        for message in target_warnings(self.owning_module, path, op):
            warnings.warn(message, stacklevel=3)

    # --8<-- [start:node_copy]
    def node_copy(self, node: Node, arg_transform: Callable[[Node], Any] = lambda n: n) -> Node:
        """Copy `node` (from any graph) into this one, at the insertion point.

        Args:
            arg_transform: maps each node in `node`'s arguments to its
                counterpart in this graph; usually `lambda n: val_map[n]`.
        """
        args, kwargs = map_arg(node.args, arg_transform), map_arg(node.kwargs, arg_transform)
        copied = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        copied.meta = copy.copy(node.meta)
        return copied

    # --8<-- [end:node_copy]

    # --8<-- [start:eliminate_dead_code]
    # --8<-- [task:2.5] "Dead-code elimination" points=5 section=02-graph.md#dead-code
    def eliminate_dead_code(self, is_impure_node: Callable[[Node], bool] | None = None) -> bool:
        """Erase every node whose value nobody uses and that has no side effect.

        Args:
            is_impure_node: decides which nodes must stay; by default `Node.is_impure`.

        Returns:
            Whether anything was erased, here or in a subgraph.
        """
        self.lint()
        is_impure = is_impure_node or Node.is_impure
        erased = False
        for node in reversed(self.nodes):
            if not node.users and not is_impure(node):
                self.erase_node(node)
                erased = True
        return self._eliminate_dead_code_in_subgraphs() or erased

    # --8<-- [end-task:2.5]
    # --8<-- [end:eliminate_dead_code]

    def lint(self) -> None:
        """Check the numbered invariants of the class docstring (`invariants.py`).

        Raises:
            RuntimeError: naming the broken invariant, the node, and how to fix it.
        """
        invariants.check_all(self)

    # --8<-- [start:str]
    def __str__(self) -> str:
        """The graph as torch.fx prints it: `graph():` and one line per node."""
        return "\n".join(["graph():", *(f"    {node.format_node()}" for node in self.nodes)])

    # --8<-- [end:str]
