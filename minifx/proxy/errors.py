"""`TraceError`: the one error for code that symbolic tracing cannot record.

A Proxy stands for a value that does not exist yet. Whenever Python needs that
value *now* (to pick a branch, count a loop, return a length), tracing must
stop. The message then answers four questions: what went wrong, where in the
user's code, why a Proxy cannot do it, and how to fix it.
"""

from __future__ import annotations

import linecache
import os
import sys
from types import FrameType

import torch
import torch.fx.proxy

# Frames inside these folders are library machinery, never the user's line...
_LIBRARY_DIRS = (
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,  # minifx/
    os.path.dirname(os.path.abspath(torch.__file__)) + os.sep,  # torch/
)
# ...except the forward methods of torch.nn's modules, which a tracer with
# fewer leaf modules runs; there, the failing line is the one to show.
_MODULE_CODE_DIR = os.path.join(_LIBRARY_DIRS[1], "nn", "modules") + os.sep
# `nn.Module.__call__` itself is machinery: it only passes the call on to `forward`.
_MODULE_CALL_FILE = os.path.join(_MODULE_CODE_DIR, "module.py")


class TraceError(torch.fx.proxy.TraceError):
    """Raised when traced code does something a symbolic value cannot support.

    Examples: `if proxy:`, `for v in proxy:`, `len(proxy)`, `f(*proxy)`,
    `int(proxy)`. It subclasses torch.fx's `TraceError` (a `ValueError`), so an
    `except` clause written for torch.fx catches it. (torch imports torch.fx anyway;
    minifx uses nothing else of it.)
    """


# Where torch.fx raises another type for the same mistake, minifx's error is that
# type too, so that an `except` clause written for torch.fx catches it.
class TraceRuntimeError(TraceError, RuntimeError):
    """A `TraceError` where torch.fx raises `RuntimeError` (`len(proxy)`, say)."""


class TraceTypeError(TraceError, TypeError):
    """A `TraceError` where torch.fx raises `TypeError` (`int(proxy)`, say)."""


class TraceNotImplementedError(TraceError, NotImplementedError):
    """A `TraceError` where torch.fx raises `NotImplementedError` (an unknown argument type)."""


def untraceable(what: str, why: str, fix: str, kind: type[TraceError] = TraceError) -> TraceError:
    """Build a `TraceError` that points at the user's line of code.

    Args:
        what: what the user's code tried to do, naming the value (`%gt`).
        why: why a Proxy cannot support it.
        fix: what to write instead.
        kind: the `TraceError` subclass that is also the type torch.fx raises.

    Returns:
        The error, ready to be raised.
    """
    where = user_location()
    lines = [what]
    if where:
        lines.append(where)
    lines += [f"Why: {why}", f"How to fix: {fix}"]
    return kind("\n".join(lines))


def user_location() -> str | None:
    """The innermost stack frame outside minifx and torch, formatted like a traceback.

    Code of `torch.nn` modules counts as the user's: a tracer that traces
    through a `BatchNorm2d` should point at its failing line.

    Returns:
        `File "path", line N, in function` and the source line, or `None`
        when no user frame exists (everything ran inside the libraries).
    """
    frame = _user_frame(sys._getframe(1))
    if frame is None:
        return None
    filename, lineno = frame.f_code.co_filename, frame.f_lineno
    where = f'  File "{filename}", line {lineno}, in {frame.f_code.co_name}'
    source = linecache.getline(filename, lineno).strip()
    return f"{where}\n    {source}" if source else where


def _user_frame(frame: FrameType | None) -> FrameType | None:
    while frame is not None and is_library_code(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def is_library_code(filename: str) -> bool:
    """Whether a frame of `filename` is library machinery (minifx, torch) rather than the
    user's code; `torch.nn`'s module code counts as the user's, but not `Module.__call__`."""
    if filename == _MODULE_CALL_FILE:
        return True
    return filename.startswith(_LIBRARY_DIRS) and not filename.startswith(_MODULE_CODE_DIR)
