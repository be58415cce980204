"""`GraphModule`: the state a graph reads (the root's own objects) plus `forward`, generated
from the graph. Parity features are mixins from `copying.py`, `submodules.py`, `readable.py`
and `to_folder.py`; torch.fx.graph_module's other names here come from `copying.py`."""

from __future__ import annotations

from typing import Any

from torch import nn

from ..graph.errors import NotAGraph, NotAModuleOrDict
from ..graph.graph import Graph
from ..graph.node import Node
from .codegen import PythonCode
from .copying import _USER_PRESERVED_ATTRIBUTES_KEY as _USER_PRESERVED_ATTRIBUTES_KEY
from .copying import CopyingMixin, StateOf, reduce_graph_module, tracer_of  # noqa: F401
from .copying import _CodeOnlyModule as _CodeOnlyModule
from .python_code import python_code
from .readable import ReadableMixin
from .source import compile_forward, explain_error
from .submodules import (
    SubmodulesMixin,
    child_at,
    find_attribute,
    install,
    install_from_dict,
    state_targets,
)
from .to_folder import ToFolderMixin


# --8<-- [start:copy_attr]
# --8<-- [task:3.3] "Copy what the graph uses" points=5 section=03-codegen.md#graphmodule-state-plus-code
def _copy_attr(root: nn.Module, gm: nn.Module, target: str, node: Node | None = None) -> None:
    """Make `gm.<target>` the same object as `root.<target>`, adding empty
    `nn.Module`s for the parents on the path (`layer1` for `layer1.conv`)."""
    *parents, leaf = target.split(".")
    source, destination = root, gm
    for part in parents:
        source = child_at(source, part, target, node)
        existing = find_attribute(destination, part, None)
        if existing is source:  # the whole parent is installed already
            return
        if existing is None:
            existing = nn.Module()
            setattr(destination, part, existing)
        destination = existing
    install(destination, leaf, child_at(source, leaf, target, node))


# --8<-- [end-task:3.3]
# --8<-- [end:copy_attr]


class GraphModule(CopyingMixin, SubmodulesMixin, ReadableMixin, ToFolderMixin, nn.Module):
    """An `nn.Module` whose `forward` is generated from a `Graph`.

    Args:
        root: where the graph's targets live: a module (its objects are shared,
            not copied), or a dict from target (`"layer1.conv"`) to object.
        graph: the graph to run; it becomes `self.graph`, owned by this module.
        class_name: the name shown by `repr`, `print_readable` and errors.

    Raises:
        AttributeError: if `root` lacks a target (RuntimeError if `root` is a dict).
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> GraphModule:
        # A fresh subclass per instance: each holds its own generated forward.
        base = next(c for c in cls.__mro__ if not c.__dict__.get("_one_per_instance", False))
        per_instance = type(
            base.__name__, (base,), {"_one_per_instance": True, "__module__": base.__module__}
        )
        return super().__new__(per_instance)

    # --8<-- [start:init]
    def __init__(
        self, root: nn.Module | dict[str, Any], graph: Graph, class_name: str = "GraphModule"
    ) -> None:
        super().__init__()
        type(self).__name__ = type(self).__qualname__ = class_name
        if isinstance(root, nn.Module):
            self.training = root.training
            targets = state_targets(graph)
            if isinstance(root, StateOf):  # deepcopy and unpickling keep everything
                targets = root.everything() + targets
            for target, node in targets:
                _copy_attr(root, self, target, node)
        elif isinstance(root, dict):
            install_from_dict(self, root, state_targets(graph))
        else:
            raise NotAModuleOrDict(
                f"GraphModule(root, graph): root must be an nn.Module or a dict from target "
                f"to object, not {type(root).__name__}."
            )
        self.meta: dict[str, Any] = {}
        # How the graph was traced, so that unpickling can retrace its code the same way.
        self._tracer_cls, self._tracer_extras = tracer_of(graph)
        self.graph = graph

    # --8<-- [end:init]
    @property
    def graph(self) -> Graph:
        """The graph; assigning a new one takes ownership of it and recompiles."""
        return self._graph

    # --8<-- [task:3.4] "recompile" points=5 section=03-codegen.md#changing-the-code-recompile
    @graph.setter
    def graph(self, graph: Graph) -> None:
        if not isinstance(graph, Graph):
            raise NotAGraph(
                f"GraphModule.graph must be a minifx Graph, not {type(graph).__name__}."
            )
        self._graph = graph
        graph.owning_module = self
        self.recompile()

    # --8<-- [end-task:3.4]
    @property
    def code(self) -> str:
        """The source of the generated `forward`."""
        return self._code

    # --8<-- [start:recompile]
    # --8<-- [task:3.4]
    def recompile(self) -> PythonCode:
        """Generate `forward` again from `self.graph`; call it after editing the graph."""
        if self._graph.pytree_info is not None:
            self._in_spec = self._graph.pytree_info.in_spec
            self._out_spec = self._graph.pytree_info.out_spec
        code = python_code(self._graph, root_module="self")
        self._code, self._lineno_map = code.src, code._lineno_map
        self._prologue_start = code._prologue_start
        # The file name points at the traced code (`..._co_fields`, noted by the Tracer).
        co_fields = getattr(self._graph, "_co_fields", None)
        type(self).forward, self._source_file = compile_forward(code, co_fields)
        for child in self.children():
            if isinstance(child, GraphModule):
                child.recompile()
        return code

    # --8<-- [end-task:3.4]
    # --8<-- [end:recompile]
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except Exception as error:
            explain_error(error, self)
            raise
