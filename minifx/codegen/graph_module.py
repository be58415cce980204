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
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import torch

from ..graph.graph import Graph
from ..graph.node import get_path
from .python_code import PythonCode, python_code
from .source import StateOf, compile_forward, explain_error, import_block, module_source, retrace


_MISSING = object()  # _child's "no such attribute" (None is a value an attribute may hold)


# --8<-- [start:copy_attr]
def _copy_attr(root: torch.nn.Module, gm: torch.nn.Module, target: str, node: Any = None) -> None:
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
    _install(destination, leaf, _child(source, leaf, target, node))
# --8<-- [end:copy_attr]


def _child(module: Any, part: str, target: str, node: Any) -> Any:
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


def _install(module: torch.nn.Module, name: str, value: Any) -> None:
    """Set an attribute; a plain tensor becomes a buffer, so it moves with `.to()`."""
    if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
        module.register_buffer(name, value)
    else:
        setattr(module, name, value)


def _assign_attr(value: Any, gm: torch.nn.Module, target: str) -> None:
    """`gm.<target> = value`, adding empty parent modules as needed."""
    *parents, leaf = target.split(".")
    for part in parents:
        if getattr(gm, part, None) is None:
            setattr(gm, part, torch.nn.Module())
        gm = getattr(gm, part)
    _install(gm, leaf, value)


