"""`Proxy`, a stand-in for a tensor that records what is done to it, and `TracerBase`,
the tracer it records through.

Each operator, `torch.*` call, method call or attribute of a Proxy becomes a record,
written by `tracer.create_proxy` into `tracer.graph` (stage 1's `Tape`, stage 2's
`Graph`). The two classes need each other, so they share this module, as in torch.fx.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Iterator

from . import errors
from .arguments import create_other_arg
from .called_by_name import recorded_when_called_by_name
from .copying import CopyableProxy
from .interfaces import IRGraph, IRNode
from .introspection import current_instruction, is_tensor_method_or_property
from .mutation import check_for_mutable_operation
from .names import target_to_name
from .operators import OPERATOR_SYNTAX, REFLECTABLE_OPERATORS

# The commonest values after Proxies, kept as they are (exact types: a subclass may differ).
PLAIN_VALUE_TYPES = frozenset({int, float, bool, str, type(None)})


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
    """Give `cls` a recording dunder for each operator in `operators.py` (`__radd__` too)."""
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

    Args:
        node: the recorded operation it stands for (a tape `Record`, a graph `Node`).
        tracer: records operations on this Proxy; by default a `GraphAppendingTracer`,
            so `Proxy(node)` appends to the graph (or tape) that holds `node`.
    """

    def __init__(self, node: IRNode, tracer: TracerBase | None = None) -> None:
        self.tracer = GraphAppendingTracer(node.graph) if tracer is None else tracer
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
        """Record a `torch.*` call that received Proxies (also in a list, tuple, slice or kwarg)
        of one tracer, else `_the_one_tracer` raises `TraceError`; `torch.Tensor.add(x, y)`
        is recorded as a method, and a function's node is named after `function.__name__`."""
        kwargs = kwargs or {}
        tracer = _the_one_tracer(function, (args, kwargs))
        if is_tensor_method_or_property(function):
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
        instruction = current_instruction(1)
        if instruction.opname == "UNPACK_SEQUENCE":
            # `a, b = proxy`: the count is written in the source code, so the
            # loop is static. Record proxy[0], proxy[1], ... as torch.fx does.
            return (self[i] for i in range(instruction.argval))
        return self.tracer.iter(self)

    def __len__(self) -> int:
        raise errors.len_called(self.node.name)

    @recorded_when_called_by_name
    def __setitem__(self, index: Any, value: Any) -> None:
        raise errors.item_assigned(self.node.name)

    @recorded_when_called_by_name
    def __index__(self) -> int:
        raise errors.converted_to_number(self.node.name, "an int (int(), range() or a list index)")

    __int__ = __index__

    @recorded_when_called_by_name
    def __float__(self) -> float:
        raise errors.converted_to_number(self.node.name, "a float (float() or a math function)")

    # --8<-- [end:untraceable]


# --8<-- [start:attribute]
class Attribute(Proxy):
    """`proxy.name`, recorded as `call_method` when called (`x.size(0)`), or as
    `builtins.getattr` the first time its `node` is needed (`x.shape`)."""

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
        raise errors.several_tracers(getattr(function, "__name__", str(function)), len(tracers))
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


class TracerBase:
    """Records operations on Proxies into `self.graph` (a `Tape`, a `Graph`);
    subclasses override its methods to change what gets recorded."""

    graph: IRGraph
    # Refuse torch operators that change an argument (mutation.py); off, as in torch.fx.
    check_mutable_operations: bool = False
    # Store the user's frames in node.meta["stack_trace"]: chapter 2's Tracer does.
    record_stack_traces: bool = False
    # Chapter 2's Tracer options, declared here as in torch.fx: read a buffer through a
    # get_attr node on every use (torch.fx's default), and the module method to trace.
    proxy_buffer_attributes: bool = False
    traced_func_name: str = "forward"

    def create_node(
        self,
        kind: str,
        target: Any,
        args: tuple,
        kwargs: dict,
        name: str | None = None,
        type_expr: Any = None,
    ) -> IRNode:
        """Append one record to `self.graph` and return it (with
        `check_mutable_operations`, a mutating operator raises `RuntimeError`)."""
        if kind == "call_function" and self.check_mutable_operations:
            check_for_mutable_operation(target, args, kwargs)
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: IRNode) -> Proxy:
        """Wrap a record in a Proxy that records through this tracer."""
        return Proxy(node, self)

    # --8<-- [task:1.2] "create_proxy and create_arg" points=5 section=01-proxy.md#the-tracer-interface
    # --8<-- [start:create_proxy]
    def create_proxy(
        self,
        kind: str,
        target: Any,
        args: tuple,
        kwargs: dict,
        name: str | None = None,
        type_expr: Any = None,
        proxy_factory_fn: Callable[[IRNode], Proxy] | None = None,
    ) -> Proxy:
        """Record `kind` `target(*args, **kwargs)` and return a Proxy for its result.

        `args` and `kwargs` go through `create_arg`; `name` defaults to one made from
        `target`; `proxy_factory_fn`, if given, makes the Proxy instead of `proxy()`.
        """
        args, kwargs = self.create_arg(tuple(args)), self.create_arg(dict(kwargs))
        node = self.create_node(kind, target, args, kwargs, name, type_expr)
        return proxy_factory_fn(node) if proxy_factory_fn else self.proxy(node)

    # --8<-- [end:create_proxy]

    def create_arg(self, a: Any) -> Any:
        """Convert an argument into a value a record can hold: Proxies become their records,
        plain values are kept, containers item by item (a dict key by `_dict_key`, which
        refuses a Proxy); `create_other_arg` (`arguments.py`) converts the rest or raises."""
        if isinstance(a, Proxy):
            return a.node
        if type(a) in PLAIN_VALUE_TYPES:
            return a
        if type(a) in (tuple, list):
            items = [self.create_arg(item) for item in a]
            return items if type(a) is list else tuple(items)
        if type(a) is dict:
            return {self._dict_key(key): self.create_arg(value) for key, value in a.items()}
        return create_other_arg(self, a)

    # --8<-- [end-task:1.2]

    def _dict_key(self, key: Any) -> Any:
        if isinstance(key, str):  # as torch.fx: a str key (a keyword's name) is kept as it is
            return key
        proxy = next(_proxies_in(key), None)
        if proxy is not None:
            raise errors.proxy_as_dict_key(proxy.node.name)
        # Other keys are converted like values, as in torch.fx: a bad one is refused alike.
        return self.create_arg(key)

    # --8<-- [start:to_bool]
    def to_bool(self, obj: Proxy) -> bool:
        """Called by `bool(proxy)` (`if`, `while`, `and`, `or`, `not`, `assert`):
        raises `TraceError`; a subclass may return a value instead."""
        raise errors.used_as_bool(obj.node.name)

    # --8<-- [end:to_bool]

    def iter(self, obj: Proxy) -> Iterator:
        """Called by `iter(proxy)` (`for` loops, `*proxy`, `list(proxy)`, `**proxy`):
        raises `TraceError`; a subclass may return an iterator instead."""
        raise errors.iterated(obj.node.name)

    def keys(self, obj: Proxy) -> Proxy:
        """Called by `**proxy`: records `obj.keys()`."""
        return Attribute(obj, "keys")()


class GraphAppendingTracer(TracerBase):
    """Appends to an existing graph (or tape): `Proxy(node)` uses one, so a
    rewrite can be written as ordinary Python on Proxies."""

    def __init__(self, graph: IRGraph) -> None:
        self.graph = graph
