"""Exercise 8.2: Per-channel weights.

`minifx.passes.int8.quantize_weight` gives a whole weight one scale, set by its largest
entry. Give each output channel (each row of a Linear's weight, each filter of a
Conv2d's) its own symmetric int8 scale instead, as PyTorch's x86 default does, and
measure how much less rounding loses. The int8 values are a plain `torch.int8` tensor,
their scales a float32 tensor beside it, as in minifx's int8 path.

Read first: chapters/08-quantization.md#exercise-82-per-channel-weights
Grade with: `make grade CH=8`
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


def per_channel_scales(weight: torch.Tensor) -> torch.Tensor:
    """Symmetric int8 scales, one per output channel (dim 0) of a Linear or Conv2d weight.

    For channel c: `max |weight[c]|` over all its entries, divided by
    `(QMAX - QMIN) / 2` (127.5, as PyTorch's observers do), and never below
    `torch.finfo(torch.float32).eps` (an all-zero channel). A float32 tensor of
    `weight.shape[0]` scales, on the weight's device.
    """
    raise NotImplementedError(
        "Exercise 8.2: per_channel_scales is not written yet; "
        "see chapters/08-quantization.md#exercise-82-per-channel-weights"
    )


def quantize_per_channel(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`weight` as int8 values and a scale per output channel: `weight[c] ≈ scales[c] * q[c]`.

    Returns `(q, scales)`: the scales from `per_channel_scales`, and `q`, a `torch.int8`
    tensor of the weight's shape, `round(weight[c] * (1 / scales[c]))` for each channel c,
    clamped to QMIN..QMAX (symmetric: zero points 0). Multiply by the float32 reciprocal,
    as PyTorch's kernels and minifx's `quantize_weight` do: a division rounds some values
    that lie near a half step to the other side.
    """
    raise NotImplementedError(
        "Exercise 8.2: quantize_per_channel is not written yet; "
        "see chapters/08-quantization.md#exercise-82-per-channel-weights"
    )
