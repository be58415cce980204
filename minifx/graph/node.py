"""`Node`: one operation in a `Graph`, and `map_arg` to walk its arguments.

A node is a stage-1 record that also knows who uses it. Every node keeps two
maps that are the graph's use-def lists:

- `node.all_input_nodes`: the nodes that appear in its `args` and `kwargs`;
- `node.users`: the nodes whose `args` or `kwargs` contain it.

Both are rebuilt in one place, `_set_args_kwargs`, which every change of
`args` or `kwargs` goes through (only `insert_arg` adds to them in place), so
they cannot drift apart. The lists and dicts a node stores are read-only
(`immutable_collections.py`), and which calls must survive dead-code
elimination is decided in `side_effects.py`.
"""

from __future__ import annotations

from typing import Any, Callable

from ..proxy.tape import OPCODES, format_arg, format_target, type_repr
from .immutable_collections import immutable_dict, immutable_list
from .side_effects import has_side_effect, is_impure_call, is_in_place


def map_aggregate(a: Any, fn: Callable[[Any], Any]) -> Any:
    """Apply `fn` to every leaf of `a`, keeping its tuple/list/dict/slice structure.

    Lists and dicts come back immutable (see `immutable_list`), as a node
    stores them; named tuples keep their type.
    """
    if not isinstance(a, (tuple, list, dict, slice)):  # a leaf, the commonest case: one check
        return fn(a)
    if isinstance(a, tuple):
        items = [map_aggregate(item, fn) for item in a]
        return type(a)(*items) if hasattr(a, "_fields") else tuple(items)
    if isinstance(a, list):
        return immutable_list(map_aggregate(item, fn) for item in a)
    if isinstance(a, dict):
        return immutable_dict((key, map_aggregate(value, fn)) for key, value in a.items())
    return slice(*(map_aggregate(part, fn) for part in (a.start, a.stop, a.step)))


def map_arg(a: Any, fn: Callable[[Node], Any]) -> Any:
    """Apply `fn` to every `Node` inside `a`; other values are kept as they are.

    Example: `map_arg((x, [y, 1]), lambda n: env[n])` replaces the nodes `x`
    and `y` by their values in `env`.
    """
    return map_aggregate(a, lambda leaf: fn(leaf) if isinstance(leaf, Node) else leaf)


