"""The exceptions stage 2 raises for a misuse of the graph API, and the tracer's errors
(and two that GraphModule, in stage 3, raises: `NotAModuleOrDict` and `NotAGraph`).

Each is also the exception type torch.fx raises for the same mistake, so code
written for torch.fx catches it; minifx's message adds what to do instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..proxy.errors import untraceable
from ..proxy.ir import OPCODES

if TYPE_CHECKING:
    from .node import Node


class MisuseError(ValueError, AssertionError):
    """A misuse of the graph API that torch.fx meets with a bare `AssertionError` (an
    unknown opcode, a node of another graph); minifx's message says what to do instead."""


class InsertArgIndexError(IndexError, AssertionError):
    """A bad index for `insert_arg`; also an `AssertionError`, which torch.fx raises."""


class NotTraceable(TypeError, AssertionError):
    """`root` has no function to trace; also the `AssertionError` torch.fx raises."""


class SelfInStarArgs(TypeError, RuntimeError):
    """A module's `self` hidden in `*args`; also the `RuntimeError` torch.fx raises."""


class ConcreteArgsCountError(TypeError, RuntimeError):
    """A tuple of `concrete_args` that does not match the traced function's inputs; also
    the `RuntimeError` torch.fx raises."""


class NotAGlobalFunction(TypeError, RuntimeError):
    """`wrap` given neither a function nor a name; also the `RuntimeError` torch.fx raises."""


class NotAModuleOrDict(TypeError, RuntimeError):
    """`GraphModule(root, graph)` with a `root` that is neither a module nor a dict; also
    the `RuntimeError` torch.fx raises."""


class ModuleArgumentNotInRoot(NameError, NotImplementedError):
    """A module passed as an argument that the root module does not hold; also the
    `NotImplementedError` ("argument of type") that torch.fx raises for it."""


class NoReceiver(ValueError, IndexError):
    """A `call_method` node with no receiver in `args[0]`; also torch.fx's `IndexError`."""


class NotAGraph(TypeError, AssertionError):
    """A `GraphModule.graph` that is no minifx `Graph`; also torch.fx's `AssertionError`."""


# The graph's errors, worded here so that the editing code stays short.


def still_used(node: Node) -> RuntimeError:
    """`erase_node` was asked to erase a node that still has users."""
    users = ", ".join(f"%{user.name}" for user in node.users)
    return RuntimeError(
        f"tried to erase %{node.name} but it still had {len(node.users)} users in "
        f"the graph ({users}), which would be left reading a value that no longer exists. "
        f"First make them use another value (%{node.name}.replace_all_uses_with(new)) "
        "or erase them."
    )


def not_a_tuple_or_dict(args: object, kwargs: object) -> MisuseError:
    """`create_node` was given `args` that is no tuple, or `kwargs` that is no dict."""
    if args and not isinstance(args, tuple):
        what, value, kind = "args", args, "a tuple"
        why = "a list of arguments is easily meant as one list argument, as in torch.cat([a, b])"
        fix = "graph.call_function(torch.cat, ([a, b],))"
    else:
        what, value, kind = "kwargs", kwargs, "a dict"
        why = "keyword arguments are names mapped to values"
        fix = "graph.call_method('sum', (x,), {'dim': 0})"
    return MisuseError(
        f"create_node: {what} must be {kind}, got {type(value).__name__} {value!r} "
        f"(torch.fx refuses it too): {why}. How to fix: pass {kind}, as in {fix}."
    )


def not_in_this_graph(node: Node) -> RuntimeError:
    """`erase_node` was asked to erase a node of another graph."""
    return RuntimeError(
        f"cannot erase %{node.name}: it belongs to another graph. Call "
        "erase_node on the graph that holds it (node.graph.erase_node(node))."
    )


def new_node_error(name: str, op: str, target: Any, problem: str) -> MisuseError:
    """`Node(...)` (and so `Graph.create_node`) was asked for a node that breaks invariant 1.

    `problem` is what `node.target_problem` found. Each is a `MisuseError`: torch.fx's
    `Node` constructor raises a `ValueError` for a wrong target, and `Graph.create_node`
    an `AssertionError` (for an unknown opcode, and for a wrong target when it makes the
    node's name from it).
    """
    if problem == "an opcode":
        return MisuseError(
            f"cannot create node %{name}: unknown opcode {op!r}. A node's op is "
            f"one of {', '.join(OPCODES)}."
        )
    if problem == "a callable":
        return MisuseError(
            f"cannot create node %{name}: a call_function target must be callable, got "
            f"{target!r} of type {type(target).__name__}. Pass the function itself "
            "(torch.relu), not its name; names are for call_method and call_module."
        )
    return MisuseError(
        f"cannot create node %{name}: a {op} target must be a str, got {target!r} of type "
        f"{type(target).__name__}. For a function, use op='call_function'."
    )


def insertion_point_elsewhere(method: str, node: Node) -> MisuseError:
    """`inserting_before/after` was given a node of another graph."""
    return MisuseError(
        f"{method}(%{node.name}): the node belongs to another graph, so new nodes cannot "
        "be inserted next to it here. Pass a node of this graph."
    )


def cannot_move(moved: object, anchor: Node) -> Exception:
    """`anchor.prepend(moved)` or `append` with a node of another graph, or with no node
    (a `TypeError`, as in torch.fx)."""
    from .node import Node  # node.py imports this module

    if isinstance(moved, Node):
        return move_across_graphs(moved, anchor)
    return move_not_a_node(moved, anchor)


