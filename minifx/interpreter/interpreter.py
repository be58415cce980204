"""Running a graph node by node: the `Interpreter`.

Generated code (stage 3) runs a graph at full speed, but you cannot step into
it. An `Interpreter` runs the same graph one node at a time, calling one
method per opcode, so a subclass can watch or change every operation:

    run(*args)
     └─ run_node(node)                 for each node, in order
         ├─ fetch_args_kwargs_from_env(node)
         └─ placeholder / get_attr / call_function / call_method / call_module / output

Values live in `env` (Node -> value) and are dropped after their last use,
as the generated code drops them with `x = None`.

`arguments.py`, beside this file, holds the checks on what `run` and
`boxed_run` are given, with the error messages torch.fx users expect.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import torch

from ..graph import Graph, Node
from ..graph.liveness import last_uses
from ..proxy.ir import format_target
from .arguments import boxed_inputs, check_argument_count, graph_of, next_argument


# --8<-- [start:init]
class Interpreter:
    """Runs a graph node by node, with one overridable method per opcode.

    Subclass it and override `run_node` (to see every node) or one of
    `placeholder`, `get_attr`, `call_function`, `call_method`, `call_module`,
    `output` (to change what an opcode does):

        class NegSigmoidSwap(Interpreter):
            def call_function(self, target, args, kwargs):
                if target is torch.sigmoid:
                    return torch.neg(*args, **kwargs)
                return super().call_function(target, args, kwargs)

    Args:
        module: the module that owns the graph's state (parameters, buffers,
            submodules); usually a `GraphModule`.
        garbage_collect_values: drop each value from `env` after its last use,
            so memory stays as low as in the generated code. Pass `False` to
            keep every intermediate value in `env` for inspection.
        graph: the graph to run, instead of `module.graph`. `module` still
            provides the state.

    Attributes:
        module: the module passed in; `get_attr` and `call_module` look here.
        graph: the graph being run.
        garbage_collect_values: whether values are dropped after their last use.
        env: Node -> its value, during and after `run`.
        user_to_last_uses: Node -> the values to drop once it has run (empty
            when `garbage_collect_values` is `False`).
        submodules: every submodule of `module` by path, as `named_modules()`.
        extra_traceback: add a note naming the failing node to errors raised
            while running it (default `True`).
    """

    def __init__(
        self,
        module: torch.nn.Module,
        garbage_collect_values: bool = True,
        graph: Graph | None = None,
    ) -> None:
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else graph_of(module)
        self.env: dict[Node, Any] = {}
        self.garbage_collect_values = garbage_collect_values
        # Set to False to get errors without the note that names the node.
        self.extra_traceback = True
        self.user_to_last_uses = _values_to_drop(self.graph) if garbage_collect_values else {}

    # --8<-- [end:init]

    # --8<-- [start:run]
    def run(
        self,
        *args: Any,
        initial_env: dict[Node, Any] | None = None,
        enable_io_processing: bool = True,
    ) -> Any:
        """Run the graph on `args` and return what its output node returns.

        Args:
            *args: one value per placeholder, in order (the module's `forward`
                arguments).
            initial_env: values to start from, Node -> value. Nodes found there
                are not run, so a caller can skip part of the graph.
            enable_io_processing: take `args` and return the output as the
                generated `forward` does, through the graph's CodeGen
                (`graph.process_inputs`, `graph.process_outputs`): for
                structured `concrete_args`, the structures. Pass `False` to
                feed one value per placeholder and get the output node's value.

        Returns:
            The value of the output node (processed by the graph's CodeGen).

        Raises:
            TypeError: if there are more arguments than placeholders to fill.
            RuntimeError: if a placeholder without a default gets no value.
            Exception: whatever a node raises, with a note naming the node.
        """
        self.env = initial_env if initial_env is not None else {}
        # No arguments means the inputs are in `initial_env` already (as in
        # `boxed_run`): there is no structure to flatten.
        if enable_io_processing and args:
            args = tuple(self.graph.process_inputs(*args))
        check_argument_count(self, args)
        self.args_iter: Iterator[Any] = iter(args)
        for node in self.graph.nodes:
            if node not in self.env:
                self.env[node] = self._run_and_explain(node)
            if self.garbage_collect_values:
                for value in self.user_to_last_uses.get(node, []):
                    self.env.pop(value, None)
            if node.op == "output":
                output = self.env[node]
                return self.graph.process_outputs(output) if enable_io_processing else output
        return None

    def _run_and_explain(self, node: Node) -> Any:
        """`run_node(node)`, adding a note that names the node to any error."""
        try:
            return self.run_node(node)
        except Exception as error:
            if self.extra_traceback:
                error.add_note(self._describe(node))
            raise

    # --8<-- [end:run]

    def _describe(self, node: Node) -> str:
        note = (
            f"While running node %{node.name} ({node.op} {format_target(node.target)}) "
            f"in {type(self).__name__}:\n    {node.format_node()}"
        )
        if node.stack_trace:
            note += f"\nIt was traced from:\n{node.stack_trace.rstrip()}"
        return note + (
            "\nThe values computed so far are in the interpreter's `env`; "
            "pass garbage_collect_values=False to keep them all."
        )

    def boxed_run(self, args_list: list) -> Any:
        """Run with the arguments in a list, which is emptied first.

        The caller's list no longer holds the inputs, so each input tensor can
        be freed as soon as the graph is done with it.

        Raises:
            RuntimeError: if `args_list` does not have one value per placeholder.
        """
        return self.run(initial_env=boxed_inputs(self.graph, args_list))

    # --8<-- [start:run_node]
    def run_node(self, n: Node) -> Any:
        """Run one node: fetch its arguments' values, then call the method named
        after its opcode (`self.call_function(target, args, kwargs)`, ...)."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # --8<-- [end:run_node]

    # --8<-- [start:opcodes]
    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Any:
        """The next argument of `run`; the placeholder's default (`args[0]`) if none is left.

        A `*args` placeholder takes all remaining arguments (as a tuple); a
        `**kwargs` placeholder is an empty dict, since `run` takes no keywords.
        """
        if target.startswith("*"):
            return {} if target.startswith("**") else tuple(self.args_iter)
        return next_argument(self.args_iter, target, default=args)

    def get_attr(self, target: str, args: tuple, kwargs: dict) -> Any:
        """The module attribute at path `target` (a parameter, buffer or constant)."""
        return self.fetch_attr(target)

    def call_function(self, target: Any, args: tuple, kwargs: dict) -> Any:
        """`target(*args, **kwargs)`."""
        return target(*args, **kwargs)

    def call_method(self, target: str, args: tuple, kwargs: dict) -> Any:
        """`args[0].target(*args[1:], **kwargs)`."""
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target: str, args: tuple, kwargs: dict) -> Any:
        """Call the submodule at path `target` with `args` and `kwargs`."""
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target: str, args: tuple, kwargs: dict) -> Any:
        """The value the graph returns: the output node's only argument."""
        return args[0]

    # --8<-- [end:opcodes]

    # --8<-- [start:fetch]
    def fetch_attr(self, target: str) -> Any:
        """The attribute of `self.module` at the dotted path `target`.

        Raises:
            RuntimeError: if a step of the path does not exist.
        """
        value = self.module
        atoms = target.split(".")
        for depth, atom in enumerate(atoms):
            if not hasattr(value, atom):
                raise RuntimeError(
                    f"the graph reads {target!r}, but the module has no attribute "
                    f"{'.'.join(atoms[: depth + 1])!r}. Add it to the module (setattr, "
                    "add_submodule), or fix the node's target."
                )
            value = getattr(value, atom)
        return value

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple[tuple, dict]:
        """`n.args` and `n.kwargs` with every Node replaced by its value in `env`."""
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args: Any, n: Node) -> Any:
        """`args` with every Node replaced by its value in `env`; `n` is the node
        that uses them, named in the error.

        Lists and dicts come back as plain, mutable ones (a node stores them
        immutable): the generated code builds fresh ones on every call, and
        so does the Interpreter.

        Raises:
            RuntimeError: if a node has no value in `env`.
        """

        def value_of(node: Node) -> Any:
            if node not in self.env:
                raise RuntimeError(
                    f"%{n.name} uses %{node.name}, which has no value: it comes later in "
                    "the graph, or was dropped after what the interpreter computed as its "
                    "last use. Run graph.lint() to check the order."
                )
            return self.env[node]

        return _map_nodes(args, value_of)

    # --8<-- [end:fetch]


def _map_nodes(a: Any, fn: Callable[[Node], Any]) -> Any:
    """`map_arg(a, fn)`, but building plain lists and dicts instead of immutable ones."""
    if isinstance(a, Node):
        return fn(a)
    if isinstance(a, tuple):
        items = [_map_nodes(item, fn) for item in a]
        return type(a)(*items) if hasattr(a, "_fields") else tuple(items)
    if isinstance(a, list):
        return [_map_nodes(item, fn) for item in a]
    if isinstance(a, dict):
        return {key: _map_nodes(value, fn) for key, value in a.items()}
    if isinstance(a, slice):
        return slice(*(_map_nodes(part, fn) for part in (a.start, a.stop, a.step)))
    return a


def _values_to_drop(graph: Graph) -> dict[Node, list[Node]]:
    """Node -> the values to drop once it has run: those whose last use it is,
    and itself if nothing uses it (as the generated code drops them)."""
    drop = last_uses(graph)
    for node in graph.nodes:
        if not node.users and node.op != "output":
            drop.setdefault(node, []).append(node)
    return drop
