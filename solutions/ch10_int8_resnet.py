"""Capstone: ship a ResNet-18 in int8 (solution).

Each pass of the book does one thing; a deployment chains them, and the order
matters. Fusion needs an eval-mode model (a training-mode BatchNorm is left
alone), quantization needs the BatchNorms folded away (a BatchNorm between a
conv and its relu would stay a float op between two int8 ones), and shape
propagation must run on the graph it describes, after the last change.
"""

import copy
from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import nn

from minifx.codegen import GraphModule, symbolic_trace
from minifx.passes.fuse_conv_bn import fuse_conv_bn
from minifx.passes.quantize import convert, prepare
from minifx.passes.shape_prop import ShapeProp, TensorMetadata


# --8<-- [start:given]
class Shipped(NamedTuple):
    """What `ship` returns.

    Attributes:
        model: The int8 GraphModule, calibrated and converted.
        folded: The float GraphModule it was quantized from, BatchNorms folded.
        float_bytes: The activation bytes of `folded`, on the first calibration batch.
        int8_bytes: The activation bytes of `model`, on the same batch.
    """

    model: GraphModule
    folded: GraphModule
    float_bytes: int
    int8_bytes: int


# --8<-- [end:given]


# --8<-- [start:solution]
def fold(model: nn.Module) -> GraphModule:
    """Trace an eval-mode copy of `model` and fold its BatchNorms into its convs."""
    inference = copy.deepcopy(model).eval()  # the caller's model keeps training
    return fuse_conv_bn(symbolic_trace(inference))


def activation_bytes(gm: GraphModule, example: torch.Tensor) -> dict[str, int]:
    """The bytes of the tensor each call_* node computes on `example`, by node name."""
    ShapeProp(gm).propagate(example)
    sizes = {}
    for node in gm.graph.nodes:
        meta = node.meta.get("tensor_meta")
        if node.op.startswith("call_") and isinstance(meta, TensorMetadata):
            sizes[node.name] = meta.shape.numel() * meta.dtype.itemsize
    return sizes


def quantize(folded: GraphModule, calibration: Sequence[torch.Tensor]) -> GraphModule:
    """Prepare `folded`, calibrate it on every batch, and convert it to int8."""
    prepared = prepare(folded)
    with torch.no_grad():
        for batch in calibration:
            prepared(batch)
    return convert(prepared)


def ship(model: nn.Module, calibration: Sequence[torch.Tensor]) -> Shipped:
    """Fold, quantize, and measure the activations before and after."""
    folded = fold(model)
    int8 = quantize(folded, calibration)
    example = calibration[0]
    float_bytes = sum(activation_bytes(folded, example).values())
    int8_bytes = sum(activation_bytes(int8, example).values())
    return Shipped(int8, folded, float_bytes, int8_bytes)


# --8<-- [end:solution]
