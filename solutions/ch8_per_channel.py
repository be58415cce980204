"""Exercise 8.2: Per-channel weights (solution).

One scale for a whole weight is set by its largest entry: a row (output channel) of
small weights then uses a few of the 255 levels. One scale per output channel fits
each row's own range, at the cost of one float per channel.
"""

from __future__ import annotations

import torch

QMIN, QMAX = -128, 127  # int8


# --8<-- [start:given]
def dequantize_per_channel(q: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """What int8 values stand for: `scales[c] * q[c]` for each output channel c (dim 0),
    as float32 (symmetric: every zero point is 0)."""
    return q.float() * scales.reshape(-1, *[1] * (q.dim() - 1))


def relative_error(weight: torch.Tensor, q: torch.Tensor, scales: torch.Tensor) -> float:
    """`||dequantized - weight|| / ||weight||`: how much of the weight rounding lost."""
    return ((dequantize_per_channel(q, scales) - weight).norm() / weight.norm()).item()


# --8<-- [end:given]


# --8<-- [start:solution]
def per_channel_scales(weight: torch.Tensor) -> torch.Tensor:
    """Symmetric int8 scales, one per output channel (dim 0) of a Linear or Conv2d weight."""
    largest = weight.detach().abs().flatten(1).amax(dim=1)  # max |w| of each channel
    # Symmetric: [-largest, largest] onto [-127.5, 127.5], PyTorch's (QMAX - QMIN) / 2.
    scales = largest / ((QMAX - QMIN) / 2)
    # An all-zero channel would get scale 0 and divide by it; PyTorch uses float32's eps.
    return scales.float().clamp(min=torch.finfo(torch.float32).eps)


def quantize_per_channel(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`weight` as int8 values and a scale per output channel: `weight[c] ≈ scales[c] * q[c]`."""
    scales = per_channel_scales(weight)
    # Each channel's 1 / scale, shaped to broadcast over the channel's entries; multiplied,
    # in float32, as PyTorch rounds (a division can land a half step on the other side).
    inverse = (1 / scales).reshape(-1, *[1] * (weight.dim() - 1))
    # The largest |w| lands on 127.5, which rounds to 128: clamp it into int8's range.
    q = torch.round(weight.detach() * inverse).clamp(QMIN, QMAX)
    return q.to(torch.int8), scales


# --8<-- [end:solution]
