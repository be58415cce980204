"""Chapter 4: the same rewrites as an Interpreter, a Transformer and Proxy rules.

`NegSigmoidSwap` changes what a graph computes while it runs;
`NegSigmoidSwapTransformer` has the same body on a `Transformer`, and records
the change into a new graph instead. `ReluToGelu` is chapter 3's relu -> gelu
edit as a Transformer, and `RELU_RULES` decomposes relu with `decompose`.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from minifx.interpreter import Interpreter, Transformer


# --8<-- [start:swap]
class NegSigmoidSwap(Interpreter):
    """Runs a graph with every `torch.sigmoid` computed as `torch.neg`, and
    every `.neg()` method computed as `.sigmoid()`."""

    def call_function(self, target: Any, args: tuple, kwargs: dict) -> Any:
        if target is torch.sigmoid:
            return torch.neg(*args, **kwargs)
        return super().call_function(target, args, kwargs)

    def call_method(self, target: str, args: tuple, kwargs: dict) -> Any:
        if target == "neg":
            receiver, *rest = args
            return receiver.sigmoid(*rest, **kwargs)
        return super().call_method(target, args, kwargs)


# --8<-- [end:swap]


# --8<-- [start:swap_transformer]
class NegSigmoidSwapTransformer(Transformer):
    """The same swap, recorded into a new graph: the body is `NegSigmoidSwap`'s."""

    def call_function(self, target: Any, args: tuple, kwargs: dict) -> Any:
        if target is torch.sigmoid:
            return torch.neg(*args, **kwargs)
        return super().call_function(target, args, kwargs)

    def call_method(self, target: str, args: tuple, kwargs: dict) -> Any:
        if target == "neg":
            receiver, *rest = args
            return receiver.sigmoid(*rest, **kwargs)
        return super().call_method(target, args, kwargs)


# --8<-- [end:swap_transformer]


# --8<-- [start:relu_to_gelu]
class ReluToGelu(Transformer):
    """Records `F.gelu(x)` where the old graph calls `torch.relu(x)` or an
    out-of-place `F.relu(x)`."""

    def call_function(self, target: Any, args: tuple, kwargs: dict) -> Any:
        if target in (torch.relu, F.relu) and not kwargs.get("inplace", False):
            return F.gelu(args[0])
        return super().call_function(target, args, kwargs)


# --8<-- [end:relu_to_gelu]


# --8<-- [start:rules]
def relu_decomposition(x: Any, inplace: bool = False) -> Any:
    """relu from a comparison and a product. `inplace` is there because
    `F.relu(x)` is recorded with `kwargs = {inplace: False}`."""
    return (x > 0) * x


RELU_RULES = {torch.relu: relu_decomposition, F.relu: relu_decomposition}
# --8<-- [end:rules]
