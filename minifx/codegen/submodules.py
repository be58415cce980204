"""Installing, adding and deleting a GraphModule's state, as torch.fx's GraphModule does.

A pass that adds a `call_module` node installs the module it calls with
`add_submodule`; after a pass that removes nodes,
`delete_all_unused_submodules` drops what no node needs any more.
`GraphModule` inherits these methods from `SubmodulesMixin`. This module
also installs the state of a GraphModule built from a dict of objects
instead of a root module (`GraphModule({"layer.weight": w}, graph)`).
"""

from __future__ import annotations

from typing import Any

import torch

from ..graph.graph import Graph
from ..graph.module_paths import get_path
from ..graph.node import Node, target_problem


class SubmodulesMixin(torch.nn.Module):
    """`add_submodule`, `delete_submodule` and `delete_all_unused_submodules`."""

    graph: Graph

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
        if not isinstance(parent, torch.nn.Module) or not isinstance(
            getattr(parent, leaf, None), torch.nn.Module
        ):
            return False
        delattr(parent, leaf)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Remove every submodule that no `call_module` or `get_attr` node needs.

        A module is used if a node calls it, if a node reads an attribute
        inside it, or if it is inside a called module or on the path to one.
        """
        used = {""}
        for target, node in state_targets(self.graph):
            parts = target.split(".")
            used.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
            called = get_path(self, target, None) if node.op == "call_module" else None
            if isinstance(called, torch.nn.Module):
                used.update(f"{target}.{name}" for name, _ in called.named_modules() if name)
        for name in [name for name, _ in self.named_modules() if name not in used]:
            self.delete_submodule(name)

    # --8<-- [end:submodules]


class NotAnAttributePath(TypeError, AssertionError):
    """A `get_attr` or `call_module` target that is no str; also torch.fx's `AssertionError`."""


def state_targets(graph: Graph) -> list[tuple[str, Node]]:
    """(target, node) for every `get_attr` and `call_module` node: the state the graph reads."""
    found = []
    for node in graph.nodes:
        if node.op in ("get_attr", "call_module"):
            if target_problem(node.op, node.target) is not None:  # invariant 1's rule
                raise NotAnAttributePath(
                    f"GraphModule: node %{node.name} ({node.op}) has target "
                    f"{node.target!r}; it must be a dotted attribute name (a str)."
                )
            found.append((node.target, node))
    return found


_MISSING = object()  # child_at's "no such attribute" (None is a value an attribute may hold)


def find_attribute(module: Any, name: str, default: Any) -> Any:
    """`getattr(module, name, default)`, but a submodule is read from `_modules` directly.

    `getattr` finds a submodule only through nn.Module's `__getattr__`, slow Python
    that each step of each path would pay; `named_modules` reads `_modules` too.
    """
    submodules = getattr(module, "_modules", None)
    if type(submodules) is dict and name in submodules:
        return submodules[name]
    return getattr(module, name, default)


def child_at(module: Any, part: str, target: str, node: Node | None) -> Any:
    """`module.<part>`, a step of `target`'s path, with an error naming `node` if it is missing."""
    child = find_attribute(module, part, _MISSING)
    if child is _MISSING:
        where = f"node %{node.name} ({node.op})" if node is not None else "the graph"
        raise AttributeError(
            f"GraphModule: {where} refers to {target!r}, but the root module has no "
            f"attribute {part!r} on that path ({type(module).__name__} has none). "
            "How to fix: add the attribute to the root (for a submodule, "
            "gm.add_submodule), or correct the node's target."
        )
    return child


def install(module: torch.nn.Module, name: str, value: Any) -> None:
    """Set an attribute; a plain tensor becomes a buffer, so it moves with `.to()`."""
    if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
        module.register_buffer(name, value)
    else:
        setattr(module, name, value)


def install_from_dict(
    gm: torch.nn.Module, root: dict[str, Any], targets: list[tuple[str, Node]]
) -> None:
    """Install `root[target]` at each target's dotted path in `gm`, parents first.

    Raises:
        RuntimeError: if `root` has no key for a target (torch.fx's type).
    """
    for target, node in sorted(targets, key=lambda t: t[0].count(".")):
        if target not in root:
            raise RuntimeError(
                f"GraphModule: node %{node.name} ({node.op}) refers to {target!r}, but "
                f"the root dict has no such key (it has {sorted(root)}). How to fix: "
                "add the object under that exact dotted name."
            )
        _assign_attr(root[target], gm, target)


def _assign_attr(value: Any, gm: torch.nn.Module, target: str) -> None:
    """`gm.<target> = value`, adding empty parent modules as needed."""
    *parents, leaf = target.split(".")
    for part in parents:
        if getattr(gm, part, None) is None:
            setattr(gm, part, torch.nn.Module())
        gm = getattr(gm, part)
    install(gm, leaf, value)
