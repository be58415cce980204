"""Shape propagation: run a graph once on example inputs and record, on every node,
what its value looked like.

`ShapeProp` is a small `Interpreter` subclass: it runs each node as the
Interpreter does, then describes the value in `node.meta["tensor_meta"]`
(a `TensorMetadata`: shape, dtype, strides, memory format, quantization) and
`node.meta["type"]`. Later passes read that metadata instead of running the
model again: a fusion checks that shapes line up, a memory planner adds up
bytes, a drawing labels its arrows.

    gm = minifx.symbolic_trace(model)
    ShapeProp(gm).propagate(torch.randn(1, 3, 32, 32))
    gm.graph.find_nodes(op="output")[0].meta["tensor_meta"].shape   # torch.Size([1, 10])

Mirrors `torch.fx.passes.shape_prop`: same names, same fields, same values.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch

from ..graph import Node, map_aggregate
from ..interpreter import Interpreter


# --8<-- [start:tensor_metadata]
class TensorMetadata(NamedTuple):
    """What `ShapeProp` records about one tensor (torch.fx's fields, in its order).

    Attributes:
        shape: the size, a `torch.Size`.
        dtype: the element type, such as `torch.float32`.
        requires_grad: whether autograd tracks the tensor.
        stride: the step in elements between neighbours along each dimension;
            `()` for a sparse tensor, which has no strides.
        memory_format: the layout the strides are dense in: `torch.contiguous_format`,
            `torch.channels_last` (4-D), `torch.channels_last_3d` (5-D), or `None`
            (a view that is dense in none of them, or a sparse tensor).
        is_quantized: whether the tensor holds quantized integers.
        qparams: for a quantized tensor, its `qscheme`, `scale` and `zero_point`
            (and `axis`, per channel); `{}` otherwise.
    """

    shape: torch.Size
    dtype: torch.dtype
    requires_grad: bool
    stride: tuple[int, ...]
    memory_format: torch.memory_format | None
    is_quantized: bool
    qparams: dict[str, Any]


# --8<-- [end:tensor_metadata]


# --8<-- [start:memory_format]
# The channels-last layouts, with their dimensions ordered from the
# fastest-moving (stride 1) to the slowest: C (dimension 1) first, then W, H
# (and D), then N. Contiguous (row-major) needs no table: last dimension first.
_CHANNELS_LAST = {
    torch.channels_last: (1, 3, 2, 0),
    torch.channels_last_3d: (1, 4, 3, 2, 0),
}


def is_dense_in_order(tensor: torch.Tensor, fastest_first: tuple[int, ...]) -> bool:
    """Whether `tensor`'s strides pack its elements densely, walking its
    dimensions in `fastest_first` order.

    Dense means each dimension's stride is the product of the sizes of the
    faster dimensions before it. Dimensions of size 1 are skipped: their
    stride never moves to another element, so any value is fine.
    """
    expected = 1
    for dim in fastest_first:
        size = tensor.shape[dim]
        if size == 1:
            continue
        if tensor.stride(dim) != expected:
            return False
        expected *= size
    return True


def memory_format_of(tensor: torch.Tensor) -> torch.memory_format | None:
    """The first layout (contiguous, then channels-last 2-D and 3-D) that
    `tensor` is dense in, or `None`. A tensor with fewer than two elements is
    contiguous whatever its strides."""
    row_major = tuple(reversed(range(tensor.dim())))
    if tensor.numel() < 2 or is_dense_in_order(tensor, row_major):
        return torch.contiguous_format
    for memory_format, order in _CHANNELS_LAST.items():
        if tensor.dim() == len(order) and is_dense_in_order(tensor, order):
            return memory_format
    return None


# --8<-- [end:memory_format]


# --8<-- [start:qparams]
_PER_TENSOR = (torch.per_tensor_affine, torch.per_tensor_symmetric)


def quantization_params(tensor: torch.Tensor) -> dict[str, Any]:
    """How a quantized tensor maps its integers to reals (`{}` if it is not quantized).

    Per tensor: one `scale` (float) and `zero_point` (int). Per channel: one of
    each per slice along `axis`, as Python lists, so the metadata holds no tensors.
    """
    if not tensor.is_quantized:
        return {}
    qscheme = tensor.qscheme()
    if qscheme in _PER_TENSOR:
        return {"qscheme": qscheme, "scale": tensor.q_scale(), "zero_point": tensor.q_zero_point()}
    return {
        "qscheme": qscheme,
        "scale": tensor.q_per_channel_scales().tolist(),
        "zero_point": tensor.q_per_channel_zero_points().tolist(),
        "axis": tensor.q_per_channel_axis(),
    }


# --8<-- [end:qparams]


# --8<-- [start:extract]
# --8<-- [task:5.1] "Describe a tensor" points=5 section=05-shape-prop.md#what-tensor_meta-holds
def extract_tensor_metadata(tensor: torch.Tensor) -> TensorMetadata:
    """Describe one tensor. Sparse tensors have no strides, hence no memory format."""
    strided = tensor.layout == torch.strided
    return TensorMetadata(
        shape=tensor.shape,
        dtype=tensor.dtype,
        requires_grad=tensor.requires_grad,
        stride=tensor.stride() if strided else (),
        memory_format=memory_format_of(tensor) if strided else None,
        is_quantized=tensor.is_quantized,
        qparams=quantization_params(tensor),
    )


# --8<-- [end-task:5.1]
# --8<-- [end:extract]


# --8<-- [start:shape_prop]
class ShapeProp(Interpreter):
    """Runs a GraphModule node by node and records what each value looks like.

    After `propagate(*example_inputs)`, every node has `node.meta["type"]`, the
    type of its value, and every node whose value holds tensors has
    `node.meta["tensor_meta"]`: a `TensorMetadata` for a tensor, or the same
    tuple/list/dict structure as the value with each tensor replaced by its
    `TensorMetadata` (other leaves, such as ints, are kept).

    Args:
        gm: the GraphModule to run.
        fake_mode: accepted for torch.fx's signature; minifx has no fake
            tensors, so it must be `None` (run on real, or `meta`-device, inputs).

    Raises:
        NotImplementedError: if `fake_mode` is given.
    """

    def __init__(self, gm: torch.nn.Module, fake_mode: Any = None) -> None:
        if fake_mode is not None:
            raise NotImplementedError(
                "ShapeProp(gm, fake_mode=...): minifx does not implement fake tensors. "
                "Call ShapeProp(gm) and propagate real example inputs (small ones are "
                "enough: only shapes, dtypes and layouts are recorded)."
            )
        super().__init__(gm)
        self.fake_mode = None

    # --8<-- [task:5.2] "ShapeProp: run a node and take notes" points=5 section=05-shape-prop.md#shapeprop-an-interpreter-that-takes-notes
    def run_node(self, n: Node) -> Any:
        """Run `n` as the Interpreter does, then record its value's metadata.

        Raises:
            RuntimeError: naming the node, if running it fails (the original
                error is chained as `__cause__`).
        """
        try:
            result = super().run_node(n)
        except Exception as error:
            raise RuntimeError(_failure_message(n, error)) from error
        found_tensor = False

        def describe(leaf: Any) -> Any:
            nonlocal found_tensor
            if isinstance(leaf, torch.Tensor):
                found_tensor = True
                return extract_tensor_metadata(leaf)
            return leaf

        meta = map_aggregate(result, describe)
        if found_tensor:  # values without tensors (ints, None, Sizes) get no tensor_meta
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args: Any) -> Any:
        """Run the graph on the example inputs `args`, recording every node's metadata.

        Returns:
            What the graph returns for `args`.
        """
        return self.run(*args)

    # --8<-- [end-task:5.2]


# --8<-- [end:shape_prop]


def _failure_message(n: Node, error: Exception) -> str:
    # The first line is torch.fx's; the rest says why and what to check.
    return (
        f"ShapeProp error for: node={n.format_node()} with meta={n.meta}\n"
        f"    {type(error).__name__}: {error}\n"
        "Shape propagation runs the model on the example inputs given to propagate(); "
        "check that they have the number, shapes, dtypes and device the model's forward expects."
    )
