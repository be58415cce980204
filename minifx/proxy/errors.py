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
    # The frame is read and walked here, never handed to a function looked up by name:
    # whoever swapped that name would get the frame, and through it the whole stack.
    frame = sys._getframe(1)
    while frame is not None and is_library_code(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return None
    filename, lineno = frame.f_code.co_filename, frame.f_lineno
    where = f'  File "{filename}", line {lineno}, in {frame.f_code.co_name}'
    source = linecache.getline(filename, lineno).strip()
    return f"{where}\n    {source}" if source else where


def is_library_code(filename: str) -> bool:
    """Whether a frame of `filename` is library machinery (minifx, torch) rather than the
    user's code; `torch.nn`'s module code counts as the user's, but not `Module.__call__`."""
    if filename == _MODULE_CALL_FILE:
        return True
    return filename.startswith(_LIBRARY_DIRS) and not filename.startswith(_MODULE_CODE_DIR)


# -- The message for each construct a Proxy cannot record -----------------------------
# Each names the value (`%x`), says why a Proxy cannot support it and what to write
# instead; `untraceable` adds the user's line.


def used_as_bool(name: str) -> TraceError:
    """`if p:`, `while p:`, `p and q`, `not p`, `assert p`, `0 < p < 1`, `max(p, 1)`."""
    return untraceable(
        f"%{name} was used as a Python bool (in `if`, `while`, `and`, `or`, `not`, "
        "`assert`, a chained comparison like `0 < x < 1`, or `min()` / `max()`).",
        "symbolically traced variables cannot be used as inputs to control flow: "
        f"%{name} stands for a value that is only computed when the program runs, "
        "so the tracer cannot know which branch to record.",
        "compute both branches and choose with torch.where(condition, a, b); or, "
        "if the condition depends only on settings or shapes, decide it with plain "
        "Python values before tracing.",
    )


def iterated(name: str) -> TraceError:
    """`for v in p:`, `f(*p)`, `list(p)`, `f(**p)`."""
    return untraceable(
        f"%{name} was iterated over (a `for` loop, `*{name}`, `list({name})`, "
        "a starred assignment, or `**` unpacking, which iterates over `keys()`).",
        f"Proxy object cannot be iterated: the number of elements of %{name} is not "
        "known while tracing.",
        "loop over a range of known length and index (`for i in range(n): "
        f"{name}[i]`), unpack a fixed number of names (`a, b = {name}.chunk(2)`), "
        "or pass keyword arguments by name instead of `**`.",
    )


def len_called(name: str) -> TraceError:
    """`len(p)`: a `RuntimeError` too, as torch.fx raises."""
    return untraceable(
        f"len() was called on %{name}.",
        "'len' is not supported in symbolic tracing by default: len() must return a "
        f"Python int now, but the size of %{name} is not known while tracing.",
        "use x.size(0) or x.shape[0], which are recorded like any other operation "
        "(or record the call itself with minifx.wrap('len') at module scope).",
        TraceRuntimeError,
    )


def item_assigned(name: str) -> TraceError:
    """`p[i] = v`: torch.fx raises Python's bare `TypeError`; this one says what to do."""
    return untraceable(
        f"%{name} was assigned to by index (`{name}[...] = value`).",
        "item assignment changes a tensor in place, and a Proxy records only "
        "operations that return new values.",
        f"build the new value instead, for example with torch.where(mask, value, {name}) "
        f"or {name}.index_put(...), or write into a real tensor outside the traced code.",
        TraceTypeError,
    )


def converted_to_number(name: str, kind: str) -> TraceError:
    """`int(p)`, `float(p)`, `range(p)`: `kind` says which number was asked for."""
    return untraceable(
        f"%{name} was converted to {kind}.",
        f"a Python number must be known now, but %{name} is only known when the program runs.",
        "keep the value a tensor (torch functions accept tensors), or pass plain numbers "
        "into the traced function as arguments.",
        TraceTypeError,
    )


def several_tracers(function_name: str, count: int) -> TraceError:
    """One call received Proxies of `count` tracers (0 or 2 and more)."""
    return untraceable(
        f"{function_name}() received Proxies from {count} tracers.",
        "each trace records into one graph, so one call cannot belong to two traces "
        "(or to none, when the Proxy sits in a container minifx does not look into).",
        "use values from one trace per call; pass Proxies directly or in lists, "
        "tuples, dicts or slices.",
        TraceRuntimeError,
    )


def proxy_as_dict_key(name: str) -> TraceError:
    """A Proxy inside a key of a dict argument."""
    return untraceable(
        f"%{name} was used as a dict key.",
        "keys for dictionaries used as an argument cannot contain a Node: keys are "
        "hashed now, but a Proxy's value is only known later.",
        "use plain Python values (strings, numbers) as keys.",
        TraceRuntimeError,
    )


def not_recordable(value: object) -> TraceError:
    """An argument of a type that a record could not reproduce."""
    return untraceable(
        f"an argument of type {type(value).__qualname__} cannot be recorded: {value!r}",
        "a record holds only Proxies, Python numbers and strings, tensors, dtypes, "
        "devices, None, Ellipsis and lists, tuples, dicts, slices and dataclasses of those.",
        "pass the value in another form (for example a tensor or a number), "
        "compute it outside the traced code, or give its class a method "
        "__fx_create_arg__(self, tracer) that records it.",
        TraceNotImplementedError,
    )


def variadic_parameter(function_name: str, parameter: object) -> TraceError:
    """The tape cannot trace a function that takes `*args` or `**kwargs`."""
    return untraceable(
        f"{function_name}() takes {parameter}, which has no fixed number of inputs.",
        "each input becomes one placeholder, so the inputs must be named.",
        "give the function named parameters, or trace a small wrapper that has them.",
    )
