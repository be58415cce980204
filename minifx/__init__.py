"""minifx: torch.fx rebuilt from scratch, one stage per chapter.

`import minifx as fx` gives the public names of every stage, loaded lazily
(PEP 562): `import minifx` alone imports no stage, and `minifx.Proxy` imports
only stage 1. This keeps each stage importable without the later ones.
"""

import importlib

# The stages in the order of the book; each imports only the ones before it.
STAGES = ("proxy", "graph", "codegen", "interpreter", "passes")

# Public name -> the stage that defines it.
_EXPORTS = {
    "Proxy": "proxy",
    "Attribute": "proxy",
    "TraceError": "proxy",
    "TracerBase": "proxy",
    "GraphAppendingTracer": "proxy",
    "trace_to_tape": "proxy",
    "Graph": "graph",
    "Node": "graph",
    "map_arg": "graph",
    "map_aggregate": "graph",
    "Tracer": "graph",
    "RewritingTracer": "graph",
    "annotate": "graph",
    "wrap": "graph",
    "PH": "graph",
    "has_side_effect": "graph",
    "CodeGen": "codegen",
    "PHBase": "graph",
    "PHWithMeta": "graph",
    "ProxyableClassMeta": "graph",
    "GraphModule": "codegen",
    "PythonCode": "codegen",
    "python_code": "codegen",
    "symbolic_trace": "codegen",
    "Interpreter": "interpreter",
    "Transformer": "interpreter",
    "replace_pattern": "passes",
}

# torch.fx's modules, by the names code written for torch.fx reaches them as `fx.<name>`.
_MODULES = {
    "node": "minifx.graph.node",
    "immutable_collections": "minifx.graph.immutable_collections",
    "graph_module": "minifx.codegen.graph_module",
    "_pytree": "minifx.codegen.pytree",
    "subgraph_rewriter": "minifx.passes.subgraph_rewriter",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in STAGES:
        return importlib.import_module(f"minifx.{name}")
    if name in _MODULES:
        return importlib.import_module(_MODULES[name])
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"minifx.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'minifx' has no attribute {name!r}")


def __dir__():
    return sorted([*__all__, *STAGES, *_MODULES])
