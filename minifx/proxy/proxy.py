"""`Proxy`, a stand-in for a tensor that records what is done to it, and
`TracerBase`, the tracer it records through.

Python lets a class decide what every operator, method call and attribute
access means for its objects. A `Proxy` uses that to turn each of them into a
record, through its tracer's `create_proxy`, and returns a new `Proxy` for the
result, so the rest of the program keeps running on stand-ins:

| the program does      | Python calls                 | the tracer records                         |
|-----------------------|------------------------------|--------------------------------------------|
| `x + 1`, `1 + x`      | `__add__`, `__radd__`        | `call_function operator.add`               |
| `x[0, 1:]`            | `__getitem__`                | `call_function operator.getitem`           |
| `torch.relu(x)`       | `__torch_function__`         | `call_function torch.relu`                 |
| `x.relu()`            | `__getattr__`, then the call | `call_method relu`                         |
| `x.shape`             | `__getattr__`                | `call_function builtins.getattr` (lazily)  |
| `if x:`, `len(x)`     | `__bool__`, `__len__`        | nothing: a `TraceError`                    |

The Proxy knows nothing about where records go. It calls five methods of its
tracer, named as in torch.fx: `create_proxy(kind, target, args, kwargs)`
(record one operation, through `create_arg` and `create_node`, and return a
Proxy for its result), `to_bool` and `iter` (called by `if proxy:` and
`for v in proxy:`; they raise) and `keys` (called by `**proxy`).
`TracerBase` implements them on top of `self.graph.create_node(...)`, so the
same Proxy records into stage 1's flat `Tape` or stage 2's `Graph`. The two
classes need each other (a tracer makes Proxies; `Proxy(node)` makes a
tracer), so they share this module, as in torch.fx.
"""

from __future__ import annotations

import dataclasses
import dis
import enum
import operator
import sys
from bisect import bisect_left
from types import FrameType
from typing import Any, Callable, Iterator

import torch

from .copying import CopyableProxy
from .errors import (
    converted_to_number,
    item_assigned,
    iterated,
    len_called,
    not_recordable,
    proxy_as_dict_key,
    several_tracers,
    used_as_bool,
)
from .ir import IRGraph, IRNode
from .mutation import check_for_mutable_operation
from .names import target_to_name
from .operators import OPERATOR_SYNTAX, REFLECTABLE_OPERATORS

# Values stored in a record as they are.
BASE_TYPES = (
    str, int, float, bool, complex, torch.dtype, torch.Tensor, torch.device,
    torch.memory_format, torch.layout, enum.Enum, type(None), type(Ellipsis),
)


