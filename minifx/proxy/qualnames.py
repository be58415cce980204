"""Qualified names, spelled as torch.fx spells them (beside chapter 1's path).

`qualified_name` is the dotted path where Python finds a function (`torch.relu`,
`_operator.add`): the printer builds a target's text on it, and chapter 3's
generated code calls the function by it. `type_repr` prints a type annotation
(`torch.Tensor`, `typing.List[int]`) for the printout and the generated code.
"""

from __future__ import annotations

import builtins
import inspect
import types
from typing import Any

import torch


def qualified_name(value: Any) -> str:
    """The dotted path where Python finds `value`, as torch.fx names it: `getattr`,
    `torch.relu`, `torch.Tensor.add`, `torch.ops.aten.add.Tensor`, `math.sqrt`, `_operator.add`.

    Builtins are bare (generated code calls them by name); a tensor method is
    `torch.Tensor.<name>`, also when it is written in Python; an object with no
    `__name__` (a callable instance) is named after its class; a lambda, after the
    name it is assigned to (`lambda_name`).
    """
    name = getattr(value, "__name__", type(value).__name__)
    if name == "<lambda>":
        name = lambda_name(value)
    if getattr(builtins, name, None) is value:
        return name
    if getattr(torch.Tensor, name, None) is value and isinstance(
        value, (types.MethodDescriptorType, types.WrapperDescriptorType, types.FunctionType)
    ):
        return f"torch.Tensor.{name}"
    module = getattr(value, "__module__", None) or ""
    module = module.replace("torch._ops", "torch.ops")  # operators live at torch.ops.*
    name = TORCH_SPELLINGS.get((module, name), name)
    return f"{module}.{name}" if module else name


def lambda_name(function: types.FunctionType) -> str:
    """A lambda's name as torch.fx makes one: the text of its source before the first `=`
    (`my_lam` in `my_lam = lambda a: a + 1`). A lambda with no source to read (made by
    `exec`) keeps `<lambda>`, where torch.fx raises "Unable to represent lambda"."""
    try:
        return inspect.getsource(function).split("=")[0].strip()
    except (OSError, TypeError):
        return "<lambda>"


# torch.fx spells these torch objects by another name of theirs than `__name__`
# (torch exports the enums only without the underscore), and so must the printer.
TORCH_SPELLINGS = {
    ("torch", "segment_reduce"): "_segment_reduce",
    ("torch.nn.functional", "_ScalingType"): "ScalingType",
    ("torch.nn.functional", "_SwizzleType"): "SwizzleType",
}


def type_repr(annotation: Any) -> str:
    """Print a type annotation as torch.fx does: `int`, `torch.Tensor`, `list[int]`."""
    if isinstance(annotation, type) and not isinstance(annotation, types.GenericAlias):
        module = annotation.__module__
        return (
            annotation.__qualname__
            if module == "builtins"
            else f"{module}.{annotation.__qualname__}"
        )
    if annotation is ...:
        return "..."
    if isinstance(annotation, types.FunctionType):
        return annotation.__name__
    return repr(annotation)
