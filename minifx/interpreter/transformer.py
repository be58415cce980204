"""The `Transformer`: an `Interpreter` on Proxies, which record a new graph."""

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
    """Records into the new graph, keeps every submodule a leaf (the old graph decided
    what to trace through), and gives each new node the origin of the old one."""

    def __init__(self, graph: Graph, root: torch.nn.Module) -> None:
        super().__init__()
        self.graph = graph
        self.root = root
        self.current_node: Node | None = None

    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        """Always `True`: a `call_module` node stays one node in the new graph."""
        return True

    def create_node(self, *args: Any, **kwargs: Any) -> Node:
        """`Tracer.create_node`, then copy `current_node`'s stack trace and module stack."""
        node = super().create_node(*args, **kwargs)
        if self.current_node is not None:
            copy_origin(self.current_node, node)
        return node


# --8<-- [end:tracer]
# --8<-- [start:transformer]
class Transformer(Interpreter):
    """An Interpreter on Proxies: `transform()` returns what they record in `new_graph`
    as a `GraphModule`. A Proxy records method calls: `call_method` needs no override."""

    # --8<-- [task:4.4] "The Transformer" points=5 section=04-interpreter.md#the-transformer
    def __init__(self, module: GraphModule) -> None:
        super().__init__(module)
        old = self.graph
        self.new_graph = Graph(tracer_cls=old._tracer_cls, tracer_extras=old._tracer_extras)
        self.new_graph.pytree_info = old.pytree_info
        self.new_graph.set_codegen(old._codegen)  # same calling convention as the old one
        self.tracer = TransformerTracer(self.new_graph, module)

    def run_node(self, n: Node) -> Any:
        """`Interpreter.run_node`, with `n` as the tracer's `current_node` meanwhile."""
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
        """Run the graph on Proxies; the recorded graph, as a GraphModule on `self.module`."""
        result = self.run(enable_io_processing=False)
        old_output = next(iter(self.graph.find_nodes(op="output")), None)
        if old_output is not None:
            result = map_aggregate(result, lambda a: a.node if isinstance(a, Proxy) else a)
            self.new_graph.output(result).meta.update(old_output.meta)
        return GraphModule(self.module, self.new_graph)


# --8<-- [end-task:4.4]
# --8<-- [end:transformer]
