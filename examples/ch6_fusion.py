"""Chapter 6's running example: a residual block of Conv2d + BatchNorm2d pairs.

`chapters/06-conv-bn-fusion.md` fuses it, and `examples/ch6_figures.py`
draws it before and after.
"""

from __future__ import annotations

import torch
from torch import nn


# --8<-- [start:block]
class ConvBNBlock(nn.Module):
    """ResNet's basic block: two conv -> BatchNorm pairs and a skip connection."""

    def __init__(self, channels: int = 8) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(y)))


# --8<-- [end:block]


def trained(model: nn.Module, seed: int = 0) -> nn.Module:
    """`model` in eval mode, with BatchNorm statistics as training would leave them.

    A fresh BatchNorm has mean 0, variance 1, gamma 1, beta 0: it computes
    (almost) `x`, and fusing it would prove nothing. Random values stand in
    for the statistics a real training run records.
    """
    generator = torch.Generator().manual_seed(seed)
    for bn in model.modules():
        if isinstance(bn, nn.modules.batchnorm._BatchNorm):
            shape = bn.running_mean.shape
            bn.running_mean.copy_(torch.rand(shape, generator=generator) - 0.5)
            bn.running_var.copy_(torch.rand(shape, generator=generator) + 0.5)
            bn.weight.data.copy_(torch.rand(shape, generator=generator) + 0.5)
            bn.bias.data.copy_(torch.rand(shape, generator=generator) - 0.5)
    return model.eval()
