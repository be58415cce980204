"""Chapter 5's graph pictures, drawn by `python -m examples.figures`.

Each entry builds a graph; `examples/figures.py` writes it with `to_mermaid`
to `chapters/figures/<name>.mmd`, which `chapters/05-shape-prop.md` includes.
"""

from __future__ import annotations

import torch
from torch import nn

from examples.ch4_shape_prop import TinyCNN
from minifx.codegen import GraphModule, symbolic_trace


# --8<-- [start:block]
class ResidualBlock(nn.Module):
    """Two convolutions and a skip connection: a value used twice."""

    def __init__(self, channels: int = 8) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        y = torch.relu(self.conv1(x))
        return torch.relu(x + self.conv2(y))


# --8<-- [end:block]


def tiny_cnn() -> GraphModule:
    """Chapter 4's TinyCNN: all six opcodes in one picture."""
    return symbolic_trace(TinyCNN())


def residual_block() -> GraphModule:
    return symbolic_trace(ResidualBlock())


FIGURES = {
    "ch5_tiny_cnn": tiny_cnn,
    "ch5_residual_block": residual_block,
}