# --8<-- [start:records]
def _records(function: Callable) -> Callable:
    """A dunder method that records `function(self, *others)`: `x - y` is `sub(x, y)`."""

    # --8<-- [task:1.4] "Operators that record" points=5 section=01-proxy.md#how-a-proxy-intercepts-operators
    def method(self: Proxy, *others: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", function, (self, *others), {})
    # --8<-- [end-task:1.4]

    method.__name__ = f"__{function.__name__.strip('_')}__"
    return method


def _records_reflected(function: Callable) -> Callable:
    """A reflected dunder: `1 - x` calls `x.__rsub__(1)`, which records `sub(1, x)`."""

    # --8<-- [task:1.4]
    def method(self: Proxy, other: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", function, (other, self), {})
    # --8<-- [end-task:1.4]

    method.__name__ = f"__r{function.__name__.strip('_')}__"
    return method


def _with_operators(cls: type) -> type:
    """Give `cls` a recording dunder for every operator of the table (`operators.py`):
    `__add__` and `__radd__`, `__eq__`, `__getitem__`, `__neg__`, ..."""
    for name in OPERATOR_SYNTAX:
        function = getattr(operator, name)
        setattr(cls, f"__{name.strip('_')}__", _records(function))
        if name in REFLECTABLE_OPERATORS:
            setattr(cls, f"__r{name.strip('_')}__", _records_reflected(function))
    return cls
# --8<-- [end:records]


@_with_operators
class Proxy(CopyableProxy):
    """A symbolic value: every operation on it is recorded, not computed.

    A Proxy wraps one recorded operation (`node`: a tape `Record` in stage 1,
    a graph `Node` from stage 2 on) and the tracer that records further
    operations (`tracer`). Operations return new Proxies, so a whole program
    runs on Proxies and leaves behind a record of what it did.

    Args:
        node: the recorded operation this Proxy stands for.
        tracer: the tracer that records operations on this Proxy. When it is
            `None`, a `GraphAppendingTracer` for `node.graph` is made, so
            `Proxy(node)` appends to the graph (or tape) that holds `node`.
    """

    def __init__(self, node: IRNode, tracer: TracerBase | None = None) -> None:
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    # --8<-- [start:operators]
    # -- Python operators: `_with_operators` adds the table's; abs(x) is not syntax -
    __abs__ = _records(operator.abs)
    # The table's __eq__ records a comparison instead of comparing; Proxies still
    # hash by identity, so they work as dict keys and set members.
    __hash__ = object.__hash__
    # --8<-- [end:operators]

    # -- torch functions -----------------------------------------------------------
    # --8<-- [start:torch_function]
    # --8<-- [task:1.5] "__torch_function__" points=5 section=01-proxy.md#__torch_function__-catching-torch-calls
    @classmethod
    def __torch_function__(
        cls, function: Callable, types: tuple, args: tuple = (), kwargs: dict | None = None
    ) -> Proxy:
        """Record a `torch.*` or `torch.nn.functional.*` call that received a Proxy.

        torch calls this hook instead of the real function whenever an argument
        (also inside a list, tuple or keyword argument) has it. Tensor methods
        reached this way (`torch.Tensor.add(x, y)`) are recorded as methods.
        """
        kwargs = kwargs or {}
        tracer = _the_one_tracer(function, (args, kwargs))
        if torch.overrides.is_tensor_method_or_property(function):
            return tracer.create_proxy("call_method", function.__name__, args, kwargs)
        # The name is passed explicitly, as torch.fx does: a tracer that swaps the
        # target in create_proxy still gets a node named after the call written.
        name = target_to_name(function.__name__)
        return tracer.create_proxy("call_function", function, args, kwargs, name=name)
    # --8<-- [end-task:1.5]
    # --8<-- [end:torch_function]

    # -- methods and attributes ----------------------------------------------------
    # --8<-- [start:getattr]
    def __getattr__(self, name: str) -> Attribute:
        # Only called for names the Proxy itself lacks, so `x.relu`, `x.shape`.
        # Nothing is recorded yet: most attributes are methods about to be called.
        return Attribute(self, name)
    # --8<-- [end:getattr]

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self, *args), kwargs)

    def keys(self) -> Proxy:
        """Called by `**proxy`; the tracer decides (by default: record `keys()`)."""
        return self.tracer.keys(self)

    # -- what cannot be traced: Python needs a concrete value right now -------------
    # --8<-- [start:untraceable]
    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def __iter__(self):
        instruction = _current_instruction(sys._getframe(1))
        if instruction.opname == "UNPACK_SEQUENCE":
            # `a, b = proxy`: the count is written in the source code, so the
            # loop is static. Record proxy[0], proxy[1], ... as torch.fx does.
            return (self[i] for i in range(instruction.argval))
        return self.tracer.iter(self)

    def __len__(self) -> int:
        raise len_called(self.node.name)

    def __setitem__(self, index: Any, value: Any) -> None:
        raise item_assigned(self.node.name)

    def __index__(self) -> int:
        raise converted_to_number(self.node.name, "an int (int(), range() or a list index)")

    __int__ = __index__

    def __float__(self) -> float:
        raise converted_to_number(self.node.name, "a float (float() or a math function)")
    # --8<-- [end:untraceable]


