"""A dunder method called by its name, `x.__int__()`, recorded as torch.fx records it.

torch.fx's Proxy has no `__int__`, `__float__`, `__index__` or `__setitem__`: `int(x)`
and `x[0] = y` fail with Python's `TypeError`, and `x.__int__()`, written out, reaches
`__getattr__` and records `call_method[target=__int__]`. minifx's Proxy has these
methods so that `int(x)` can explain what went wrong; the decorator below lets the
written-out call record all the same. Python calls both the same way, so the caller's
bytecode tells them apart: a call whose callee is an attribute of that name.
"""

from __future__ import annotations

import dis
import functools
import sys
import types
from bisect import bisect_right
from typing import Any, Callable

# Instructions between a call's callee and the call that start where the call starts.
_CALL_STEPS = frozenset({"CALL", "CALL_FUNCTION_EX", "PRECALL", "KW_NAMES", "CACHE"})


def recorded_when_called_by_name(method: Callable) -> Callable:
    """Wrap a Proxy dunder that raises: `x.__int__()` records `x.__int__()` instead."""

    @functools.wraps(method)
    def dunder(self: Any, *args: Any, **kwargs: Any) -> Any:
        name = called_attribute(1)
        if name is not None and getattr(type(self), name, None) is dunder:
            return self.tracer.create_proxy("call_method", name, (self, *args), kwargs)
        return method(self, *args, **kwargs)

    return dunder


def called_attribute(depth: int = 0) -> str | None:
    """The attribute `name` if the caller (or the frame `depth` levels above it) is running
    a call `<expression>.name(...)`, else `None` (for `int(x)`, `x[0] = y`, or a callee
    that is no attribute). The frame is handed to nothing (see `errors.user_location`)."""
    frame = sys._getframe(depth + 1)
    instructions = list(dis.get_instructions(frame.f_code))
    # During a call, f_lasti points past the CALL, into its inline cache: take the last
    # instruction that starts at or before it.
    index = bisect_right(instructions, frame.f_lasti, key=lambda i: i.offset) - 1
    call = instructions[index]
    if call.opname not in _CALL_STEPS:
        return None
    start = _start(call)
    for back in range(index - 1, -1, -1):
        instruction = instructions[back]
        if _start(instruction) == start and instruction.opname not in _CALL_STEPS:
            # The first instruction back that starts where the call does loads the callee.
            attribute = instruction.opname in ("LOAD_METHOD", "LOAD_ATTR")
            load = instructions[back - 1]
            if load.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                loaded = frame.f_globals.get(load.argval, frame.f_builtins.get(load.argval))
            else:
                loaded = frame.f_locals.get(load.argval) if load.opname == "LOAD_FAST" else None
            if not attribute or isinstance(loaded, types.ModuleType):
                return None  # `operator.__index__(x)` is a function, called with x
            return instruction.argval
    return None


def _start(instruction: dis.Instruction) -> tuple:
    return instruction.positions.lineno, instruction.positions.col_offset
