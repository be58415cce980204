"""`GraphModule`: an `nn.Module` made of a graph's state and the graph's code.

A GraphModule holds two things:

- *state*: the submodules, parameters and buffers that the graph's
  `call_module` and `get_attr` nodes name, taken from the root module (the
  same objects, not copies), at the same dotted paths;
- *code*: `forward`, generated from the graph by `python_code` and compiled
  with `exec`. After editing `gm.graph`, call `gm.recompile()`.

Each GraphModule gets its own subclass (as in torch.fx), because `forward`
must be a method of the class for `nn.Module.__call__` and for retracing,
and two GraphModules have different code.

Parity features live beside this file: `copying.py` (deepcopy, copy,
pickling and the retracing it needs) and `submodules.py` (adding and
deleting submodules; a dict as the root) as classes GraphModule inherits
from; `readable.py`
(`print_readable`) and `to_folder.py` (`to_folder`) as functions its methods
call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from ..graph.graph import Graph
from ..graph.node import Node
from . import copying
from .copying import CopyingMixin, StateOf
from .python_code import PythonCode, python_code
from .readable import readable_text
from .source import compile_forward, explain_error
from .submodules import SubmodulesMixin, install, install_from_dict, state_targets
from .to_folder import write_folder

_MISSING = object()  # _child's "no such attribute" (None is a value an attribute may hold)


# --8<-- [start:copy_attr]
def _copy_attr(
    root: torch.nn.Module, gm: torch.nn.Module, target: str, node: Node | None = None
) -> None:
    """Make `gm.<target>` the same object as `root.<target>`, adding empty
    `nn.Module`s for the parents on the path (`layer1` for `layer1.conv`)."""
    *parents, leaf = target.split(".")
    source, destination = root, gm
    for part in parents:
        source = _child(source, part, target, node)
        existing = getattr(destination, part, None)
        if existing is source:  # the whole parent is installed already
            return
        if existing is None:
            existing = torch.nn.Module()
            setattr(destination, part, existing)
        destination = existing
    install(destination, leaf, _child(source, leaf, target, node))


# --8<-- [end:copy_attr]


def _child(module: Any, part: str, target: str, node: Node | None) -> Any:
    child = getattr(module, part, _MISSING)  # one lookup: nn.Module's __getattr__ is slow Python
    if child is _MISSING:
        where = f"node %{node.name} ({node.op})" if node is not None else "the graph"
        raise AttributeError(
            f"GraphModule: {where} refers to {target!r}, but the root module has no "
            f"attribute {part!r} on that path ({type(module).__name__} has none). "
            "How to fix: add the attribute to the root (for a submodule, "
            "gm.add_submodule), or correct the node's target."
        )
    return child


class GraphModule(CopyingMixin, SubmodulesMixin, torch.nn.Module):
    """An `nn.Module` whose `forward` is generated from a `Graph`.

    Args:
        root: where the graph's `get_attr` and `call_module` targets live: a
            module (the objects are shared, not copied), or a dict from
            target (`"layer1.conv"`) to object.
        graph: the graph to run. It becomes `self.graph`, owned by this module.
        class_name: the name shown by `repr`, `print_readable` and errors.

    Raises:
        AttributeError: if `root` lacks a target the graph refers to.
        RuntimeError: if `root` is a dict without such a target (torch.fx's type).
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
        self, root: torch.nn.Module | dict[str, Any], graph: Graph, class_name: str = "GraphModule"
    ) -> None:
        super().__init__()
        type(self).__name__ = type(self).__qualname__ = class_name
        if isinstance(root, torch.nn.Module):
            self.training = root.training
            targets = state_targets(graph)
            if isinstance(root, StateOf):  # deepcopy and unpickling keep everything
                targets = root.everything() + targets
            for target, node in targets:
                _copy_attr(root, self, target, node)
        elif isinstance(root, dict):
            install_from_dict(self, root, state_targets(graph))
        else:
            raise TypeError(
                f"GraphModule(root, graph): root must be an nn.Module or a dict from target "
                f"to object, not {type(root).__name__}."
            )
        self.meta: dict[str, Any] = {}
        # How the graph was traced, so that unpickling can retrace its code the same way.
        self._tracer_cls, self._tracer_extras = copying.tracer_of(graph)
        self.graph = graph

    # --8<-- [end:init]

    @property
    def graph(self) -> Graph:
        """The graph; assigning a new one takes ownership of it and recompiles."""
        return self._graph

    @graph.setter
    def graph(self, graph: Graph) -> None:
        if not isinstance(graph, Graph):
            raise TypeError(
                f"GraphModule.graph must be a minifx Graph, not {type(graph).__name__}."
            )
        self._graph = graph
        graph.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The source of the generated `forward`."""
        return self._code

    # --8<-- [start:recompile]
    def recompile(self) -> PythonCode:
        """Generate `forward` again from `self.graph`; call it after editing the graph."""
        if self._graph.pytree_info is not None:
            self._in_spec = self._graph.pytree_info.in_spec
            self._out_spec = self._graph.pytree_info.out_spec
        code = python_code(self._graph, root_module="self")
        self._code, self._lineno_map, self._prologue_start = (
            code.src,
            code.lineno_map,
            code.prologue_start,
        )
        # The file name points at the traced code (`..._co_fields`, noted by the Tracer).
        co_fields = getattr(self._graph, "_co_fields", None)
        type(self).forward, self._source_file = compile_forward(code, co_fields)
        for child in self.children():
            if isinstance(child, GraphModule):
                child.recompile()
        return code

    # --8<-- [end:recompile]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except Exception as error:
            explain_error(error, self)
            raise

    def print_readable(self, print_output: bool = True) -> str:
        """The code of this module and of its GraphModule children, as a class.

        Each group of nodes is preceded by a comment saying where it came from
        (its stack trace, when the tracer recorded one).
        """
        text = readable_text(self, self._get_name())
        if print_output:
            print(text)
        return text

    def __str__(self) -> str:
        return "\n".join(
            [
                super().__str__(),
                self._code,
                "# To see more debug info, please use `graph_module.print_readable()`",
            ]
        )

    def to_folder(self, folder: str | Path, module_name: str = "FxModule") -> None:
        """Write this module as a Python package that imports and runs on its own.

        `folder/module.py` defines `class <module_name>(torch.nn.Module)` with
        the generated `forward`; the weights go to `folder/state_dict.pt` and
        submodules without a simple repr to `folder/<name>.pt`. Then
        `from folder import <module_name>` works from the folder's parent.
        """
        write_folder(self, folder, module_name)
