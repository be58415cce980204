"""Rewriting with Proxies, node by node, into a graph you build yourself.

A rewrite rule is easiest to read as ordinary Python:

    def relu_decomposition(x):
        return (x > 0) * x

Called on a Proxy, that function records `gt` and `mul` nodes. `Proxy(node,
GraphAppendingTracer(graph))` gives such a Proxy for any node, so the rule's
operations land in `graph`. `decompose` copies a graph node by node and, where
a rule exists for a node's target, records the rule instead of the copy:
torch.fx's documentation shows the same loop.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from ..codegen import GraphModule
from ..graph import Graph, Node, Tracer, map_aggregate, map_arg
from ..proxy import GraphAppendingTracer, Proxy


# --8<-- [start:decompose]
def decompose(
    module: torch.nn.Module, rules: dict[Callable, Callable], tracer_class: type[Tracer] = Tracer
) -> GraphModule:
    """Trace `module` and replace each call of a function in `rules` by what
    the rule records.

    Args:
        module: the module (or function) to trace.
        rules: function -> a rule that takes the same arguments, as Proxies,
            and computes the same result from other operations.
        tracer_class: the tracer used to trace `module`.

    Returns:
        A new GraphModule in which no `call_function` node calls a function of
        `rules` (unless a rule calls it again).
    """
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
        result = _call_rule(rule, node, args, kwargs)
        env[node] = map_aggregate(result, lambda a: a.node if isinstance(a, Proxy) else a)
    return GraphModule(old_tracer.root, new_graph)


# --8<-- [end:decompose]


def _call_rule(rule: Callable, node: Node, args: tuple, kwargs: dict) -> Any:
    try:
        return rule(*args, **kwargs)
    except Exception as error:
        error.add_note(
            f"While applying the rule {getattr(rule, '__name__', rule)!r} to node "
            f"%{node.name}: {node.format_node()}\nA rule gets the node's arguments "
            "as Proxies and must only do what a Proxy can record."
        )
        raise
