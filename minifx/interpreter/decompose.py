"""`decompose`: a graph copied node by node, with rules written as Python on Proxies
(`Proxy(node, GraphAppendingTracer(graph))`) recorded in place of the nodes they match."""

from __future__ import annotations

from typing import Any, Callable

import torch

from ..codegen import GraphModule
from ..graph import Graph, Node, Tracer, map_aggregate, map_arg
from ..proxy import GraphAppendingTracer, Proxy
from .errors import call_rule


# --8<-- [start:decompose]
def decompose(
    module: torch.nn.Module, rules: dict[Callable, Callable], tracer_class: type[Tracer] = Tracer
) -> GraphModule:
    """Trace `module` (with `tracer_class`) and replace each call of a function in
    `rules` (function -> rule) by what the rule, called on Proxies, records."""
    old_tracer = tracer_class()
    graph = old_tracer.trace(module)
    new_graph = Graph()
    tracer = GraphAppendingTracer(new_graph)
    env: dict[Node, Any] = {}  # old node -> what stands for it in new_graph
    for node in graph.nodes:
        rule = rules.get(node.target) if node.op == "call_function" else None
        if rule is None:
            env[node] = new_graph.node_copy(node, lambda n: env[n])
            continue
        args, kwargs = map_arg((node.args, node.kwargs), lambda n: Proxy(env[n], tracer))
        result = call_rule(rule, node, args, kwargs)
        env[node] = map_aggregate(result, lambda a: a.node if isinstance(a, Proxy) else a)
    return GraphModule(old_tracer.root, new_graph)


# --8<-- [end:decompose]
