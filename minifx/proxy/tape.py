"""The first recorder: a flat tape of what a function did to its inputs.

`trace_to_tape(f)` calls `f` with one Proxy per parameter and returns the
`Tape` of records the Proxies left behind:

    tape():
        %x = placeholder[target=x]
        %add = call_function[target=operator.add](args = (%x, 1), kwargs = {})
        %relu = call_method[target=relu](args = (%add,), kwargs = {})
        return relu

Each record has a name, an opcode (`op`), a `target`, and `args` / `kwargs`
in which earlier records stand for the values they produce. Chapter 2 turns
this list into torch.fx's Graph; the Proxy stays exactly the same.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Iterator

import torch

from .errors import untraceable
from .ir import OPCODES, format_line
from .names import Namespace, target_to_name
from .proxy import Proxy, TracerBase


class Record:
    """One recorded operation: `name = op[target](*args, **kwargs)`.

    Attributes:
        name: unique within its tape, such as `add_1`; printed as `%add_1`.
        op: one of the six opcodes in `OPCODES`.
        target: a function for `call_function`; a string (method name,
            parameter name, `"output"`) otherwise.
        args: positional arguments; a `Record` stands for the value it produced.
        kwargs: keyword arguments, likewise.
        graph: the `Tape` that holds this record.
        type: an optional type annotation.
    """

    def __init__(self, graph: Tape, name: str, op: str, target: Any,
                 args: tuple, kwargs: dict, type_expr: Any = None) -> None:
        self.graph, self.name, self.op, self.target = graph, name, op, target
        self.args, self.kwargs, self.type = args, kwargs, type_expr

    def __repr__(self) -> str:
        return self.name

    def format(self) -> str:
        """This record as one line of the tape's printout (the graph's line, less `[num_users=N]`)."""
        return format_line(self, leaf=_format_leaf)


class Tape:
    """A flat, append-only list of `Record`s, with torch.fx's naming rules."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        self._names = Namespace()

    # --8<-- [start:create_node]
    # --8<-- [task:1.1] "The tape" points=5 section=01-proxy.md#a-first-trace
    def create_node(self, op: str, target: Any, args: tuple = (), kwargs: dict | None = None,
                    name: str | None = None, type_expr: Any = None) -> Record:
        """Append a record and return it (the interface every tracer writes through).

        Raises:
            ValueError: if `op` is not one of the six opcodes.
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
        """Call `fn` with one Proxy per parameter; return the tape it leaves.

        Parameters become `placeholder` records (a default value is kept in
        the record's `args`), the return value becomes the `output` record.

        Raises:
            TraceError: if `fn` takes `*args` / `**kwargs`, or does something
                a Proxy cannot record.
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
            raise untraceable(
                f"{getattr(fn, '__qualname__', type(fn).__name__)}() takes {parameter}, "
                "which has no fixed number of inputs.",
                "each input becomes one placeholder, so the inputs must be named.",
                "give the function named parameters, or trace a small wrapper that has them.",
            )
        default = () if parameter.default is parameter.empty else (parameter.default,)
        annotation = None if parameter.annotation is parameter.empty else parameter.annotation
        return self.create_proxy("placeholder", parameter.name, default, {}, type_expr=annotation)
    # --8<-- [end-task:1.3]


def trace_to_tape(fn: Callable) -> Tape:
    """Trace the plain function (or module) `fn` into a flat `Tape`.

    Example:
        ```python
        tape = trace_to_tape(lambda x: torch.relu(x + 1))
        print(tape)
        ```
    """
    return TapeRecorder().trace(fn)


def _format_leaf(arg: Any) -> str:
    if isinstance(arg, Record):
        return f"%{arg.name}"
    if isinstance(arg, torch.Tensor):
        # A constant tensor (say, a module's weight) would print all its values.
        shape = "x".join(map(str, arg.shape)) or "scalar"
        return f"<{type(arg).__name__} {shape} {str(arg.dtype).removeprefix('torch.')}>"
    return str(arg)