def move_across_graphs(moved: Node, anchor: Node) -> MisuseError:
    """`anchor.prepend(moved)` or `append` with nodes of two graphs."""
    return MisuseError(
        f"cannot move %{moved.name} next to %{anchor.name}: they belong to different "
        "graphs. Copy it into this graph with graph.node_copy(node, arg_transform) instead."
    )


def move_not_a_node(moved: object, anchor: Node) -> TypeError:
    """`anchor.prepend(moved)` or `append` with something that is no Node."""
    return TypeError(
        f"cannot move {moved!r} next to %{anchor.name}: prepend and append move a Node "
        f"of the graph (got {type(moved).__name__}). To add a new node there, use "
        f"graph.inserting_after(%{anchor.name}) and graph.call_function (or create_node)."
    )


def map_arg_not_callable(fn: object) -> MisuseError:
    """`map_arg(a, fn)` with an `fn` that cannot be called."""
    return MisuseError(
        f"map_arg(a, fn): fn must be a callable, got {type(fn).__name__} {fn!r}. Pass the "
        "function to apply to each node, such as lambda n: env[n]."
    )


def meta_would_be_overwritten(node: Node) -> MisuseError:
    """`replace_all_uses_with(node, propagate_meta=True)` with a node that has meta."""
    return MisuseError(
        f"replace_all_uses_with(%{node.name}, propagate_meta=True): "
        f"%{node.name} already has meta keys {sorted(node.meta)}, "
        "which copying would overwrite. Clear them first or pass propagate_meta=False."
    )


def no_output_node(last: Node | None) -> MisuseError:
    """`output_node()` of a graph whose last node is no `output` node (or that has none)."""
    found = "is empty" if last is None else f"ends with %{last.name}, a {last.op} node"
    return MisuseError(
        f"output_node(): the graph {found}, but the output node is always its last node. "
        "Add one with graph.output(value), after every other node."
    )


def missing_target_warning(op: str, path: str) -> str:
    """The warning for a `get_attr` / `call_module` whose target the owning module lacks."""
    return (
        f"Attempted to insert a {op} Node with no underlying reference in the owning "
        f"GraphModule: {op}({path!r}) names no attribute of the owning module, so the "
        "graph will fail when it runs. Add it to the module first (add_submodule, setattr)."
    )


def no_submodule_warning(module_path: str, path: str) -> str:
    """torch.fx's first warning for `get_attr(path)`: `module_path` is no submodule."""
    return (
        f"Failed to fetch module {module_path}! get_attr({path!r}) reads {path.rpartition('.')[2]!r} "
        f"from {module_path!r}, which is no submodule of the owning module."
    )


def plain_attribute_warning(path: str, value: Any) -> str:
    """The warning for `get_attr(path)` on an attribute that is no parameter, buffer or module."""
    return (
        "Attempted to insert a get_attr Node with no underlying reference in the owning "
        f"GraphModule: get_attr({path!r}) names a plain {type(value).__name__}, not a "
        "parameter, buffer or submodule. Register it (register_buffer, nn.Parameter, "
        "add_submodule) so that copies and state_dict keep it."
    )


# The tracer's errors, worded here so that the tracer reads as the algorithm it is.


def no_traced_function(root: object, traced_func_name: str) -> NotTraceable:
    """The module `root` has no method `traced_func_name` to trace."""
    return NotTraceable(
        f"traced_func_name={traced_func_name} doesn't exist in "
        f"{type(root).__name__}: set the tracer's traced_func_name to a method of the "
        "module (by default it traces forward)."
    )


def not_a_function(fn: object, traced_func_name: str) -> NotTraceable:
    """`fn` is a callable but not a Python function, so it has no parameter names to read."""
    return NotTraceable(
        f"cannot trace {fn!r}: the tracer needs a Python function (or a module whose "
        f"{traced_func_name} is one), because it reads the parameter names from "
        "its code. Wrap the callable in a def."
    )


def self_in_star_args(qualname: str) -> SelfInStarArgs:
    """A module's `forward(*args)` takes `self` inside `*args`."""
    return SelfInStarArgs(
        f"cannot trace {qualname}: it takes `self` inside `*args` (``self`` "
        "argument cannot be part of *args expansion!). Name it: def forward(self, *args)."
    )


def module_not_in_root(module: object) -> NameError:
    """A module was called that has no path in the traced root module."""
    name = type(module).__name__
    return _no_path_in_root(
        f"a {name} module was called that is not a submodule of the traced module.",
        "a call_module node names its module by its path in the root module, and "
        "this one has no path (it was probably created inside forward).",
        f"create it in __init__ and store it as an attribute (self.layer = "
        f"nn.{name}(...)), or call the functional form (torch.nn.functional).",
    )


def value_not_in_root(kind: str) -> NameError:
    """A parameter or module (`kind`) was used as an argument that has no path in the
    traced root module (for a module, torch.fx raises `NotImplementedError` instead)."""
    return _no_path_in_root(
        f"a {kind} that is not part of the traced module was used.",
        f"a get_attr node reads a {kind} by its path in the root module, and this one "
        "has none (it was probably created inside forward, or belongs to another module).",
        f"create the {kind} in __init__ and store it as an attribute of the module.",
        ModuleArgumentNotInRoot if kind == "module" else NameError,
    )


def _no_path_in_root(what: str, why: str, fix: str, kind: type = NameError) -> NameError:
    """It is a `NameError`, the type torch.fx raises (and tests pin), not a
    `TraceError`; only its message has the `TraceError` shape: what, where in the
    user's code, why, and how to fix it."""
    return kind(str(untraceable(what, why, fix)))
