"""Dotted attribute paths into a module: `"layer1.0.conv1"` names `root.layer1[0].conv1`.

`get_attr` and `call_module` nodes name what they read or call by such a
path; `lint` (invariant 7), `Node.is_impure`, codegen and the passes follow it.
"""

from __future__ import annotations

from typing import Any


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