class GraphModule(torch.nn.Module):
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
        per_instance = type(base.__name__, (base,), {"_one_per_instance": True,
                                                      "__module__": base.__module__})
        return super().__new__(per_instance)

    # --8<-- [start:init]
    def __init__(self, root: torch.nn.Module | dict[str, Any], graph: Graph,
                 class_name: str = "GraphModule") -> None:
        super().__init__()
        type(self).__name__ = type(self).__qualname__ = class_name
        if isinstance(root, torch.nn.Module):
            self.training = root.training
            targets = _targets(graph)
            if isinstance(root, StateOf):  # deepcopy and unpickling keep everything
                targets = root.everything() + targets
            for target, node in targets:
                _copy_attr(root, self, target, node)
        elif isinstance(root, dict):
            for target, node in sorted(_targets(graph), key=lambda t: t[0].count(".")):
                if target not in root:
                    raise RuntimeError(
                        f"GraphModule: node %{node.name} ({node.op}) refers to {target!r}, but "
                        f"the root dict has no such key (it has {sorted(root)}). How to fix: "
                        "add the object under that exact dotted name."
                    )
                _assign_attr(root[target], self, target)
        else:
            raise TypeError(
                f"GraphModule(root, graph): root must be an nn.Module or a dict from target "
                f"to object, not {type(root).__name__}."
            )
        self.meta: dict[str, Any] = {}
        # A tracer class defined inside a function cannot be pickled by name.
        tracer_cls = getattr(graph, "_tracer_cls", None)
        self._tracer_cls = None if "<locals>" in getattr(tracer_cls, "__qualname__", "<locals>") \
            else tracer_cls
        self._tracer_extras = getattr(graph, "_tracer_extras", None) or {}
        self.graph = graph
    # --8<-- [end:init]

    @property
    def graph(self) -> Graph:
        """The graph; assigning a new one takes ownership of it and recompiles."""
        return self._graph

    @graph.setter
    def graph(self, graph: Graph) -> None:
        if not isinstance(graph, Graph):
            raise TypeError(f"GraphModule.graph must be a minifx Graph, not {type(graph).__name__}.")
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
        self._code, self._lineno_map, self._prologue_start = code.src, code.lineno_map, code.prologue_start
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
        text = _readable(self, self._get_name())
        if print_output:
            print(text)
        return text

    def __str__(self) -> str:
        return "\n".join([super().__str__(), self._code,
                          "# To see more debug info, please use `graph_module.print_readable()`"])

    def to_folder(self, folder: str | Path, module_name: str = "FxModule") -> None:
        """Write this module as a Python package that imports and runs on its own.

        `folder/module.py` defines `class <module_name>(torch.nn.Module)` with
        the generated `forward`; the weights go to `folder/state_dict.pt` and
        submodules without a simple repr to `folder/<name>.pt`. Then
        `from folder import <module_name>` works from the folder's parent.
        """
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        code = python_code(self._graph, root_module="self")
        (folder / "module.py").write_text(module_source(self, code, folder, module_name))
        (folder / "__init__.py").write_text(f"from .module import {module_name}\n")
        torch.save(self.state_dict(), folder / "state_dict.pt")

    # --8<-- [start:submodules]
    def add_submodule(self, target: str, m: torch.nn.Module) -> bool:
        """Install `m` at the dotted path `target`, adding empty parent modules.

        Returns:
            False if something on the path exists but is not a module.
        """
        *parents, leaf = target.split(".")
        module: torch.nn.Module = self
        for part in parents:
            child = getattr(module, part, None)
            if child is None:
                child = torch.nn.Module()
                setattr(module, part, child)
            if not isinstance(child, torch.nn.Module):
                return False
            module = child
        module.add_module(leaf, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Remove the submodule at `target`; False if there is no module there."""
        *parents, leaf = target.split(".")
        parent = get_path(self, ".".join(parents), None) if parents else self
        if not isinstance(parent, torch.nn.Module) or \
                not isinstance(getattr(parent, leaf, None), torch.nn.Module):
            return False
        delattr(parent, leaf)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Remove every submodule that no `call_module` or `get_attr` node needs.

        A module is used if a node calls it, if a node reads an attribute
        inside it, or if it is inside a called module or on the path to one.
        """
        used = {""}
        for target, node in _targets(self._graph):
            parts = target.split(".")
            used.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
            called = get_path(self, target, None) if node.op == "call_module" else None
            if isinstance(called, torch.nn.Module):
                used.update(f"{target}.{name}" for name, _ in called.named_modules() if name)
        for name in [name for name, _ in self.named_modules() if name not in used]:
            self.delete_submodule(name)
    # --8<-- [end:submodules]

    # --8<-- [start:copying]
    def __deepcopy__(self, memo: dict) -> GraphModule:
        """A copy with its own graph, submodules, parameters and buffers."""
        copied = GraphModule.__new__(type(self))
        memo[id(self)] = copied  # before the state: `gm.meta["m"] = gm` must find the copy
        state = copy.deepcopy(self.__dict__, memo)
        GraphModule.__init__(copied, StateOf(state), state["_graph"], self._get_name())
        copied.meta = state.get("meta", {})
        for hooks in ("_state_dict_hooks", "_load_state_dict_pre_hooks",
                      "_load_state_dict_post_hooks"):
            setattr(copied, hooks, state[hooks])
        return copied

    def __copy__(self) -> GraphModule:
        """A new GraphModule sharing this one's graph and state."""
        copied = GraphModule(self, self._graph, self._get_name())
        copied.meta = self.meta
        return copied

    def __reduce__(self) -> tuple:
        """Pickle the state and the generated code; unpickling retraces the code.

        As in torch.fx, the graph itself is not pickled: Python source stays
        readable across versions, and retracing it rebuilds the graph.
        """
        state = {k: v for k, v in self.__dict__.items() if k != "_graph"}
        code = python_code(self._graph)  # the graph as it is now, as torch.fx recompiles here
        source = import_block(code.globals) + code.src
        return (_rebuild, (state, source, self._get_name()))
    # --8<-- [end:copying]

    def _replicate_for_data_parallel(self) -> GraphModule:
        """The replica `nn.DataParallel` runs on each device: a `copy.copy`, as in torch.fx.

        (`nn.Module`'s own version would make an instance of a new class,
        without the generated `forward`.)
        """
        replica = self.__copy__()
        object.__setattr__(replica, "_is_replica", True)
        return replica


def _targets(graph: Graph) -> list[tuple[str, Any]]:
    """(target, node) for every `get_attr` and `call_module` node."""
    found = []
    for node in graph.nodes:
        if node.op in ("get_attr", "call_module"):
            if not isinstance(node.target, str):
                raise TypeError(f"GraphModule: node %{node.name} ({node.op}) has target "
                                f"{node.target!r}; it must be a dotted attribute name (a str).")
            found.append((node.target, node))
    return found


def _readable(gm: GraphModule, name: str) -> str:
    """`print_readable`'s text: a class with the verbose forward, then nested GraphModules."""
    code = python_code(gm.graph, root_module="self", verbose=True).src.strip("\n").rstrip()
    lines = [f"class {name}(torch.nn.Module):", *code.split("\n")]
    for child_name, child in gm.named_children():
        if isinstance(child, GraphModule):
            lines += ["", *_readable(child, child_name).rstrip("\n").split("\n")]
    indented = [f"    {line}" if line.strip() else "" for line in lines[1:]]
    return "\n".join([lines[0], *indented]) + "\n"


def _rebuild(state: dict, source: str, class_name: str) -> GraphModule:
    """Unpickle: exec the code, retrace it (submodules stay leaves), rebuild the module."""
    root, graph = retrace(state, source)
    gm = GraphModule(root, graph, class_name)
    for name, value in state.items():  # plain attributes the graph does not name
        if not hasattr(gm, name):
            setattr(gm, name, value)
    return gm
