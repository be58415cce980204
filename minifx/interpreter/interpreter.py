"""The `Interpreter`: a graph run node by node, one overridable method per opcode.
`arguments.py` checks what `run` is given; `errors.py` words the errors."""

from __future__ import annotations

from typing import Any, Iterator

from torch import nn

from ..graph import Graph, Node
from ..graph.liveness import last_uses
from .arguments import boxed_inputs, check_argument_count, graph_of, map_nodes, next_argument
from .errors import missing_attribute, missing_value, running_note


# --8<-- [start:init]
class Interpreter:
    """Runs a graph node by node; override `run_node` or an opcode's method.

    Args:
        module: the module that owns the graph's state; usually a `GraphModule`.
        garbage_collect_values: drop each value from `env` after its last use.
        graph: the graph to run, instead of `module.graph`.

    Attributes:
        env: Node -> its value, during and after `run`.
        user_to_last_uses: Node -> the values to drop once it has run.
        extra_traceback: add a note naming the failing node to its errors.
    """

    def __init__(
        self, module: nn.Module, garbage_collect_values: bool = True, graph: Graph | None = None
    ) -> None:
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else graph_of(module)
        self.env: dict[Node, Any] = {}
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        self.user_to_last_uses = _values_to_drop(self.graph) if garbage_collect_values else {}

    # --8<-- [end:init]
    # --8<-- [start:run]
    # --8<-- [task:4.3] "run and run_node" points=5 section=04-interpreter.md#the-interpreter
    def run(
        self, *args: Any, initial_env: dict | None = None, enable_io_processing: bool = True
    ) -> Any:
        """Run the graph on `args`, one value per placeholder, and return its output.

        `initial_env` (Node -> value): values to start from; their nodes are not run.
        `enable_io_processing`: take `args` and return the output as `forward` does.
        Raises `check_argument_count`'s `TypeError` unless `args` fit the placeholders."""
        self.env = initial_env if initial_env is not None else {}
        # No arguments: the inputs are in `initial_env` (`boxed_run`), nothing to flatten.
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
        try:
            return self.run_node(node)
        except Exception as error:
            if self.extra_traceback:
                error.add_note(running_note(self, node))
            raise

    # --8<-- [end-task:4.3]
    # --8<-- [end:run]
    def boxed_run(self, args_list: list) -> Any:
        """Run on a list of arguments, emptied first so that each input can be freed early."""
        return self.run(initial_env=boxed_inputs(self.graph, args_list))

    # --8<-- [start:run_node]
    # --8<-- [task:4.3]
    def run_node(self, n: Node) -> Any:
        """Fetch the values of the node's arguments; call the method named after its opcode."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # --8<-- [end-task:4.3]
    # --8<-- [end:run_node]
    # --8<-- [start:opcodes]
    # --8<-- [task:4.2] "One method per opcode" points=5 section=04-interpreter.md#the-interpreter
    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Any:
        """The next argument of `run`, else the default; `*args` gets the rest, `**kwargs` `{}`."""
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

    # --8<-- [end-task:4.2]
    # --8<-- [end:opcodes]
    # --8<-- [start:fetch]
    # --8<-- [task:4.1] "Fetching values" points=5 section=04-interpreter.md#the-interpreter
    def fetch_attr(self, target: str) -> Any:
        """The attribute of `self.module` at the dotted path `target`; where an atom is missing,
        raises `missing_attribute(target, the path up to that atom)` (a `RuntimeError`)."""
        value = self.module
        atoms = target.split(".")
        for depth, atom in enumerate(atoms):
            if not hasattr(value, atom):
                raise missing_attribute(target, ".".join(atoms[: depth + 1]))
            value = getattr(value, atom)
        return value

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple[tuple, dict]:
        """`n.args` and `n.kwargs` with every Node replaced by its value in `env`."""
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args: Any, n: Node) -> Any:
        """`args` (of node `n`) with every Node replaced by its value, in plain lists and dicts;
        a Node with no value in `env` raises `missing_value(n, node)` (a `RuntimeError`)."""

        def value_of(node: Node) -> Any:
            if node not in self.env:
                raise missing_value(n, node)
            return self.env[node]

        return map_nodes(args, value_of)

    # --8<-- [end-task:4.1]
    # --8<-- [end:fetch]


def _values_to_drop(graph: Graph) -> dict[Node, list[Node]]:
    """Node -> the values to drop once it has run: its last uses, and itself if unused."""
    drop = last_uses(graph)
    for node in graph.nodes:
        if not node.users and node.op != "output":
            drop.setdefault(node, []).append(node)
    return drop
