"""Exercise 2.1: leaf modules.

`Tracer.is_leaf_module` decides, for every module call, whether the graph
gets one `call_module` node or the operations of the module's `forward`.
Write two tracers that make different choices, and compare their graphs.

Read first: chapters/02-graph.md#leaf-modules
Grade with: `make grade CH=2`
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


class FlatTracer(Tracer):
    """A tracer for which no module is a leaf: every `forward` is traced into.

    Compare `FlatTracer().trace(linear_relu())` with `Tracer().trace(linear_relu())`:
    which function does `nn.Linear`'s `forward` call, and where did its weight
    and bias go?
    """

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        raise NotImplementedError(
            "Exercise 2.1: FlatTracer.is_leaf_module is not written yet; "
            "see chapters/02-graph.md#leaf-modules"
        )


class OpaqueTracer(Tracer):
    """The default tracer, plus: modules that are instances of `leaf_types` are leaves.

    An instance of a subclass of one of `leaf_types` counts too (`isinstance`).
    The default leaves (`nn.Linear`, `nn.ReLU`, ...) stay leaves, and every
    other user module is still traced through. For example,
    `OpaqueTracer((Clip,)).trace(Block())` records `self.clip(...)` as one
    `call_module` node and `self.scale(...)` as the `get_attr` and `mul` of
    `Scale.forward`.

    Args:
        leaf_types: a tuple of module classes to keep opaque.
    """

    def __init__(self, leaf_types: tuple[type, ...]) -> None:
        # Remember to call super().__init__(): the Tracer sets itself up there.
        raise NotImplementedError(
            "Exercise 2.1: OpaqueTracer.__init__ is not written yet; "
            "see chapters/02-graph.md#leaf-modules"
        )

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        raise NotImplementedError(
            "Exercise 2.1: OpaqueTracer.is_leaf_module is not written yet; "
            "see chapters/02-graph.md#leaf-modules"
        )
