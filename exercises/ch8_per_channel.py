"""Exercise 8.2: Per-channel weights.

`minifx.passes.quantize` gives a whole weight one scale, set by its largest entry.
Give each output channel (each row of a Linear's weight, each filter of a Conv2d's)
its own symmetric qint8 scale instead, as PyTorch's x86 default does, and measure
how much less rounding loses.

Read first: chapters/08-quantization.md#exercise-82-per-channel-weights
Grade with: `make grade CH=8`
"""

from __future__ import annotations

import torch

QMIN, QMAX = -128, 127  # qint8


# --8<-- [start:given]
def relative_error(weight: torch.Tensor, quantized: torch.Tensor) -> float:
    """`||dequantized - weight|| / ||weight||`: how much of the weight rounding lost."""
    return ((quantized.dequantize() - weight).norm() / weight.norm()).item()


# --8<-- [end:given]


def per_channel_scales(weight: torch.Tensor) -> torch.Tensor:
    """Symmetric qint8 scales, one per output channel (dim 0) of a Linear or Conv2d weight.

    For channel c: `max |weight[c]|` over all its entries, divided by
    `(QMAX - QMIN) / 2` (127.5, as PyTorch's observers do), and never below
    `torch.finfo(torch.float32).eps` (an all-zero channel). A float32 tensor of
    `weight.shape[0]` scales, on the weight's device.
    """
    raise NotImplementedError(
        "Exercise 8.2: per_channel_scales is not written yet; "
        "see chapters/08-quantization.md#exercise-82-per-channel-weights"
    )


def quantize_per_channel(weight: torch.Tensor) -> torch.Tensor:
    """`weight` as a per-channel symmetric qint8 tensor (axis 0, zero points 0).

    Use `torch.quantize_per_channel(weight, scales, zero_points, axis, dtype)`:
    the scales from `per_channel_scales` (as float64), int64 zero points of 0.
    """
    raise NotImplementedError(
        "Exercise 8.2: quantize_per_channel is not written yet; "
        "see chapters/08-quantization.md#exercise-82-per-channel-weights"
    )
