"""Stage 4: the Interpreter and the Transformer (chapter 4).

An `Interpreter` runs a graph node by node, with one overridable method per
opcode; a `Transformer` runs it on Proxies and so records a new graph;
`decompose` rewrites a graph with rules written as ordinary Python on Proxies.
Imports stages 1–3 only.
"""

from .decompose import decompose
from .interpreter import Interpreter
from .transformer import Transformer, TransformerTracer

__all__ = ["Interpreter", "Transformer", "TransformerTracer", "decompose"]
