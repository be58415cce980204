"""Where the tracer finds, or puts, values that `get_attr` nodes read.

A `get_attr` node reads a value by its path on the root module. Parameters,
buffers and submodules have one; so may a plain tensor attribute
(`self.scale = torch.ones(3)`). Any other tensor the traced code uses, and an
instance of a `ProxyableClassMeta` class, is stored on the root under a fresh
name (`_tensor_constant0`, `_TensorPair_constant_0`), as torch.fx does.
`Tracer` inherits these methods from `ConstantsOnRoot`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from .tracer import Tracer

# The attributes nn.Module.__init__ sets on every module (hooks, _parameters, ...),
# never tensors: most of a module's __dict__, skipped when looking for tensors.
_MODULE_BOOKKEEPING = frozenset(vars(torch.nn.Module()))


class ConstantsOnRoot:
    """Mixed into `Tracer`: the paths of tensor attributes, and fresh names for constants."""

    def _collect_tensor_attrs(self: Tracer, module: torch.nn.Module, prefix: str) -> None:
        """Remember the path of every plain tensor attribute, such as `self.scale = torch.ones(3)`."""
        for name, value in vars(module).items():
            if name not in _MODULE_BOOKKEEPING and isinstance(value, torch.Tensor):
                self.tensor_attrs[value] = prefix + name
        for name, child in module.named_children():
            self._collect_tensor_attrs(child, f"{prefix}{name}.")

    def _tensor_constant_path(self: Tracer, tensor: torch.Tensor) -> str:
        """Where a constant tensor lives on the root: its attribute path, or a fresh name."""
        if tensor not in self.tensor_attrs:
            self.tensor_attrs[tensor] = self._store_constant(tensor, "_tensor_constant")
        return self.tensor_attrs[tensor]

    def _store_constant(self: Tracer, value: Any, prefix: str | None = None) -> str:
        """Set `value` on the root under a fresh name (by default `_TypeName_constant_0`,
        `_TypeName_constant_1`, ...), and return that name."""
        name = self.get_fresh_qualname(prefix or f"_{type(value).__name__}_constant_")
        setattr(self.root, name, value)
        return name

    def get_fresh_qualname(self: Tracer, prefix: str) -> str:
        """The first of `prefix0`, `prefix1`, ... that the root module does not have."""
        index = 0
        while hasattr(self.root, f"{prefix}{index}"):
            index += 1
        return f"{prefix}{index}"
