"""What the Proxy asks of torch and of Python (beside chapter 1's path).

`__torch_function__` asks whether a function is a tensor method (then it is
recorded as `call_method`); `__iter__` asks which bytecode instruction its
caller is running (`a, b = proxy` unpacks a count written in the source).
"""

from __future__ import annotations

import dis
import functools
import sys
from bisect import bisect_left
from typing import Callable

import torch

from . import errors


def is_tensor_method_or_property(function: Callable) -> bool:
    """`torch.overrides.is_tensor_method_or_property`, without its cost per call.

    torch's version enters `warnings.catch_warnings()` on every call (about 2 µs,
    a sixth of recording a node); the set of tensor methods it looks in is
    fixed, so it is read once. A TorchBind object's method, which has no
    `__name__` to record, is refused with a clear `TraceError`.
    """
    if isinstance(function, torch.ScriptMethod) and not hasattr(function, "__name__"):
        raise errors.untraceable(
            f"`{function.name}`, a method of a TorchScript class (TorchBind) object, "
            "was called with a Proxy.",
            "minifx does not cover TorchScript methods: it records a call under the "
            "function's __name__, which a TorchBind method lacks (torch.fx records it "
            "as a call_method on the object).",
            "make the module that calls it a leaf (override Tracer.is_leaf_module), or "
            "move the call into a function registered with minifx.wrap.",
        )
    return function in tensor_methods() or function.__name__ == "__get__"


@functools.cache
def tensor_methods() -> frozenset:
    """torch's overridable methods of `torch.Tensor`, read once."""
    return frozenset(torch.overrides.get_overridable_functions()[torch.Tensor])


def current_instruction(depth: int = 0) -> dis.Instruction:
    """The bytecode instruction that the caller is executing, or the frame `depth` levels
    above it. The frame is read here and handed to nothing (see `errors.user_location`)."""
    frame = sys._getframe(depth + 1)
    code, offset = frame.f_code, frame.f_lasti
    instructions = list(dis.get_instructions(code))
    return instructions[bisect_left(instructions, offset, key=lambda i: i.offset)]
