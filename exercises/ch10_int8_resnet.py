"""Capstone: ship a ResNet-18 in int8.

A model fresh from training is to run on a CPU in int8. Chain the book's
passes: trace it (chapters 1-3), fold its BatchNorms into its convolutions
(chapter 6), calibrate and convert it to int8 (chapter 8), and measure what
that saves with shape propagation (chapter 5). Each step is one call of a
pass you know; the work is in the order, and in what each pass expects of
the one before.

Read first: chapters/capstone.md#the-exercise
Grade with: `make grade CH=10`
"""

import copy  # noqa: F401  (you will need it)
from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import nn

from minifx.codegen import GraphModule, symbolic_trace  # noqa: F401  (you will need it)
from minifx.passes.fuse_conv_bn import fuse_conv_bn  # noqa: F401  (you will need it)
from minifx.passes.quantize import convert, prepare  # noqa: F401  (you will need it)
from minifx.passes.shape_prop import ShapeProp, TensorMetadata  # noqa: F401  (you will need it)


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


def fold(model: nn.Module) -> GraphModule:
    """Trace an eval-mode copy of `model` and fold its BatchNorms into its convs.

    `model` comes from training: it is in training mode, and `fuse_conv_bn`
    leaves a training-mode BatchNorm alone. Fold a copy in eval mode
    (`copy.deepcopy(model).eval()`) and leave `model` as it is, mode included.
    """
    raise NotImplementedError(
        "Exercise 10.1 (capstone): fold is not written yet; see chapters/capstone.md#the-exercise"
    )


def activation_bytes(gm: GraphModule, example: torch.Tensor) -> dict[str, int]:
    """The bytes of the tensor each call_* node computes on `example`, by node name.

    Run `ShapeProp(gm).propagate(example)`, then, for each `call_function`,
    `call_method` and `call_module` node whose `node.meta["tensor_meta"]` is a
    `TensorMetadata` (a single tensor), count `shape.numel()` elements of
    `dtype.itemsize` bytes each (4 for float32, 1 for int8 and uint8).
    Placeholders and get_attr nodes are inputs and parameters, not activations:
    leave them out.
    """
    raise NotImplementedError(
        "Exercise 10.1 (capstone): activation_bytes is not written yet; see chapters/capstone.md#the-exercise"
    )


def quantize(folded: GraphModule, calibration: Sequence[torch.Tensor]) -> GraphModule:
    """Prepare `folded`, calibrate it on every batch, and convert it to int8.

    `prepare` puts observers around every Conv2d and Linear; run each batch of
    `calibration` through the prepared model (under `torch.no_grad()`), then
    `convert` it. `folded` is not changed.
    """
    raise NotImplementedError(
        "Exercise 10.1 (capstone): quantize is not written yet; see chapters/capstone.md#the-exercise"
    )


def ship(model: nn.Module, calibration: Sequence[torch.Tensor]) -> Shipped:
    """Fold, quantize, and measure the activations before and after.

    Chain your functions: fold `model`, quantize the folded model on
    `calibration`, and measure the activation bytes of the folded model and of
    the int8 one on the first calibration batch (the sum of `activation_bytes`).
    Return them as a `Shipped`. `model` is left as it is.
    """
    raise NotImplementedError(
        "Exercise 10.1 (capstone): ship is not written yet; see chapters/capstone.md#the-exercise"
    )
