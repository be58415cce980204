"""minifx: torch.fx rebuilt from scratch, one stage per chapter.

`import minifx as fx` gives the public names of every stage, loaded lazily
(PEP 562): `import minifx` alone imports no stage, and `minifx.Proxy` imports
only stage 1. This keeps each stage importable without the later ones.
torch.fx's module names import too (`from minifx.node import Node`), each
as the minifx module that holds what torch.fx's holds.
"""

import importlib
import importlib.abc
import importlib.util
import sys

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
    "annotate": "minifx.graph.annotation",
    "node": "minifx.graph.node",
    "immutable_collections": "minifx.graph.immutable_collections",
    "graph_module": "minifx.codegen.graph_module",
    "_pytree": "minifx.codegen.pytree",
    "subgraph_rewriter": "minifx.passes.subgraph_rewriter",
    "_symbolic_trace": "minifx.codegen.tracing_names",
}

__all__ = sorted(_EXPORTS)


class _ModuleAliases(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Makes `from minifx.node import Node` work as `from torch.fx.node import Node` does.

    The names in `_MODULES` are no files, so Python's own finders cannot import them; this
    one, asked last, imports the minifx module behind the name and gives it back as is,
    so `minifx.node` and `minifx.graph.node` are the same module object.
    """

    def find_spec(self, fullname: str, path=None, target=None):
        prefix, _, name = fullname.partition(".")
        if prefix == __name__ and name in _MODULES:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        module = importlib.import_module(_MODULES[spec.name.partition(".")[2]])
        spec.loader_state = module.__spec__  # Python sets the alias's spec on it next
        return module

    def exec_module(self, module) -> None:
        """Nothing to run (the module ran when `create_module` imported it): give the
        module its own spec back, so that it stays what it was for `importlib`."""
        module.__spec__ = module.__spec__.loader_state


if not any(isinstance(finder, _ModuleAliases) for finder in sys.meta_path):
    sys.meta_path.append(_ModuleAliases())


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