class Node:
    """One operation of a `Graph`: `name = op[target](*args, **kwargs)`.

    | `op`            | `target`                          | `args`, `kwargs`                  |
    |-----------------|-----------------------------------|-----------------------------------|
    | `placeholder`   | the input's name                  | `args` holds the default, if any  |
    | `get_attr`      | a dotted path: `layer1.0.weight`  | empty                             |
    | `call_function` | the function: `torch.relu`        | its arguments                     |
    | `call_method`   | the method's name: `"view"`       | its arguments, `self` first       |
    | `call_module`   | a submodule's path: `"conv1"`     | its arguments                     |
    | `output`        | `"output"`                        | `args[0]` is the value returned   |

    Nodes are made by `Graph.create_node` (or its opcode-named helpers), never
    directly: the graph gives each one a unique name and a place in its list.

    Attributes:
        graph: the `Graph` this node belongs to.
        name: unique within the graph; the variable name in generated code.
        op: one of the six opcodes above.
        target: what is called or read, as in the table.
        meta: free-form data that passes attach (shapes, dtypes, ...).
        type: an optional type annotation, printed after the name.
        users: the nodes that use this node's value (a dict used as an ordered set).
    """

    def __init__(self, graph: Any, name: str, op: str, target: Any,
                 args: tuple, kwargs: dict, return_type: Any = None) -> None:
        _check_op_and_target(name, op, target)
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
        """The opcode; a new one is also recorded in the graph's `find_nodes` index."""
        return self._op

    @op.setter
    def op(self, new_op: str) -> None:
        self._reindex(lambda: setattr(self, "_op", new_op))

    @property
    def target(self) -> Any:
        """What is called or read; a new one is also recorded in the `find_nodes` index."""
        return self._target

    @target.setter
    def target(self, new_target: Any) -> None:
        self._reindex(lambda: setattr(self, "_target", new_target))

    def _reindex(self, change: Callable[[], None]) -> None:
        """Apply `change` while keeping the graph's index (by op and target) current."""
        indexed = not self._erased and self.graph._unindex(self)
        change()
        if indexed:
            self.graph._index(self)

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

    def _set_args_kwargs(self, new_args: tuple, new_kwargs: dict,
                         transform: Callable[[Node], Any] | None = None) -> None:
        """The one place where arguments change, so the one place use-def lists change.

        `transform`, if given, first maps each node in the new arguments
        (to swap one input for another), in the same walk.
        """
        for old_input in self._input_nodes:
            old_input.users.pop(self)
        self._input_nodes = {}

        def record_use(value: Any) -> Any:  # called on every leaf of the arguments
            if not isinstance(value, Node):
                return value
            node = value if transform is None else transform(value)
            if isinstance(node, Node):
                self._input_nodes.setdefault(node)
                node.users.setdefault(self)
            return node

        self._args = map_aggregate(tuple(new_args), record_use)
        self._kwargs = map_aggregate(dict(new_kwargs), record_use)
    # --8<-- [end:use_def]

    @property
    def stack_trace(self) -> str | None:
        """Where in the user's code this node was recorded, if a pass stored it
        in `meta["stack_trace"]` (minifx's Tracer does not record it)."""
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace: str | None) -> None:
        self.meta["stack_trace"] = trace

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
    def prepend(self, x: Node) -> None:
        """Move `x` so that it comes right before this node. O(1).

        Raises:
            ValueError: if `x` belongs to another graph.
        """
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
        if x.graph is not self.graph:
            raise MisuseError(
                f"cannot move %{x.name} next to %{self.name}: they belong to different "
                "graphs. Copy it into this graph with graph.node_copy(node, arg_transform) instead."
            )

    def _unlink(self) -> None:
        """Take this node out of the list; its own pointers are kept so that an
        iteration that is standing on it can still step to the next node."""
        before, after = self._prev, self._next
        before._next, after._prev = after, before
    # --8<-- [end:linked_list]

    def update_arg(self, idx: int, arg: Any) -> None:
        """Replace `args[idx]` with `arg`, updating the use-def lists."""
        args = list(self._args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg: Any) -> None:
        """Set `kwargs[key]` to `arg`, updating the use-def lists."""
        self.kwargs = {**self._kwargs, key: arg}

    def insert_arg(self, idx: int, arg: Any) -> None:
        """Insert `arg` into `args` before position `idx`, updating the use-def lists.

        As in torch.fx, the nodes in `arg` are added to the use-def lists
        without rebuilding them, so the order of the existing entries stays.
        A list or dict in `arg` is stored read-only, as every other one.

        Raises:
            IndexError: if `idx` is not between 0 and `len(self.args)`; it is
                also the `AssertionError` that torch.fx raises.
        """
        if not 0 <= idx <= len(self._args):
            raise _InsertArgIndexError(
                f"%{self.name}.insert_arg({idx}, ...): the index must be between 0 and "
                f"len(args) = {len(self._args)}, to insert before args[idx] (or at the end "
                "with len(args)). Use update_arg to replace an argument instead."
            )
        self._args = (*self._args[:idx], *map_arg((arg,), self._add_use), *self._args[idx:])

    def _add_use(self, node: Node) -> Node:
        """Record that this node uses `node` (nothing changes if it already did)."""
        self._input_nodes.setdefault(node)
        node.users.setdefault(self)
        return node

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Use `new_input` wherever this node's arguments use `old_input`."""
        swap = lambda node: new_input if node is old_input else node  # noqa: E731
        self._set_args_kwargs(self._args, self._kwargs, transform=swap)

    # --8<-- [start:replace_all_uses_with]
    def replace_all_uses_with(self, replace_with: Node,
                              delete_user_cb: Callable[[Node], bool] | None = None,
                              *, propagate_meta: bool = False) -> list[Node]:
        """Make every user of this node use `replace_with` instead.

        Args:
            replace_with: the node that takes this node's place.
            delete_user_cb: called with each user; only users for which it
                returns `True` are changed. By default all of them are.
            propagate_meta: also copy this node's `meta` onto `replace_with`
                (which must have none yet).

        Returns:
            The users that were changed.
        """
        if propagate_meta:
            if replace_with.meta:
                raise MisuseError(
                    f"replace_all_uses_with(%{replace_with.name}, propagate_meta=True): "
                    f"%{replace_with.name} already has meta keys {sorted(replace_with.meta)}, "
                    "which copying would overwrite. Clear them first or pass propagate_meta=False."
                )
            replace_with.meta.update(self.meta)
        changed = [user for user in list(self.users)
                   if delete_user_cb is None or delete_user_cb(user)]
        for user in changed:
            user.replace_input_with(self, replace_with)
        return changed
    # --8<-- [end:replace_all_uses_with]

    def is_impure(self, impure_random: bool = True) -> bool:
        """Whether dead-code elimination must keep this node even without users.

        Placeholders and the output are the graph's interface; a module is
        impure if it says so with `_is_impure = True`; a function call is
        impure if it writes to an argument, asserts, draws random numbers, or
        was registered with `has_side_effect` (`side_effects.is_impure_call`
        lists every rule). In-place methods and functions (`x.add_(1)`,
        `torch.relu_(x)`) are impure by their name, which torch.fx ignores.

        Args:
            impure_random: count operators tagged `nondeterministic_seeded`
                (`torch.ops.aten.rand.default`) as impure. Random functions
                such as `torch.rand` are impure either way, as in torch.fx.
        """
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_method":
            return is_in_place(self.target)
        if self.op == "call_function":
            return is_impure_call(self.target, self.args, impure_random) or \
                is_in_place(getattr(self.target, "__name__", None))
        if self.op == "call_module":
            return getattr(self._owning_submodule(), "_is_impure", False)
        return False

    def _owning_submodule(self) -> Any:
        root = getattr(self.graph, "owning_module", None)
        return None if root is None else get_path(root, self.target)

    # --8<-- [start:format_node]
    def format_node(self) -> str:
        """This node as one line of `str(graph)`, exactly as torch.fx prints it.

        Example: `%add : [num_users=1] = call_function[target=operator.add](args = (%x, 1), kwargs = {})`.
        """
        if self.op == "output":
            return f"return {self.args[0]}"  # Python's str; a Node's repr is its name
        # torch.fx tests a placeholder's type for truth and the others' for None.
        typed = self.type if self.op == "placeholder" else self.type is not None
        annotation = f"{type_repr(self.type)} " if typed else ""
        head = (f"%{self.name} : {annotation}[num_users={len(self.users)}] = "
                f"{self.op}[target={format_target(self.target)}]")
        if self.op == "placeholder":
            return head + (f"(default={self.args[0]})" if self.args else "")
        if self.op == "get_attr":
            return head
        return f"{head}(args = {_format(self._args)}, kwargs = {_format(self._kwargs)})"
    # --8<-- [end:format_node]


