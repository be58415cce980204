"""Exercise 5.2: draw the shapes (solution).

`to_mermaid` takes the text of each box from a function of the node, so a
drawing with shapes is the default label plus one more line, read from the
metadata ShapeProp left in `node.meta`.
"""

from __future__ import annotations

from typing import Any

from minifx.graph import Node
from minifx.passes.draw import describe_node, to_mermaid
from minifx.passes.shape_prop import TensorMetadata


# --8<-- [start:given]
def missing_metadata(node: Node) -> ValueError:
    """The error for a node that ShapeProp has not described."""
    return ValueError(
        f"draw_shapes: node %{node.name} has no shape metadata (node.meta['type'] is missing): "
        "run ShapeProp(gm).propagate(*example_inputs) before drawing."
    )


# --8<-- [end:given]


# --8<-- [start:solution]
def describe_tensor(meta: TensorMetadata) -> str:
    """`[4, 32] float32`: the shape as a list, then the dtype without `torch.`."""
    return f"{list(meta.shape)} {str(meta.dtype).removeprefix('torch.')}"


def describe_meta(meta: Any) -> str:
    """A TensorMetadata, or a tuple, list or dict of them, as text; other leaves by repr."""
    if isinstance(meta, TensorMetadata):  # a NamedTuple: before the tuple case
        return describe_tensor(meta)
    if isinstance(meta, tuple):
        return "(" + ", ".join(describe_meta(item) for item in meta) + ")"
    if isinstance(meta, list):
        return "[" + ", ".join(describe_meta(item) for item in meta) + "]"
    if isinstance(meta, dict):
        return (
            "{" + ", ".join(f"{key!r}: {describe_meta(item)}" for key, item in meta.items()) + "}"
        )
    return repr(meta)


def describe_value(node: Node) -> str:
    """What ShapeProp recorded about `node`'s value, as one line of text."""
    if "type" not in node.meta:
        raise missing_metadata(node)
    if "tensor_meta" in node.meta:
        return describe_meta(node.meta["tensor_meta"])
    return node.meta["type"].__name__


def draw_shapes(gm: Any) -> str:
    """A Mermaid flowchart of `gm` whose boxes also show each value's shape and dtype."""
    return to_mermaid(gm, node_label=lambda node: f"{describe_node(node)}\n{describe_value(node)}")


# --8<-- [end:solution]
