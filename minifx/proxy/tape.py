"""The first recorder: a flat tape of what a function did to its inputs.

`trace_to_tape(f)` calls `f` with one Proxy per parameter and returns the
`Tape` of records the Proxies left behind:

    tape():
        %x = placeholder[target=x]
        %add = call_function[target=operator.add](args = (%x, 1), kwargs = {})
        %relu = call_method[target=relu](args = (%add,), kwargs = {})
        return relu

Chapter 2 turns this list into torch.fx's Graph; the Proxy stays the same.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch

from .errors import variadic_parameter
from .ir import OPCODES, format_line
from .names import Namespace, target_to_name
from .proxy import Proxy, TracerBase


@dataclass(eq=False)  # eq=False: records compare and hash by identity, as nodes do
class Record:
    """One recorded operation, `name = op[target](*args, **kwargs)`, on the tape `graph`.

    In `args` and `kwargs`, a `Record` stands for the value it produced; `type`
    is an optional type annotation.
    """

    graph: Tape
    name: str
    op: str
    target: Any
    args: tuple
    kwargs: dict
    type: Any = None

    def __repr__(self) -> str:
        return self.name

    def format(self) -> str:
        """This record as a line of the tape's printout (no `[num_users=N]`)."""
        return format_line(self, leaf=_format_leaf)


class Tape:
    """A flat, append-only list of `Record`s, with torch.fx's naming rules."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        self._names = Namespace()

    # --8<-- [start:create_node]
    # --8<-- [task:1.1] "The tape" points=5 section=01-proxy.md#a-first-trace
    def create_node(
        self,
        op: str,
        target: Any,
        args: tuple = (),
        kwargs: dict | None = None,
        name: str | None = None,
        type_expr: Any = None,
    ) -> Record:
        """Append a record and return it (the interface every tracer writes through).

        Raises:
            ValueError: `f"unknown opcode {op!r}: a record's op is one of {OPCODES}"`.
        """
        if op not in OPCODES:
            raise ValueError(f"unknown opcode {op!r}: a record's op is one of {OPCODES}")
        unique_name = self._names.create_name(name or target_to_name(target))
        record = Record(self, unique_name, op, target, tuple(args), dict(kwargs or {}), type_expr)
        self.records.append(record)
        return record

    # --8<-- [end-task:1.1]
    # --8<-- [end:create_node]

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def __str__(self) -> str:
        return "\n".join(["tape():", *(f"    {r.format()}" for r in self.records)])


class TapeRecorder(TracerBase):
    """The stage-1 tracer: records a plain function onto a `Tape` (`self.graph`)."""

    def __init__(self) -> None:
        self.graph = Tape()

    # --8<-- [start:trace]
    # --8<-- [task:1.3] "Tracing a function onto a tape" points=5 section=01-proxy.md#a-first-trace
    def trace(self, fn: Callable) -> Tape:
        """Call `fn` with one Proxy per parameter (a `placeholder` record, holding the
        default value if any); return the tape, ending in an `output` record.

        Raises:
            TraceError: `variadic_parameter(fn.__qualname__, parameter)` for `*args` or
                `**kwargs` (`f"{name}() takes {parameter}, ..."`); or what a Proxy cannot do.
        """
        self.graph = Tape()
        positional, keywords = [], {}
        # A module's own signature is `(*args, **kwargs)`; its inputs are forward's.
        signature = inspect.signature(getattr(fn, "forward", fn))
        for parameter in signature.parameters.values():
            proxy = self._placeholder(fn, parameter)
            if parameter.kind is parameter.KEYWORD_ONLY:
                keywords[parameter.name] = proxy
            else:
                positional.append(proxy)
        result = fn(*positional, **keywords)
        self.create_node("output", "output", (self.create_arg(result),), {})
        return self.graph

    # --8<-- [end:trace]

    def _placeholder(self, fn: Callable, parameter: inspect.Parameter) -> Proxy:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            name = getattr(fn, "__qualname__", type(fn).__name__)
            raise variadic_parameter(name, parameter)
        default = () if parameter.default is parameter.empty else (parameter.default,)
        annotation = None if parameter.annotation is parameter.empty else parameter.annotation
        return self.create_proxy("placeholder", parameter.name, default, {}, type_expr=annotation)

    # --8<-- [end-task:1.3]


def trace_to_tape(fn: Callable) -> Tape:
    """Trace the plain function (or module) `fn` into a flat `Tape`."""
    return TapeRecorder().trace(fn)


def _format_leaf(arg: Any) -> str:
    if isinstance(arg, Record):
        return f"%{arg.name}"
    if isinstance(arg, torch.Tensor):
        # A constant tensor (say, a module's weight) would print all its values.
        shape = "x".join(map(str, arg.shape)) or "scalar"
        return f"<{type(arg).__name__} {shape} {str(arg.dtype).removeprefix('torch.')}>"
    return str(arg)
