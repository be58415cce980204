"""Exercise 5.1: activation memory.

How much memory does a forward pass need? After ShapeProp, every node knows the
shape and dtype of its value, so you can add it up without running the model
again. A value takes `numel × element size` bytes; it is alive from the node
that computes it until its last use, when the Interpreter drops it; the peak is
the largest total alive at once. Write `tensor_bytes`, `nested_bytes`,
`node_bytes` and `peak_memory`.

Read first: chapters/05-shape-prop.md#exercise-51-activation-memory
Grade with: `make grade CH=5`
"""

from __future__ import annotations

import math  # noqa: F401  (you may need it)
from typing import Any

from minifx.graph import Graph, Node
from minifx.passes.shape_prop import TensorMetadata

SEE = "see chapters/05-shape-prop.md#exercise-51-activation-memory"


# --8<-- [start:given]
def freed_after(graph: Graph) -> dict[Node, list[Node]]:
    """Node -> the values to drop once it has run, as the Interpreter drops them:
    the values whose last use it is, and itself if nothing uses it."""
    freed: dict[Node, list[Node]] = {}
    seen: set[Node] = set()
    for node in reversed(graph.nodes):  # the first use seen backwards is the last use
        for used in node.all_input_nodes:
            if used not in seen:
                seen.add(used)
                freed.setdefault(node, []).append(used)
        if not node.users and node.op != "output":
            freed.setdefault(node, []).append(node)
    return freed


def missing_metadata(node: Node) -> ValueError:
    """The error for a node that ShapeProp has not described."""
    return ValueError(
        f"node %{node.name} has no shape metadata (node.meta['type'] is missing): run "
        "ShapeProp(gm).propagate(*example_inputs) on the GraphModule before measuring it."
    )


# --8<-- [end:given]


def tensor_bytes(meta: TensorMetadata) -> int:
    """The bytes of the elements of the tensor `meta` describes: numel × element size.

    numel is the product of `meta.shape` (1 for a 0-d tensor, 0 if a dimension
    is 0). The element size depends on `meta.dtype`: 4 for float32, 2 for
    float16 and bfloat16, 1 for int8, uint8, bool and the 8-bit quantized
    dtypes, 8 for int64 and complex64... Ask torch rather than writing a table:
    a `torch.dtype` knows its size in bytes, `dtype.itemsize`.
    """
    raise NotImplementedError(f"Exercise 5.1: tensor_bytes is not written yet; {SEE}")


def nested_bytes(meta: Any) -> int:
    """The bytes of every tensor in `meta`: a TensorMetadata, or tuples, lists and
    dicts of them (as ShapeProp stores a node that returns several tensors);
    other leaves (ints, None, ...) count 0.

    Careful: a TensorMetadata is a NamedTuple, so it is also a tuple.
    """
    raise NotImplementedError(f"Exercise 5.1: nested_bytes is not written yet; {SEE}")


def node_bytes(node: Node) -> int:
    """The bytes of `node`'s value, from `node.meta["tensor_meta"]`.

    - Raise `missing_metadata(node)` if ShapeProp has not run on the node
      (its `node.meta` has no `"type"`: ShapeProp sets it for every node).
    - The output node counts 0: it returns values other nodes computed.
    - A node whose value holds no tensor has no `"tensor_meta"`: 0.
    """
    raise NotImplementedError(f"Exercise 5.1: node_bytes is not written yet; {SEE}")


def peak_memory(graph: Graph) -> tuple[int, str]:
    """The most bytes alive at once while the Interpreter runs `graph`, and the
    name of the first node whose run reaches it.

    Walk the nodes in order, as `Interpreter.run` does: a node's value becomes
    alive when it runs; then the values in `freed_after(graph)[node]` are dropped.
    Measure the total right after each node runs, before the drops (its inputs
    are still alive while it computes). Values are counted by `node_bytes`, so
    a view or an in-place result counts as a new tensor: an upper bound.
    """
    raise NotImplementedError(f"Exercise 5.1: peak_memory is not written yet; {SEE}")
