"""Dotted attribute paths into a module: `"layer1.0.conv1"` names `root.layer1[0].conv1`.

`get_attr` and `call_module` nodes name what they read or call by such a
path; `lint` (invariant 7), `Node.is_impure`, codegen and the passes follow it.
"""

from __future__ import annotations

from typing import Any

import torch

from . import errors


def get_path(root: Any, path: str, default: Any = None) -> Any:
    """Follow the dotted attribute `path` (`"layer1.0.conv1"`) from `root`.

    Returns:
        The attribute, or `default` if any step is missing.
    """
    for atom in path.split("."):
        root = getattr(root, atom, default)
        if root is default:
            return default
    return root


def has_path(root: Any, path: str) -> bool:
    """Whether the dotted attribute `path` (`"layer1.0.conv1"`) exists on `root`."""
    missing = object()
    return get_path(root, path, missing) is not missing


def target_warnings(root: Any, path: str, op: str) -> list[str]:
    """The warnings torch.fx gives for a `get_attr` / `call_module` node at `path` on `root`
    (none without a `root`, a graph that no module owns).

    A `get_attr` target must be a submodule, parameter or buffer of a submodule, as in
    torch.fx: a plain attribute (a tensor, a number) warns, and a path through something
    that is no submodule (`lin.weight.data`) warns twice, first about the submodule.
    """
    if root is None:
        return []
    if op == "call_module":
        return [] if has_path(root, path) else [errors.missing_target_warning(op, path)]
    module_path, _, name = path.rpartition(".")
    owner = _submodule(root, module_path)
    if owner is None:
        return [
            errors.no_submodule_warning(module_path, path),
            errors.missing_target_warning(op, path),
        ]
    value = getattr(owner, name, _MISSING)
    if value is _MISSING:
        return [errors.missing_target_warning(op, path)]
    if isinstance(value, (torch.nn.Module, torch.nn.Parameter)) or name in owner._buffers:
        return []
    return [errors.plain_attribute_warning(path, value)]


_MISSING = object()


def _submodule(root: Any, path: str) -> torch.nn.Module | None:
    """The submodule at `path` (`""` is `root`), or `None` if a step is no `nn.Module`."""
    module = root
    for atom in path.split(".") if path else ():
        module = getattr(module, atom, None)
        if not isinstance(module, torch.nn.Module):
            return None
    return module if isinstance(module, torch.nn.Module) else None
