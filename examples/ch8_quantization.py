"""Chapter 8's models and the whole post-training quantization recipe, start to end.

`AutoEncoder` is shaped like DeepRecommender, the model of the torch.fx paper's
quantization case study: dense layers n -> 512 -> 512 -> 1024 -> 512 -> 512 -> n with
SELU between them. `MLP` and `SmallCNN` are small models for the tests and the book.
"""

from __future__ import annotations

from typing import Iterable

import torch
from torch import nn

from minifx.codegen import GraphModule
from minifx.passes.quantize import convert, prepare


# --8<-- [start:models]
class AutoEncoder(nn.Module):
    """DeepRecommender's shape: n -> 512 -> 512 -> 1024 -> 512 -> 512 -> n, SELU between."""

    def __init__(self, n: int = 4096, hidden: tuple[int, ...] = (512, 512, 1024, 512, 512)) -> None:
        super().__init__()
        sizes = (n, *hidden, n)
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers[:-1]:
            x = nn.functional.selu(layer(x))
        return self.layers[-1](x)


class MLP(nn.Module):
    """Linear + ReLU (fused in int8), Linear, Linear (no float op between), SELU, Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.relu = nn.Linear(16, 32), nn.ReLU()
        self.fc2, self.fc3, self.fc4 = nn.Linear(32, 32), nn.Linear(32, 32), nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.fc3(self.fc2(self.relu(self.fc1(x))))
        return self.fc4(torch.selu(x))


# --8<-- [end:models]


class SmallCNN(nn.Module):
    """Conv2d + relu (fused), strided and grouped convs, a float pooling, a Linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.down = nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False)
        self.grouped = nn.Conv2d(16, 16, 3, padding=2, dilation=2, groups=4)
        self.head = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x).relu()
        x = torch.relu(self.grouped(self.down(x)))
        return self.head(x.mean((2, 3)))


# --8<-- [start:recipe]
def quantize(model: nn.Module, calibration: Iterable[torch.Tensor]) -> GraphModule:
    """Post-training quantization of an eval-mode `model`: prepare, calibrate, convert."""
    prepared = prepare(model)
    with torch.no_grad():
        for batch in calibration:
            prepared(batch)  # the observers record each value's range
    return convert(prepared)


def relative_error(output: torch.Tensor, reference: torch.Tensor) -> float:
    """`||output - reference|| / ||reference||`: 0.01 means 1% of the signal."""
    return ((output - reference).norm() / reference.norm()).item()


# --8<-- [end:recipe]
