"""Type annotations in generated code.

A node's `type` (set by the tracer from the traced function's annotations, or
by hand) is written after its variable (`x : torch.Tensor`), and the output
node's type as the return annotation (`-> int`), as torch.fx writes them.
Every class an annotation names becomes reachable as a global, through the
same namespace as the rest of the code. `print_readable` writes a tensor's
dtype and shape instead (`x: "f32[2, 3]"`) where `node.meta` holds them.
"""

from __future__ import annotations

import types
import typing
from typing import TYPE_CHECKING, Any

from ..graph.node import Node
from ..proxy.ir import type_repr
from .syntax import TYPING_ORIGINS, shape_annotation

if TYPE_CHECKING:
    from .python_code import _SourceWriter


def node_annotation(writer: _SourceWriter, node: Node) -> str:
    """`" : torch.Tensor"` after the node's variable, or `""` if it has no type."""
    if writer.verbose:
        shape = shape_annotation(node)
        if shape is not None:
            return f': "{shape}"'
    return "" if node.type is None else f" : {type_annotation(writer, node.type)}"


def type_annotation(writer: _SourceWriter, annotation: Any) -> str:
    """A type annotation, with every class it names reachable as a global."""
    if annotation == ():
        return "()"
    if isinstance(annotation, types.UnionType):
        return "|".join(type_annotation(writer, a) for a in typing.get_args(annotation))
    origin = getattr(annotation, "__origin__", None)
    if origin is not None:
        if isinstance(annotation, typing._GenericAlias):  # typing.List[int] and friends
            origin = TYPING_ORIGINS.get(origin, origin)
        origin_name = writer.global_name(origin, type_repr(origin))
        arguments = typing.get_args(annotation)
        if not arguments:
            return origin_name
        return f"{origin_name}[{','.join(type_annotation(writer, a) for a in arguments)}]"
    return writer.global_name(annotation, type_repr(annotation))
