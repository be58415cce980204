"""Exercise 8.1: PTQ observers.

Before a model can run in int8, we need the range of each activation: the smallest
and largest value it takes on representative data. An observer records it: a
module that returns its input unchanged and remembers the running min and max.
Put a `MinMaxObserver` after every relu of a GraphModule, register it as a
submodule, calibrate, and read the recorded ranges back.

Read first: chapters/08-quantization.md#exercise-81-ptq-observers
Grade with: `make grade CH=8`
"""

from __future__ import annotations

from typing import Iterable

import torch
import torch.nn.functional as F  # noqa: F401  (you will need it)
from torch import nn  # noqa: F401  (you will need it)

from minifx.codegen import GraphModule
from minifx.graph import Node
from minifx.passes.quantize import MinMaxObserver  # noqa: F401  (you will need it)


# --8<-- [start:given]
def calibrate(gm: GraphModule, batches: Iterable[torch.Tensor]) -> None:
    """Run each batch through `gm` without recording gradients: the observers record."""
    with torch.no_grad():
        for batch in batches:
            gm(batch)


# --8<-- [end:given]


def is_relu(gm: GraphModule, node: Node) -> bool:
    """Whether `node` computes a relu, in any of the four ways a graph records one.

    A `call_function` of `torch.relu` or `F.relu`; a `call_method` whose target is
    `"relu"` (`x.relu()`); a `call_module` of an `nn.ReLU` (`gm.get_submodule(node.target)`).
    Anything else (sigmoid, `nn.ReLU6`, in-place `relu_`, placeholders, ...) is not.
    """
    raise NotImplementedError(
        "Exercise 8.1: is_relu is not written yet; "
        "see chapters/08-quantization.md#exercise-81-ptq-observers"
    )


def insert_relu_observers(gm: GraphModule) -> list[str]:
    """Put a `MinMaxObserver` after every relu of `gm`, in place; return their names.

    For each relu node `r` (in graph order): register `MinMaxObserver()` on `gm` as
    the submodule `f"{r.name}_observer"` (`gm.add_submodule`), add a `call_module`
    node calling it on `r` right after `r` (`gm.graph.inserting_after`), and make
    every other user of `r` read the observer's output instead of `r`. Recompile
    at the end, and return the observers' names in graph order.
    """
    raise NotImplementedError(
        "Exercise 8.1: insert_relu_observers is not written yet; "
        "see chapters/08-quantization.md#exercise-81-ptq-observers"
    )


def observed_ranges(gm: GraphModule) -> dict[str, tuple[float, float]]:
    """The range each observer recorded, keyed by the name of the node it observes.

    For every `call_module` node of `gm` that calls a `MinMaxObserver`: the key is
    the name of the node it observes (its argument), the value
    `(observer.min_val.item(), observer.max_val.item())`.
    """
    raise NotImplementedError(
        "Exercise 8.1: observed_ranges is not written yet; "
        "see chapters/08-quantization.md#exercise-81-ptq-observers"
    )
