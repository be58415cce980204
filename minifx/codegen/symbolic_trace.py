"""`symbolic_trace`: module (or function) in, `GraphModule` out."""

from __future__ import annotations

from typing import Any, Callable

import torch

from ..graph.tracer import Tracer
from .graph_module import GraphModule


# --8<-- [start:symbolic_trace]
def symbolic_trace(
    root: torch.nn.Module | Callable, concrete_args: dict[str, Any] | None = None
) -> GraphModule:
    """Trace `root` with the default `Tracer` and wrap the graph in a `GraphModule`.

    Args:
        root: an `nn.Module` or a function; the GraphModule is named after its class.
        concrete_args: inputs to specialise the graph to (see `Tracer.trace`).
    """
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, torch.nn.Module) else root.__name__
    return GraphModule(tracer.root, graph, name)


# --8<-- [end:symbolic_trace]
