"""Copying and pickling a `GraphModule`, and retracing its saved code.

`GraphModule` inherits its copying methods from `CopyingMixin`.

- `copy.deepcopy(gm)` copies the graph and every submodule, parameter and
  buffer; `copy.copy(gm)` makes a new GraphModule that shares them.
- `pickle` saves the state and the generated *source*, not the graph, as
  torch.fx does: Python source stays readable across versions, and
  unpickling rebuilds the graph by tracing that source again (`retrace`).
- `import_block` writes the imports that recreate a source's globals, which
  pickling and `to_folder` need.

Each method that builds a GraphModule imports the class when it runs:
`graph_module.py` imports this module, so importing it back at the top would
be a cycle.
"""

from __future__ import annotations

import builtins
import copy
import importlib
import pickle
from typing import TYPE_CHECKING, Any

import torch

from ..graph.graph import Graph
from ..graph.tracer import Tracer
from .code_cache import register_source
from .python_code import CUSTOM_BUILTINS, python_code

if TYPE_CHECKING:
    from .graph_module import GraphModule


# --8<-- [start:copying]
class CopyingMixin(torch.nn.Module):
    """`copy.deepcopy`, `copy.copy` and `pickle` for a GraphModule, which inherits them."""

    graph: Graph
    meta: dict[str, Any]

    def __deepcopy__(self, memo: dict) -> GraphModule:
        """A copy with its own graph, submodules, parameters and buffers."""
        from .graph_module import GraphModule  # see the module docstring

        copied = GraphModule.__new__(type(self))
        memo[id(self)] = copied  # before the state: `gm.meta["m"] = gm` must find the copy
        state = copy.deepcopy(self.__dict__, memo)
        GraphModule.__init__(copied, StateOf(state), state["_graph"], self._get_name())
        copied.meta = state.get("meta", {})
        # Attributes that are no state of the graph, kept as torch.fx keeps them (torch.ao's
        # prepare_fx stores the `preserved_attributes` it was asked to keep there).
        for name, value in copied.meta.get(_USER_PRESERVED_ATTRIBUTES_KEY, {}).items():
            setattr(copied, name, value)
        for hooks in (
            "_state_dict_hooks",
            "_load_state_dict_pre_hooks",
            "_load_state_dict_post_hooks",
        ):
            setattr(copied, hooks, state[hooks])
        return copied

    def __copy__(self) -> GraphModule:
        """A new GraphModule sharing this one's graph and state."""
        from .graph_module import GraphModule  # see the module docstring

        copied = GraphModule(self, self.graph, self._get_name())
        copied.meta = self.meta
        return copied

    def __reduce__(self) -> tuple:
        """Pickle the state and the generated code; unpickling retraces the code.

        As in torch.fx, the graph itself is not pickled: Python source stays
        readable across versions, and retracing it rebuilds the graph.
        """
        body = {k: v for k, v in self.__dict__.items() if k != "_graph"}
        code = python_code(self.graph)  # the graph as it is now, as torch.fx recompiles here
        body["_code"], body["_graphmodule_cls_name"] = code.src, self._get_name()
        return (reduce_graph_module, (body, import_block(code.globals)))

    def _replicate_for_data_parallel(self) -> GraphModule:
        """The replica `nn.DataParallel` runs on each device: a `copy.copy`, as in torch.fx.

        (`nn.Module`'s own version would make an instance of a new class,
        without the generated `forward`.)
        """
        replica = self.__copy__()
        object.__setattr__(replica, "_is_replica", True)
        return replica


def reduce_graph_module(body: dict[str, Any], import_block: str) -> GraphModule:
    """Unpickle, under torch.fx's name and arguments: exec the imports and the code
    (`body["_code"]`), retrace it (submodules stay leaves), rebuild the module.

    Args:
        body: the pickled module's `__dict__`, without its graph, plus `_code` and
            `_graphmodule_cls_name` (the class name to give it back).
        import_block: the imports the code needs (`import torch`, ...).
    """
    from .graph_module import GraphModule  # see the module docstring

    root, graph = retrace(body, import_block + body["_code"])
    gm = GraphModule(root, graph, body.get("_graphmodule_cls_name", "GraphModule"))
    for name, value in body.items():  # plain attributes the graph does not name
        if not hasattr(gm, name):
            setattr(gm, name, value)
    return gm


