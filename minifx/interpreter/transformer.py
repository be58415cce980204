"""Re-tracing a graph into a new one: the `Transformer`.

A `Transformer` is an `Interpreter` whose values are Proxies. Running the old
graph on Proxies records every operation again, into a new graph: the result
is a copy. Override `call_function` (or any opcode method) to return something
else, and the copy has the change:

    class ReluToGelu(Transformer):
        def call_function(self, target, args, kwargs):
            if target is torch.relu:
                return torch.nn.functional.gelu(*args, **kwargs)   # recorded, not run
            return super().call_function(target, args, kwargs)

    new_gm = ReluToGelu(gm).transform()
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

from ..codegen import GraphModule
from ..graph import Graph, Node, Tracer, map_aggregate
from ..graph.tracer_options import copy_origin
from ..proxy import Proxy
from .interpreter import Interpreter


# --8<-- [start:tracer]
class TransformerTracer(Tracer):
    """The tracer a Transformer's Proxies record through.

    It appends to the new graph, treats every submodule as a leaf (the old
    graph already decided what to trace through), and gives each new node the
    stack trace and module stack of the old node being transformed.
    """

    def __init__(self, graph: Graph, root: torch.nn.Module) -> None:
        super().__init__()
        self.graph = graph
        self.root = root
        self.current_node: Node | None = None

    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        """Always `True`: a `call_module` node stays one node in the new graph."""
        return True

    def create_node(
        self,
        kind: str,
        target: Any,
        args: tuple,
        kwargs: dict,
        name: str | None = None,
        type_expr: Any = None,
    ) -> Node:
        """`Tracer.create_node`, then give the new node the origin of `current_node`
        (the old node being transformed): its stack trace and module stack."""
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        if self.current_node is not None:
            copy_origin(self.current_node, node)
        return node


# --8<-- [end:tracer]


# --8<-- [start:transformer]
class Transformer(Interpreter):
    """An Interpreter that runs the graph on Proxies and returns the new graph
    they record, as a `GraphModule`.

    Each opcode method records its node into `self.new_graph` instead of
    computing a value. `call_method` and `output` need no change: calling a
    method on a Proxy records it, and the output is the Proxies' structure.

    Args:
        module: the `GraphModule` to transform.

    Attributes:
        new_graph: the graph being recorded.
        tracer: the `TransformerTracer` that records into `new_graph`.
    """

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module)
        old = self.graph
        self.new_graph = Graph(tracer_cls=old._tracer_cls, tracer_extras=old._tracer_extras)
        self.new_graph.pytree_info = old.pytree_info
        self.new_graph.set_codegen(old._codegen)  # same calling convention as the old one
        self.tracer = TransformerTracer(self.new_graph, module)

    def run_node(self, n: Node) -> Any:
        """`Interpreter.run_node`, with `n` set as the tracer's `current_node`
        while it runs, so the nodes it records get `n`'s stack trace."""
        self.tracer.current_node = n
        try:
            return super().run_node(n)
        finally:
            self.tracer.current_node = None

    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        """A new placeholder, with the old one's default value if it has one."""
        default = args[0] if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        """A new `get_attr` node for the same attribute."""
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_function(self, target: Any, args: tuple, kwargs: dict) -> Any:
        """A new `call_function` node; override to record something else."""
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_module(self, target: str, args: tuple, kwargs: dict) -> Any:
        """A new `call_module` node for the same submodule."""
        submodule = self.fetch_attr(target)
        return self.tracer.call_module(submodule, submodule.forward, args, kwargs)

    def transform(self) -> GraphModule:
        """Run the whole graph on Proxies and return the recorded graph as a
        `GraphModule` that shares `self.module`'s state."""
        result = self.run(enable_io_processing=False)
        old_output = next(iter(self.graph.find_nodes(op="output")), None)
        if old_output is not None:
            new_output = self.new_graph.output(
                map_aggregate(result, lambda a: a.node if isinstance(a, Proxy) else a)
            )
            new_output.meta.update(old_output.meta)
        return GraphModule(self.module, self.new_graph)


# --8<-- [end:transformer]
