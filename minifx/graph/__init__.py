"""Stage 2: the six-opcode Graph and the module-aware Tracer (chapter 2).

A `Graph` is a doubly linked list of `Node`s, each one operation with one of
six opcodes (`placeholder`, `get_attr`, `call_function`, `call_method`,
`call_module`, `output`). `Tracer().trace(module)` builds one from an
`nn.Module`, using stage 1's `Proxy` unchanged.
"""

from .annotation import annotate
from .graph import Graph
from .node import Node, map_aggregate, map_arg
from .placeholders import PH, PHBase, PHWithMeta
from .proxyable import ProxyableClassMeta
from .rewriter import RewritingTracer
from .side_effects import has_side_effect
from .tracer import Tracer
from .wrapping import wrap

__all__ = [
    "Graph",
    "Node",
    "map_arg",
    "map_aggregate",
    "Tracer",
    "wrap",
    "PH",
    "PHBase",
    "PHWithMeta",
    "ProxyableClassMeta",
    "has_side_effect",
    "RewritingTracer",
    "annotate",
]