# --8<-- [end:copying]


def tracer_of(graph: Graph) -> tuple[type[Tracer] | None, dict[str, Any]]:
    """The tracer class (and its extra `trace` arguments) that made `graph`, to
    retrace the saved code the same way; no class when it cannot be pickled by
    name (a class defined inside a function)."""
    tracer_cls = getattr(graph, "_tracer_cls", None)
    if "<locals>" in getattr(tracer_cls, "__qualname__", "<locals>"):
        tracer_cls = None
    return tracer_cls, getattr(graph, "_tracer_extras", None) or {}


# The `meta` key of a dict of attributes that `copy.deepcopy(gm)` sets on the copy too.
_USER_PRESERVED_ATTRIBUTES_KEY = "_user_preserved_attributes"


class StateOf(torch.nn.Module):
    """A module whose `__dict__` is a GraphModule's saved state.

    A GraphModule built from it takes every child, parameter and buffer, not
    only the ones its graph names: deepcopy and unpickling keep everything.
    """

    def __init__(self, state: dict[str, Any]) -> None:
        super().__init__()
        self.__dict__ = state

    def everything(self) -> list[tuple[str, None]]:
        names = [name for name, _ in self.named_children()]
        names += [name for name, _ in self.named_parameters(recurse=False)]
        names += [name for name, _ in self.named_buffers(recurse=False)]
        return [(name, None) for name in names]


# torch.fx's name for the same idea; code written for torch.fx (torchvision's
# `DualGraphModule.__deepcopy__`) builds one to copy a GraphModule's state.
_CodeOnlyModule = StateOf


# --8<-- [start:retrace]
def retrace(state: dict[str, Any], source: str) -> tuple[StateOf, Any]:
    """Rebuild a graph from pickled source: exec it, then trace its `forward`.

    Submodules are kept as leaves: they were leaves (`call_module` nodes) in
    the graph the source came from.
    """
    namespace: dict[str, Any] = {}
    exec(compile(source, register_source(source), "exec", dont_inherit=True), namespace)
    root = type("CodeOnlyModule", (StateOf,), {"forward": namespace["forward"]})(state)
    tracer_cls = state.get("_tracer_cls") or Tracer

    class KeepModules(tracer_cls):
        def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
            return True

    graph = KeepModules().trace(root, **state.get("_tracer_extras", {}))
    graph._tracer_cls = tracer_cls
    return root, graph


# --8<-- [end:retrace]


def import_block(globals_: dict[str, Any]) -> str:
    """Import statements that define every global of a generated source.

    Raises:
        pickle.PicklingError: if a global cannot be imported by name (a
            lambda, a local function, a tensor constant, ...).
    """
    lines = set()
    for name, value in globals_.items():
        builtin = CUSTOM_BUILTINS.get(name)
        if builtin is not None and builtin[0] is value:
            lines.add(builtin[1])
        elif getattr(builtins, name, None) is value:
            continue  # `getattr`, `int`, ...: always there
        else:
            lines.add(_import_statement(name, value))
    imports_first = sorted(lines, key=lambda line: (not line.startswith(("import", "from")), line))
    return "\n".join(imports_first) + "\n"


def _import_statement(name: str, value: Any) -> str:
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and _lookup(module, qualname) is value:
        first, *rest = qualname.split(".")
        statement = f"from {module} import {first} as {name}"
        return statement + (f"; {name} = {name}.{'.'.join(rest)}" if rest else "")
    raise pickle.PicklingError(
        f"The generated code refers to {name} = {value!r:.80}, which cannot be imported by "
        "name, so the GraphModule cannot be saved as source (pickle, to_folder). How to fix: "
        "use a module-level function instead of a lambda or local function, and keep tensors "
        "as buffers reached through get_attr."
    )


def _lookup(module: str, qualname: str) -> Any:
    try:
        value: Any = importlib.import_module(module)
        for part in qualname.split("."):
            value = getattr(value, part)
    except Exception:  # not importable by name: the caller reports it
        return None
    return value