# --8<-- [start:attribute]
class Attribute(Proxy):
    """`proxy.name`, recorded only when it is used as a value.

    `x.size(0)` is a method call: calling the Attribute records
    `call_method size`. `x.shape` used as a value is recorded the first time
    its `node` is needed, as `call_function builtins.getattr(x, "shape")`.
    """

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    # --8<-- [task:1.6] "Attributes, recorded when used" points=5 section=01-proxy.md#methods-and-attributes
    @property
    def node(self) -> IRNode:
        """The `getattr` record, created on first use."""
        if self._node is None:
            proxy = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {})
            self._node = proxy.node
        return self._node

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root, *args), kwargs)
    # --8<-- [end-task:1.6]
# --8<-- [end:attribute]


def _the_one_tracer(function: Callable, arguments: Any) -> TracerBase:
    tracers = {proxy.tracer for proxy in _proxies_in(arguments)}
    if len(tracers) != 1:
        raise several_tracers(getattr(function, "__name__", str(function)), len(tracers))
    return tracers.pop()


def _proxies_in(value: Any) -> Iterator[Proxy]:
    """Every Proxy inside `value`, looking through lists, tuples, dicts and slices."""
    if isinstance(value, Proxy):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _proxies_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _proxies_in(item)
    elif isinstance(value, slice):
        yield from _proxies_in((value.start, value.stop, value.step))


def _current_instruction(frame: FrameType) -> dis.Instruction:
    """The bytecode instruction that `frame` is executing."""
    instructions = list(dis.get_instructions(frame.f_code))
    return instructions[bisect_left(instructions, frame.f_lasti, key=lambda i: i.offset)]


class TracerBase:
    """Records operations on Proxies into `self.graph`.

    Subclasses set `graph` (anything with a `create_node` method, such as a
    `Tape` or a `Graph`) and may override any method to change what gets
    recorded; a check that refuses some operations belongs in `create_proxy`
    or `create_node`.
    """

    graph: IRGraph
    # Refuse torch operators that change an argument in place (see mutation.py);
    # off by default, as in torch.fx.
    check_mutable_operations: bool = False
    # Store the user's frames in node.meta["stack_trace"]: chapter 2's Tracer does.
    record_stack_traces: bool = False

    def create_node(
        self, kind: str, target: Any, args: tuple, kwargs: dict,
        name: str | None = None, type_expr: Any = None,
    ) -> IRNode:
        """Append one record to `self.graph` and return it.

        Raises:
            RuntimeError: with `check_mutable_operations`, for a mutating operator.
        """
        if kind == "call_function" and self.check_mutable_operations:
            check_for_mutable_operation(target, args, kwargs)
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: IRNode) -> Proxy:
        """Wrap a record in a Proxy that records through this tracer."""
        return Proxy(node, self)

    # --8<-- [task:1.2] "create_proxy and create_arg" points=5 section=01-proxy.md#the-tracer-interface
    # --8<-- [start:create_proxy]
    def create_proxy(
        self, kind: str, target: Any, args: tuple, kwargs: dict,
        name: str | None = None, type_expr: Any = None,
        proxy_factory_fn: Callable[[IRNode], Proxy] | None = None,
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
        raise not_recordable(a)
    # --8<-- [end-task:1.2]

    def _dict_key(self, key: Any) -> Any:
        proxy = next(_proxies_in(key), None)
        if proxy is not None:
            raise proxy_as_dict_key(proxy.node.name)
        # Keys go through the same conversion as values, as in torch.fx, so an
        # unsupported key is refused with the same message as an unsupported value.
        return self.create_arg(key)

    # --8<-- [start:to_bool]
    def to_bool(self, obj: Proxy) -> bool:
        """Called by `bool(proxy)`: `if`, `while`, `and`, `or`, `not`, `assert`.

        Raises:
            TraceError: always; a subclass may return a value instead.
        """
        raise used_as_bool(obj.node.name)
    # --8<-- [end:to_bool]

    def iter(self, obj: Proxy) -> Iterator:
        """Called by `iter(proxy)`: `for` loops, `*proxy`, `list(proxy)`, and `**proxy`
        (which first records `proxy.keys()`, then iterates over the keys).

        Raises:
            TraceError: always; a subclass may return an iterator instead.
        """
        raise iterated(obj.node.name)

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

    def __init__(self, graph: IRGraph) -> None:
        self.graph = graph
