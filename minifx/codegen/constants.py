"""Constants that have no plain literal, in generated code.

`python_code` writes a node's arguments with `_SourceWriter.expression`: nodes
as their variables, `None`, bools, ints, strings and plain containers as
literals. Every other constant comes here, and is written as torch.fx writes
it, by a path that is checked to lead to the very object, or as a global:

- `nan` and `inf` (globals from `math`; `repr` would write the names unbound);
- named tuples (`Point(1, 2)`) and list or dict subclasses (`OrderedDict({...})`),
  rebuilt through their class;
- `slice(a, b, c)`, dtypes (`torch.float32`), devices (`device(type='cpu')`),
  complex numbers, enum members (`Color.RED`);
- sets, frozensets, ranges and bytearrays, as their `repr` writes them (`{1, 2}`,
  `range(0, 3)`), with the builtins' names checked;
- anything else: bound as a global under a name made from its class.
"""

from __future__ import annotations

import enum
import math
from typing import TYPE_CHECKING, Any

import torch

from .syntax import global_hint, is_name, plain

if TYPE_CHECKING:
    from .python_code import _SourceWriter


def constant_expression(writer: _SourceWriter, arg: Any) -> str:
    """Source that evaluates to `arg`, a constant `writer.expression` has no literal for."""
    if type(arg) is float:
        return _float(writer, arg)
    if isinstance(arg, tuple):  # a named tuple: plain tuples are literals
        cls = writer.global_name(type(arg), global_hint(type(arg)))
        return f"{cls}({', '.join(writer.expression(a) for a in arg)})"
    if isinstance(arg, list):  # a subclass of list: rebuilt from a list literal
        return _of_type(writer, arg, "[" + ", ".join(writer.expression(a) for a in arg) + "]")
    if isinstance(arg, dict):  # a subclass of dict (an OrderedDict, say)
        items = ", ".join(f"{writer.expression(k)}: {writer.expression(v)}" for k, v in arg.items())
        return _of_type(writer, arg, "{" + items + "}")
    if type(arg) is slice:
        return (
            f"slice({writer.expression(arg.start)}, {writer.expression(arg.stop)}, "
            f"{writer.expression(arg.step)})"
        )
    return _special_constant(writer, arg)


def _builtin_container(writer: _SourceWriter, arg: set | frozenset | range | bytearray) -> str:
    """`{1, 2}`, `frozenset({1})`, `range(0, 3)`, `bytearray(b'x')`: the `repr`, as torch.fx
    pastes it, with items written as every argument is."""
    name = writer.global_name(type(arg), type(arg).__name__)  # the builtin, unless shadowed
    if type(arg) is range:
        step = f", {arg.step}" if arg.step != 1 else ""
        return f"{name}({arg.start}, {arg.stop}{step})"
    if type(arg) is bytearray:
        return f"{name}({bytes(arg)!r})"
    items = ", ".join(writer.expression(item) for item in arg)
    if not arg:
        return f"{name}()"
    return f"{{{items}}}" if type(arg) is set else f"{name}({{{items}}})"


def _unbound_floats_free(writer: _SourceWriter, value: complex) -> bool:
    """Whether `repr(value)` evaluates: a real part `inf` or `nan` needs those globals
    under their own names (a parameter may have taken one)."""
    if math.isfinite(value.real):
        return True
    return (
        writer.global_name(math.inf, "inf") == "inf"
        and writer.global_name(math.nan, "nan") == "nan"
    )


def _of_type(writer: _SourceWriter, container: list | dict, literal: str) -> str:
    """`OrderedDict({...})`: a container subclass, rebuilt from its literal."""
    return f"{writer.global_name(type(container), global_hint(type(container)))}({literal})"


def _float(writer: _SourceWriter, value: float) -> str:
    if math.isnan(value):
        return writer.global_name(math.nan, "nan")
    if math.isinf(value):
        return ("-" if value < 0 else "") + writer.global_name(math.inf, "inf")
    return repr(value)


def _special_constant(writer: _SourceWriter, arg: Any) -> str:
    """dtypes, devices, enums and other objects: by a checked path, or as a global."""
    if type(arg) in (set, frozenset, range, bytearray):
        return _builtin_container(writer, arg)
    if isinstance(arg, (torch.dtype, torch.layout, torch.memory_format, torch.qscheme)):
        torch_name = writer.global_name(torch, "torch")
        attribute = str(arg).removeprefix("torch.")
        if getattr(torch, attribute, None) is arg:
            return f"{torch_name}.{attribute}"
    if type(arg) is torch.device:
        index = "" if arg.index is None else f", index={arg.index}"
        return f"{writer.global_name(torch.device, 'device')}(type={arg.type!r}{index})"
    if type(arg) is complex and math.isfinite(arg.imag) and _unbound_floats_free(writer, arg):
        return repr(arg)  # `(1+2j)`, `(inf+1j)`; `(1+infj)` would not evaluate
    if isinstance(arg, enum.Enum) and is_name(arg.name):
        return f"{writer.global_name(type(arg), type(arg).__name__)}.{plain(arg.name)}"
    return writer.global_name(arg, global_hint(arg))
