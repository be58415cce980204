"""`minifx._symbolic_trace`: what code written for torch.fx imports from torch.fx's module
of that name (`from torch.fx._symbolic_trace import PHBase, PHWithMeta`), gathered from
the modules that define it."""

from ..graph.placeholders import PH, PHBase, PHWithMeta
from ..graph.proxyable import ProxyableClassMeta
from ..graph.tracer import Tracer
from ..graph.wrapping import _wrapped_methods_to_patch, wrap
from .graph_module import GraphModule
from .symbolic_trace import symbolic_trace

__all__ = [
    "GraphModule",
    "PH",
    "PHBase",
    "PHWithMeta",
    "ProxyableClassMeta",
    "Tracer",
    "_wrapped_methods_to_patch",
    "symbolic_trace",
    "wrap",
]
