"""Exercise 8.2: Per-channel weights (solution).

One scale for a whole weight is set by its largest entry: a row (output channel) of
small weights then uses a few of the 255 levels. One scale per output channel fits
each row's own range, at the cost of one float per channel.
"""

from __future__ import annotations

import torch

QMIN, QMAX = -128, 127  # qint8


# --8<-- [start:given]
def relative_error(weight: torch.Tensor, quantized: torch.Tensor) -> float:
    """`||dequantized - weight|| / ||weight||`: how much of the weight rounding lost."""
    return ((quantized.dequantize() - weight).norm() / weight.norm()).item()


# --8<-- [end:given]


# --8<-- [start:solution]
def per_channel_scales(weight: torch.Tensor) -> torch.Tensor:
    """Symmetric qint8 scales, one per output channel (dim 0) of a Linear or Conv2d weight."""
    largest = weight.detach().abs().flatten(1).amax(dim=1)  # max |w| of each channel
    # Symmetric: [-largest, largest] onto [-127.5, 127.5], PyTorch's (QMAX - QMIN) / 2.
    scales = largest / ((QMAX - QMIN) / 2)
    # An all-zero channel would get scale 0 and divide by it; PyTorch uses float32's eps.
    return scales.float().clamp(min=torch.finfo(torch.float32).eps)


def quantize_per_channel(weight: torch.Tensor) -> torch.Tensor:
    """`weight` as a per-channel symmetric qint8 tensor (axis 0, zero points 0)."""
    scales = per_channel_scales(weight)
    zero_points = torch.zeros_like(scales, dtype=torch.int64)
    return torch.quantize_per_channel(weight.detach(), scales.double(), zero_points, 0, torch.qint8)


# --8<-- [end:solution]
