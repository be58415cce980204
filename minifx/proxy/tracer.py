"""The tracer interface a Proxy records through.

A Proxy knows nothing about where records go. It calls five methods of its
tracer, named as in torch.fx:

- `create_proxy(kind, target, args, kwargs)`: record one operation and return
  a Proxy for its result; it uses `create_arg` and `create_node`.
- `create_arg(value)`: turn an argument into something storable: Proxies
  become their records, containers are converted element by element.
- `to_bool(proxy)`, `iter(proxy)`: called by `if proxy:` and `for v in proxy:`.
  They raise, because a symbolic value has no truth value and no length.
- `keys(proxy)`: called by `**proxy`.

`TracerBase` implements all of them on top of `self.graph.create_node(...)`,
so the same Proxy records into stage 1's flat `Tape` or stage 2's `Graph`.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Iterator

import torch

from .errors import TraceNotImplementedError, TraceRuntimeError, untraceable
from .mutation import check_for_mutable_operation
from .proxy import Attribute, Proxy, _proxies_in

# Values stored in a record as they are.
BASE_TYPES = (
    str, int, float, bool, complex, torch.dtype, torch.Tensor, torch.device,
    torch.memory_format, torch.layout, enum.Enum, type(None), type(Ellipsis),
)
# The commonest values after Proxies, by exact type: `create_arg` returns them
# before trying the slower checks (a subclass may define `__fx_create_arg__`).
PLAIN_VALUE_TYPES = frozenset({int, float, bool, str, type(None)})


class TracerBase:
    """Records operations on Proxies into `self.graph`.

    Subclasses set `graph` (anything with a `create_node` method, such as a
    `Tape` or a `Graph`) and may override any method to change what gets
    recorded; a check that refuses some operations belongs in `create_proxy`
    or `create_node`.
    """

    graph: Any
    # Refuse torch operators that change an argument in place (see mutation.py);
    # off by default, as in torch.fx.
    check_mutable_operations: bool = False
    # Store the user's frames in node.meta["stack_trace"]: chapter 2's Tracer does.
    record_stack_traces: bool = False

    def create_node(
        self, kind: str, target: Any, args: tuple, kwargs: dict,
        name: str | None = None, type_expr: Any = None,
    ) -> Any:
        """Append one record to `self.graph` and return it.

        Raises:
            RuntimeError: with `check_mutable_operations`, for a mutating operator.
        """
        if kind == "call_function" and self.check_mutable_operations:
            check_for_mutable_operation(target, args, kwargs)
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: Any) -> Proxy:
        """Wrap a record in a Proxy that records through this tracer."""
        return Proxy(node, self)

    # --8<-- [start:create_proxy]
    def create_proxy(
        self, kind: str, target: Any, args: tuple, kwargs: dict,
        name: str | None = None, type_expr: Any = None, proxy_factory_fn: Any = None,
    ) -> Proxy:
        """Record `kind` `target(*args, **kwargs)` and return a Proxy for its result.

        Args:
            kind: the opcode, such as `call_function` or `call_method`.
            target: the function, or the method's or placeholder's name.
            args: positional arguments; Proxies among them become their records.
            kwargs: keyword arguments, converted the same way.
            name: a name for the record; by default one is made from `target`.
            type_expr: an optional type annotation, kept on the record.
            proxy_factory_fn: makes the Proxy from the record instead of `proxy()`.
        """
        node = self.create_node(
            kind, target, self.create_arg(tuple(args)), self.create_arg(dict(kwargs)),
            name, type_expr,
        )
        return proxy_factory_fn(node) if proxy_factory_fn else self.proxy(node)
    # --8<-- [end:create_proxy]

    def create_arg(self, a: Any) -> Any:
        """Convert an argument into a value a record can hold.

        Proxies become their records; tuples (named ones too), lists, dicts,
        slices and ranges are converted element by element; numbers, strings,
        tensors, dtypes, devices, `None` and `...` are kept as they are. As in
        torch.fx, an object with a method `__fx_create_arg__(tracer)` converts
        itself, and a dataclass instance becomes a record that builds it
        again from its fields.

        Raises:
            TraceError: for any other type, which a record could not reproduce.
        """
        if isinstance(a, Proxy):
            return a.node
        if type(a) in PLAIN_VALUE_TYPES:
            return a
        if hasattr(a, "__fx_create_arg__"):  # the object knows how to be recorded
            return a.__fx_create_arg__(self)
        if isinstance(a, tuple):
            items = [self.create_arg(item) for item in a]
            return type(a)(*items) if hasattr(a, "_fields") else type(a)(items)
        if isinstance(a, list):
            return [self.create_arg(item) for item in a]
        if isinstance(a, dict):
            return {self._dict_key(key): self.create_arg(value) for key, value in a.items()}
        if isinstance(a, (slice, range)):
            return type(a)(self.create_arg(a.start), self.create_arg(a.stop),
                           self.create_arg(a.step))
        if dataclasses.is_dataclass(a) and not isinstance(a, type):
            fields = {f.name: self.create_arg(getattr(a, f.name)) for f in dataclasses.fields(a)}
            return self.create_node("call_function", type(a), (), fields)
        if isinstance(a, BASE_TYPES):
            return a
        raise untraceable(
            f"an argument of type {type(a).__qualname__} cannot be recorded: {a!r}",
            "a record holds only Proxies, Python numbers and strings, tensors, dtypes, "
            "devices, None, Ellipsis and lists, tuples, dicts, slices and dataclasses of those.",
            "pass the value in another form (for example a tensor or a number), "
            "compute it outside the traced code, or give its class a method "
            "__fx_create_arg__(self, tracer) that records it.",
            TraceNotImplementedError,
        )

    def _dict_key(self, key: Any) -> Any:
        proxy = next(_proxies_in(key), None)
        if proxy is not None:
            raise untraceable(
                f"%{proxy.node.name} was used as a dict key.",
                "keys for dictionaries used as an argument cannot contain a Node: keys are "
                "hashed now, but a Proxy's value is only known later.",
                "use plain Python values (strings, numbers) as keys.",
                TraceRuntimeError,
            )
        # Keys go through the same conversion as values, as in torch.fx, so an
        # unsupported key is refused with the same message as an unsupported value.
        return self.create_arg(key)

    # --8<-- [start:to_bool]
    def to_bool(self, obj: Proxy) -> bool:
        """Called by `bool(proxy)`: `if`, `while`, `and`, `or`, `not`, `assert`.

        Raises:
            TraceError: always; a subclass may return a value instead.
        """
        name = obj.node.name
        raise untraceable(
            f"%{name} was used as a Python bool (in `if`, `while`, `and`, `or`, `not`, "
            "`assert`, a chained comparison like `0 < x < 1`, or `min()` / `max()`).",
            "symbolically traced variables cannot be used as inputs to control flow: "
            f"%{name} stands for a value that is only computed when the program runs, "
            "so the tracer cannot know which branch to record.",
            "compute both branches and choose with torch.where(condition, a, b); or, "
            "if the condition depends only on settings or shapes, decide it with plain "
            "Python values before tracing.",
        )
    # --8<-- [end:to_bool]

    def iter(self, obj: Proxy) -> Iterator:
        """Called by `iter(proxy)`: `for` loops, `*proxy`, `list(proxy)`, and `**proxy`
        (which first records `proxy.keys()`, then iterates over the keys).

        Raises:
            TraceError: always; a subclass may return an iterator instead.
        """
        name = obj.node.name
        raise untraceable(
            f"%{name} was iterated over (a `for` loop, `*{name}`, `list({name})`, "
            "a starred assignment, or `**` unpacking, which iterates over `keys()`).",
            f"Proxy object cannot be iterated: the number of elements of %{name} is not "
            "known while tracing.",
            "loop over a range of known length and index (`for i in range(n): "
            f"{name}[i]`), unpack a fixed number of names (`a, b = {name}.chunk(2)`), "
            "or pass keyword arguments by name instead of `**`.",
        )

    def keys(self, obj: Proxy) -> Proxy:
        """Called by `**proxy`: records `obj.keys()`."""
        return Attribute(obj, "keys")()


class GraphAppendingTracer(TracerBase):
    """A tracer that appends to an existing graph (or tape).

    `Proxy(node)` uses one, so operations on that Proxy are appended to the
    graph that holds `node`: a rewrite can be written as ordinary Python.

    Args:
        graph: anything with `create_node`, such as a `Tape` or a `Graph`.
    """

    def __init__(self, graph: Any) -> None:
        self.graph = graph