def _format(arg: Any) -> str:
    return format_arg(arg, leaf=lambda a: f"%{a.name}" if isinstance(a, Node) else str(a))


def _format_arg(arg: Any, max_list_len: float = float("inf")) -> str:
    """An argument as `str(graph)` prints it, under torch.fx's name for the function.

    A list or tuple longer than `max_list_len` shows its first items and its length.
    """
    if isinstance(arg, (list, tuple)) and len(arg) > max_list_len:
        shown = _format(list(arg[:int(max_list_len)]))[1:-1]
        opening, closing = ("[", "]") if isinstance(arg, list) else ("(", ")")
        return f"{opening}{shown}, ...[total_len={len(arg)}]{closing}"
    return _format(arg)


class MisuseError(ValueError, AssertionError):
    """A misuse of the graph API that torch.fx meets with a bare `AssertionError` (an
    unknown opcode, a node of another graph); minifx's message says what to do instead."""


class _InsertArgIndexError(IndexError, AssertionError):
    """A bad index for `insert_arg`; also an `AssertionError`, which torch.fx raises."""


def get_path(root: Any, path: str, default: Any = None) -> Any:
    """Follow the dotted attribute `path` (`"layer1.0.conv1"`) from `root`.

    Returns:
        The attribute, or `default` if any step is missing.
    """
    for atom in path.split("."):
        root = getattr(root, atom, default)
        if root is default:
            return default
    return root


def _check_op_and_target(name: str, op: str, target: Any) -> None:
    if op not in OPCODES:
        raise MisuseError(
            f"cannot create node %{name}: unknown opcode {op!r}. A node's op is one of "
            f"{', '.join(OPCODES)}."
        )
    if op == "call_function" and not callable(target):
        raise ValueError(
            f"cannot create node %{name}: a call_function target must be callable, got "
            f"{target!r} of type {type(target).__name__}. Pass the function itself "
            "(torch.relu), not its name; names are for call_method and call_module."
        )
    if op != "call_function" and not isinstance(target, str):
        raise ValueError(
            f"cannot create node %{name}: a {op} target must be a str, got {target!r} of type "
            f"{type(target).__name__}. For a function, use op='call_function'."
        )


__all__ = ["Node", "map_arg", "map_aggregate", "has_side_effect"]
