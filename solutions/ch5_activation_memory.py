"""Exercise 5.1: activation memory (solution).

After ShapeProp, every node knows the shape and dtype of its value, so the
memory a run needs can be added up without running the model again: a value
takes `numel × element size` bytes, it is alive from the node that computes it
to its last use, and the peak is the largest sum of the values alive at once.
"""

from __future__ import annotations

import math
from typing import Any

from minifx.graph import Graph, Node
from minifx.passes.shape_prop import TensorMetadata


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


# --8<-- [start:solution]
def tensor_bytes(meta: TensorMetadata) -> int:
    """The bytes of the elements of the tensor `meta` describes: numel × element size."""
    return math.prod(meta.shape) * meta.dtype.itemsize


def node_bytes(node: Node) -> int:
    """The bytes of `node`'s value, from `node.meta["tensor_meta"]`."""
    if "type" not in node.meta:
        raise missing_metadata(node)
    if node.op == "output":
        return 0  # it returns values other nodes made and already counted
    return nested_bytes(node.meta.get("tensor_meta"))


def nested_bytes(meta: Any) -> int:
    """The bytes of every tensor in `meta`: a TensorMetadata, or tuples, lists and
    dicts of them; other leaves (ints, None) take no tensor memory."""
    # TensorMetadata is a NamedTuple, hence a tuple: test it first.
    if isinstance(meta, TensorMetadata):
        return tensor_bytes(meta)
    if isinstance(meta, (tuple, list)):
        return sum(nested_bytes(item) for item in meta)
    if isinstance(meta, dict):
        return sum(nested_bytes(item) for item in meta.values())
    return 0


def peak_memory(graph: Graph) -> tuple[int, str]:
    """The most bytes alive at once while the Interpreter runs `graph`, and the
    name of the first node whose run reaches it."""
    freed = freed_after(graph)
    alive: dict[Node, int] = {}
    live, peak, peak_node = 0, 0, ""
    for node in graph.nodes:
        alive[node] = node_bytes(node)
        live += alive[node]
        if live > peak or not peak_node:  # sampled before the frees: the inputs are still alive
            peak, peak_node = live, node.name
        for value in freed.get(node, []):
            live -= alive.pop(value)
    return peak, peak_node


# --8<-- [end:solution]
