"""Exercise 5.2: draw the shapes.

A picture of a graph says what runs; with ShapeProp's metadata it can also say
what flows: the shape and dtype of every value. `to_mermaid` takes the text of
each box from a function of the node (`node_label`), so write the text of a
value and hand it over: `draw_shapes(gm)` draws each box as
`describe_node(node)`, a new line, then the value, such as `[4, 32] float32`.

Read first: chapters/05-shape-prop.md#exercise-52-draw-the-shapes
Grade with: `make grade CH=5`
"""

from __future__ import annotations

from typing import Any

from minifx.graph import Node
from minifx.passes.draw import describe_node, to_mermaid  # noqa: F401  (you will need them)
from minifx.passes.shape_prop import TensorMetadata

SEE = "see chapters/05-shape-prop.md#exercise-52-draw-the-shapes"


# --8<-- [start:given]
def missing_metadata(node: Node) -> ValueError:
    """The error for a node that ShapeProp has not described."""
    return ValueError(
        f"draw_shapes: node %{node.name} has no shape metadata (node.meta['type'] is missing): "
        "run ShapeProp(gm).propagate(*example_inputs) before drawing."
    )


# --8<-- [end:given]


def describe_tensor(meta: TensorMetadata) -> str:
    """One tensor as `[4, 32] float32`: the shape as a list of ints, a space,
    then the dtype without its `torch.` prefix (`[] float16` for a 0-d tensor)."""
    raise NotImplementedError(f"Exercise 5.2: describe_tensor is not written yet; {SEE}")


def describe_meta(meta: Any) -> str:
    """A node's `tensor_meta` as text: a TensorMetadata by `describe_tensor`; a
    tuple as `(a, b)`, a list as `[a, b]`, a dict as `{'key': a}`, each item
    described the same way; any other leaf (an int, None) by its `repr`.

    Careful: a TensorMetadata is a NamedTuple, so it is also a tuple.
    """
    raise NotImplementedError(f"Exercise 5.2: describe_meta is not written yet; {SEE}")


def describe_value(node: Node) -> str:
    """What ShapeProp recorded about `node`'s value, as one line of text.

    - Raise `missing_metadata(node)` if `node.meta` has no `"type"` (ShapeProp
      sets it on every node it runs).
    - With a `"tensor_meta"`: `describe_meta` of it.
    - Without (a value that holds no tensor): the name of its type, `int`.
    """
    raise NotImplementedError(f"Exercise 5.2: describe_value is not written yet; {SEE}")


def draw_shapes(gm: Any) -> str:
    """A Mermaid flowchart of `gm` (after ShapeProp) whose boxes show, under the
    default label `describe_node(node)`, a line with `describe_value(node)`."""
    raise NotImplementedError(f"Exercise 5.2: draw_shapes is not written yet; {SEE}")
