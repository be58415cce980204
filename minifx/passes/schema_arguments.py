"""Spell out a call of a `torch.ops` overload in full, so two spellings compare equal.

`torch.ops.aten.max_pool2d_with_indices.default(x, [2, 2], stride=[2, 2])` and
`torch.ops.aten.max_pool2d_with_indices.default(x, [2, 2], [2, 2], padding=[0, 0])`
are the same call: padding defaults to `[0, 0]`. An overload carries a schema that
names every argument and its default, so the matcher can compare what each call
*means* rather than how it was written. Other callables (`torch.sum`, `operator.add`)
have no such schema, and their calls must be written alike, as in torch.fx.
"""

from __future__ import annotations

from typing import Any

import torch

from minifx.graph import Node


def has_schema(node: Node) -> bool:
    """Whether `node` calls a `torch.ops` overload, whose schema names every argument."""
    return node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload)


def schema_arguments(node: Node) -> list[Any]:
    """Every argument of the call, in schema order: by keyword, by position, or the default.

    Args:
        node: a `call_function` node whose target is a `torch.ops` overload.

    Returns:
        One value per argument of the overload's schema.
    """
    arguments = node.target._schema.arguments
    return [_argument(i, argument, node.args, node.kwargs) for i, argument in enumerate(arguments)]


def _argument(index: int, argument: Any, args: tuple, kwargs: dict) -> Any:
    if argument.name in kwargs:
        return kwargs[argument.name]
    if not argument.kwarg_only and index < len(args):
        return args[index]
    return argument.default_value  # None where the schema has no default, as in torch.fx
