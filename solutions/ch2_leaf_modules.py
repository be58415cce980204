"""Exercise 2.1: leaf modules (solution).

`Tracer.is_leaf_module` decides, for every module call, whether the graph
gets one `call_module` node or the operations of the module's `forward`.
Overriding it is how a tracer chooses the granularity of its graph, and how
it traces a model around a module whose `forward` cannot be traced.
"""

import torch
from torch import nn

from minifx.graph import Tracer


# --8<-- [start:given]
def linear_relu() -> nn.Module:
    """The model to compare the tracers on."""
    return nn.Sequential(nn.Linear(8, 4), nn.ReLU())


class Scale(nn.Module):
    """Multiplies by a learned per-feature scale; traces fine."""

    def __init__(self, features: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.weight


class Clip(nn.Module):
    """Clamps to [-1, 1], but only when a value is out of range: the `if`
    looks at the data, so this `forward` cannot be traced."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if (x.abs() > 1).any():
            return x.clamp(-1, 1)
        return x


class Block(nn.Module):
    """Linear, then Scale, then ReLU, then Clip."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(8, 8)
        self.scale = Scale(8)
        self.clip = Clip()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.clip(self.scale(self.linear(x)).relu())


# --8<-- [end:given]


# --8<-- [start:solution]
class FlatTracer(Tracer):
    """A tracer for which no module is a leaf: every `forward` is traced into."""

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        return False


class OpaqueTracer(Tracer):
    """The default tracer, plus: instances of `leaf_types` are leaves too."""

    def __init__(self, leaf_types: tuple[type, ...]) -> None:
        super().__init__()
        self.leaf_types = tuple(leaf_types)

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        # Keep the default leaves (nn.Linear, nn.ReLU, ...) and add the chosen types.
        return isinstance(m, self.leaf_types) or super().is_leaf_module(m, module_qualified_name)


# --8<-- [end:solution]
