"""Chapter 0: one small program, captured three ways.

`shift` branches on a tensor's *value*; `plus_zeros` turns a size into a
Python `int`; `TinyNet` is the kind of module
torch.fx was designed for. `jit_trace` and `jit_script` call torch's two
TorchScript front ends and return what they warned, so the book can show the
warnings as data instead of letting them scroll past.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import torch
from torch import nn


# --8<-- [start:programs]
def shift(x: torch.Tensor) -> torch.Tensor:
    """Adds 1 to a tensor whose sum is positive, subtracts 1 otherwise."""
    if x.sum() > 0:
        return x + 1
    return x - 1


class TinyNet(nn.Module):
    """A linear layer, a relu and a sum: no control flow on values."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 3)

    def forward(self, x):
        return torch.relu(self.linear(x)).sum(dim=1)


def plus_zeros(x: torch.Tensor) -> torch.Tensor:
    """Adds zeros of the same length, made from a plain Python `int`."""
    n = int(x.shape[0])
    return x.new_zeros(n) + x


# --8<-- [end:programs]


def _recording(capture: Callable[[], Any]) -> tuple[Any, list[str]]:
    """Runs `capture()`, returning its result and the distinct warning
    messages it raised, first line only, in the order they were raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = capture()
    messages = dict.fromkeys(str(w.message).splitlines()[0] for w in caught)
    return result, list(messages)


def jit_trace(fn: Callable, example: torch.Tensor) -> tuple[Any, list[str]]:
    """`torch.jit.trace(fn, example)`, and the warnings it raised."""
    return _recording(lambda: torch.jit.trace(fn, example))


def jit_script(fn: Callable) -> tuple[Any, list[str]]:
    """`torch.jit.script(fn)`, and the warnings it raised."""
    return _recording(lambda: torch.jit.script(fn))


def node_kinds(scripted: Any) -> list[str]:
    """The kinds of the top-level nodes of a TorchScript graph, constants left out."""
    return [n.kind() for n in scripted.graph.nodes() if n.kind() != "prim::Constant"]
