"""`Node`: one operation in a `Graph`, with its use-def lists; `map_arg` walks its arguments.

`node.all_input_nodes` (the nodes in its arguments) and `node.users` (the
nodes whose arguments hold it) are rebuilt in one place, `_set_args_kwargs`,
so they cannot drift apart from the arguments.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Callable

from ..proxy.ir import OPCODES, format_line
from . import errors
from .errors import MisuseError as MisuseError  # re-exported: older code imports it here
from .immutable_collections import immutable_dict, immutable_list
from .node_conveniences import Argument, NodeConveniences, Target, _get_qualified_name  # noqa: F401
from .node_conveniences import ArgumentT as ArgumentT  # torch.fx.node has it
from .node_conveniences import _format_arg as _format_arg  # torch.fx.node has it
from .side_effects import has_side_effect, node_is_impure

if TYPE_CHECKING:
    from .graph import Graph

# What `map_aggregate` walks into; anything else is a leaf.
_AGGREGATES = (tuple, list, dict, slice)
# The kwargs of every node that has none: one object serves all, as it cannot change.
_NO_KWARGS = immutable_dict()


def map_aggregate(a: Any, fn: Callable[[Any], Any]) -> Any:
    """Apply `fn` to every leaf of `a`, keeping its tuple/list/dict/slice structure.

    Lists and dicts come back immutable, as a node stores them; named tuples keep their type.
    """
    if not isinstance(a, (tuple, list, dict, slice)):  # a leaf, the commonest case: one check
        return fn(a)
    if isinstance(a, tuple):
        # Leaves are mapped here rather than by a recursive call: arguments are
        # mostly flat tuples, and every graph edit walks them.
        items = [
            map_aggregate(item, fn) if isinstance(item, _AGGREGATES) else fn(item) for item in a
        ]
        if type(a) is tuple or not hasattr(a, "_fields"):  # most are plain tuples
            return tuple(items)
        return type(a)(*items)  # a named tuple, rebuilt field by field
    if isinstance(a, list):
        return immutable_list(map_aggregate(item, fn) for item in a)
    if isinstance(a, dict):
        return immutable_dict((key, map_aggregate(value, fn)) for key, value in a.items())
    return slice(*(map_aggregate(part, fn) for part in (a.start, a.stop, a.step)))


def map_arg(a: Any, fn: Callable[[Node], Any]) -> Any:
    """Apply `fn` to every `Node` inside `a`, such as `map_arg(args, lambda n: env[n])`."""
    if not callable(fn):  # checked first, as torch.fx does: `a` may hold no node to call it on
        raise errors.map_arg_not_callable(fn)
    return map_aggregate(a, lambda leaf: fn(leaf) if isinstance(leaf, Node) else leaf)


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


class Node(NodeConveniences):
    """One operation of a `Graph`: `name = op[target](*args, **kwargs)`.

    | `op`            | `target`                          | `args`, `kwargs`                  |
    |-----------------|-----------------------------------|-----------------------------------|
    | `placeholder`   | the input's name                  | `args` holds the default, if any  |
    | `get_attr`      | a dotted path: `layer1.0.weight`  | empty                             |
    | `call_function` | the function: `torch.relu`        | its arguments                     |
    | `call_method`   | the method's name: `"view"`       | its arguments, `self` first       |
    | `call_module`   | a submodule's path: `"conv1"`     | its arguments                     |
    | `output`        | `"output"`                        | `args[0]` is the value returned   |

    Nodes are made by `Graph.create_node` (or its opcode-named helpers), never directly.

    Attributes:
        graph: the `Graph` this node belongs to.
        name: unique within the graph; the variable name in generated code.
        meta: free-form data that passes attach (shapes, dtypes, ...).
        type: an optional type annotation, printed after the name.
        users: the nodes that use this node's value (a dict used as an ordered set).
    """

    def __init__(
        self,
        graph: Graph,
        name: str,
        op: str,
        target: Any,
        args: tuple,
        kwargs: dict,
        return_type: Any = None,
    ) -> None:
        # Invariant 1, checked where torch.fx checks it; the list's sentinel is a "root".
        if op != "root" and (problem := target_problem(op, target)) is not None:
            raise errors.new_node_error(name, op, target, problem)
        self.graph, self.name, self._op, self._target = graph, name, op, target
        self.type = return_type
        self.meta: dict[str, Any] = {}
        self.users: dict[Node, None] = {}
        self._input_nodes: dict[Node, None] = {}
        self._args: tuple = ()
        self._kwargs: dict = {}
        # Neighbours in the graph's circular list; a new node points at itself.
        self._prev: Node = self
        self._next: Node = self
        self._erased = False
        self._set_args_kwargs(args, kwargs)

    def __repr__(self) -> str:
        return self.name

    @property
    def op(self) -> str:
        """The opcode; setting it also updates the graph's `find_nodes` index."""
        return self._op

    @op.setter
    def op(self, new_op: str) -> None:
        with self.graph._node_index.updating(self):
            self._op = new_op

    @property
    def target(self) -> Any:
        """What is called or read; setting it also updates the `find_nodes` index."""
        return self._target

    @target.setter
    def target(self, new_target: Any) -> None:
        with self.graph._node_index.updating(self):
            self._target = new_target

    # --8<-- [start:use_def]
    @property
    def args(self) -> tuple:
        """The positional arguments; assigning a new tuple updates the use-def lists."""
        return self._args

    @args.setter
    def args(self, new_args: tuple) -> None:
        self._set_args_kwargs(new_args, self._kwargs)

    @property
    def kwargs(self) -> dict:
        """The keyword arguments; assigning a new dict updates the use-def lists."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, new_kwargs: dict) -> None:
        self._set_args_kwargs(self._args, new_kwargs)

    # --8<-- [task:2.1] "Use-def lists" points=5 section=02-graph.md#from-tape-to-graph
    def _set_args_kwargs(
        self, new_args: tuple, new_kwargs: dict, replacing: dict[Node, Node | None] | None = None
    ) -> None:
        """The one place where arguments, and so use-def lists, change.

        `replacing` maps nodes of the new arguments to what takes their place
        (another node, or `None` for an erased node's inputs), in the same walk.
        """
        for old_input in self._input_nodes:
            del old_input.users[self]
        inputs: dict[Node, None] = {}  # a dict as an ordered set: a second use keeps its place
        self._input_nodes = inputs
        replacing = replacing or {}
        args = []
        for arg in new_args:
            if isinstance(arg, Node):  # `_use`, inlined: most arguments are flat, edits walk them
                arg = replacing.get(arg, arg)
                if isinstance(arg, Node):
                    inputs[arg] = None
                    arg.users[self] = None
            elif isinstance(arg, _AGGREGATES):
                arg = map_arg(arg, partial(self._use, replacing))
            args.append(arg)
        # A list stays a list (immutable, as torch.fx keeps it): `node.args = [a, 3]` prints [..].
        self._args = immutable_list(args) if isinstance(new_args, list) else tuple(args)
        self._kwargs = _NO_KWARGS
        if new_kwargs:
            self._kwargs = map_arg(dict(new_kwargs), partial(self._use, replacing))

    def _use(self, replacing: dict[Node, Node | None], leaf: Node) -> Any:
        """Record that this node uses `leaf`, or what `replacing` puts in its place."""
        leaf = replacing.get(leaf, leaf)
        if isinstance(leaf, Node):
            self._input_nodes[leaf] = None
            leaf.users[self] = None
        return leaf

    # --8<-- [end-task:2.1]
    # --8<-- [end:use_def]

    @property
    def all_input_nodes(self) -> list[Node]:
        """The distinct nodes used in `args` and `kwargs`, in order of first use."""
        return list(self._input_nodes)

    @property
    def next(self) -> Node:
        """The node after this one (the graph's sentinel after the last node)."""
        return self._next

    @property
    def prev(self) -> Node:
        """The node before this one (the graph's sentinel before the first node)."""
        return self._prev

    # --8<-- [start:linked_list]
    # --8<-- [task:2.2] "A linked list, and create_node" points=5 section=02-graph.md#building-a-graph-by-hand
    def prepend(self, x: Node) -> None:
        """Move `x` (a node of this graph) so that it comes right before this node. O(1)."""
        self._check_same_graph(x)
        if x is self:
            return
        x._unlink()
        before = self._prev
        before._next, x._prev = x, before
        x._next, self._prev = self, x

    def append(self, x: Node) -> None:
        """Move `x` so that it comes right after this node. O(1)."""
        self._check_same_graph(x)
        self._next.prepend(x)

    def _check_same_graph(self, x: Node) -> None:
        if not isinstance(x, Node) or x.graph is not self.graph:
            raise errors.cannot_move(x, self)

    def _unlink(self) -> None:
        """Take this node out; it keeps its pointers, so a loop standing on it can step on."""
        before, after = self._prev, self._next
        before._next, after._prev = after, before

    # --8<-- [end-task:2.2]
    # --8<-- [end:linked_list]

    # --8<-- [task:2.4] "Replacing and erasing" points=5 section=02-graph.md#replacing-and-erasing
    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Use `new_input` wherever this node's arguments use `old_input`."""
        self._set_args_kwargs(self._args, self._kwargs, replacing={old_input: new_input})

    # --8<-- [start:replace_all_uses_with]
    def replace_all_uses_with(
        self,
        replace_with: Node,
        delete_user_cb: Callable[[Node], bool] | None = None,
        *,
        propagate_meta: bool = False,
    ) -> list[Node]:
        """Make every user of this node use `replace_with` instead; return those users.

        Args:
            delete_user_cb: if given, only users for which it returns `True` change.
            propagate_meta: also copy `meta` onto `replace_with` (which must have none).
        """
        if propagate_meta:
            if replace_with.meta:
                raise errors.meta_would_be_overwritten(replace_with)
            replace_with.meta.update(self.meta)
        changed = list(self.users)
        if delete_user_cb is not None:
            changed = [user for user in changed if delete_user_cb(user)]
        replacing = {self: replace_with}  # what each user's replace_input_with would do
        for user in changed:
            user._set_args_kwargs(user._args, user._kwargs, replacing)
        return changed

    # --8<-- [end-task:2.4]
    # --8<-- [end:replace_all_uses_with]

    def is_impure(self, impure_random: bool = True) -> bool:
        """Whether dead-code elimination must keep this node even without users.

        The rules (placeholders, the output, in-place calls, ...) are in `side_effects.py`.

        Args:
            impure_random: count operators tagged `nondeterministic_seeded`
                (`torch.ops.aten.rand.default`) as impure.
        """
        return node_is_impure(self, impure_random)

    # --8<-- [start:format_node]
    def format_node(self) -> str:
        """This node as one line of `str(graph)`, printed by stage 1's `format_line`."""
        return format_line(self, leaf=_format_leaf, num_users=len(self.users))

    # --8<-- [end:format_node]


def _format_leaf(arg: Any) -> str:
    return f"%{arg.name}" if isinstance(arg, Node) else str(arg)


__all__ = ["Node", "map_arg", "map_aggregate", "has_side_effect"]
