"""Observers: what post-training quantization learns from calibration data (chapter 8).

An observer is a module that returns its input unchanged and records the running minimum
and maximum of what flows through it; `calculate_qparams` turns that range into the
scale and zero point of an int8 encoding. `ACTIVATION` and `WEIGHT` are the two encodings
minifx uses, the ones PyTorch's x86 defaults use.
"""

from __future__ import annotations

import torch
from torch import nn

# --8<-- [start:qconfig]
# What PyTorch's x86 defaults expect: activations unsigned and affine, weights signed and
# symmetric (zero point 0). `reduce_range` keeps activations in 0..127: fbgemm, PyTorch's
# int8 library, adds pairs of u8 x s8 products in 16 bits on CPUs without VNNI, where
# 255 * 127 * 2 would overflow. minifx keeps the scheme (torch.ao is its oracle), and
# 0..127 has a second use here: it fits a signed byte, so activations are plain
# `torch.int8` tensors, as `torch._int_mm` wants them.
ACTIVATION = {"dtype": torch.quint8, "qscheme": torch.per_tensor_affine, "reduce_range": True}
WEIGHT = {"dtype": torch.qint8, "qscheme": torch.per_tensor_symmetric, "reduce_range": False}
# --8<-- [end:qconfig]


# --8<-- [start:observer]
class MinMaxObserver(nn.Module):
    """Records the running minimum and maximum of what flows through it; returns its input.

    Args:
        dtype: `torch.quint8` (0..255) or `torch.qint8` (-128..127): which integers the
            values will be encoded in (the name of the range, as in PyTorch's observers).
        qscheme: `torch.per_tensor_affine` (any zero point) or
            `torch.per_tensor_symmetric` (zero point in the middle of the range).
        reduce_range: Use one bit less (0..127 or -64..63).

    Attributes:
        min_val: The smallest value seen so far (`inf` before any data).
        max_val: The largest value seen so far (`-inf` before any data).
    """

    def __init__(
        self,
        dtype: torch.dtype = torch.quint8,
        qscheme: torch.qscheme = torch.per_tensor_affine,
        reduce_range: bool = False,
    ) -> None:
        super().__init__()
        self.dtype, self.qscheme, self.reduce_range = dtype, qscheme, reduce_range
        self.register_buffer("min_val", torch.tensor(float("inf")))
        self.register_buffer("max_val", torch.tensor(float("-inf")))

    # --8<-- [task:8.1] "Observers" points=5 section=08-quantization.md#observers
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Widen `min_val` and `max_val` to take in the values of `x`; return `x` as it is."""
        values = x.detach()
        self.min_val.copy_(torch.minimum(self.min_val, values.min()))
        self.max_val.copy_(torch.maximum(self.max_val, values.max()))
        return x

    # --8<-- [end-task:8.1]

    @property
    def has_seen_data(self) -> bool:
        """Whether any data went through the observer (calibration ran)."""
        return bool(self.min_val <= self.max_val)

    # --8<-- [task:8.1]
    @property
    def quant_range(self) -> tuple[int, int]:
        """The smallest and largest integer of the dtype, one bit less with reduce_range."""
        low, high = (0, 255) if self.dtype == torch.quint8 else (-128, 127)
        if self.reduce_range:
            low, high = low // 2, high // 2
        return low, high

    def calculate_qparams(self) -> tuple[float, int]:
        """The scale and zero point that map the recorded range onto `quant_range`.

        The range is widened to include 0, so that 0.0 (padding, a relu's zeros) is
        exactly representable. Computed in float32, as PyTorch's observers do.
        """
        low, high = self.quant_range
        min_neg = torch.clamp(self.min_val.float().cpu(), max=0.0)
        max_pos = torch.clamp(self.max_val.float().cpu(), min=0.0)
        eps = torch.finfo(torch.float32).eps
        if self.qscheme == torch.per_tensor_symmetric:
            scale = torch.maximum(-min_neg, max_pos) / ((high - low) / 2)
            zero_point = (low + high + 1) // 2 if self.dtype == torch.quint8 else 0
            return max(scale.item(), eps), zero_point
        scale = torch.clamp((max_pos - min_neg) / (high - low), min=eps)
        zero_point = low - torch.round(min_neg / scale).int().item()
        return scale.item(), min(max(zero_point, low), high)

    # --8<-- [end-task:8.1]

    def extra_repr(self) -> str:
        return f"min_val={self.min_val.item():.4g}, max_val={self.max_val.item():.4g}"


# --8<-- [end:observer]
