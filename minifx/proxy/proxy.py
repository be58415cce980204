"""`Proxy`: a stand-in for a tensor that records what is done to it.

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
"""

from __future__ import annotations

import copy
import dis
import functools
import operator
import sys
from bisect import bisect_left
from types import FrameType
from typing import Any, Callable

import torch

from .errors import TraceError, TraceRuntimeError, TraceTypeError, untraceable
from .names import target_to_name


# --8<-- [start:records]
def _records(function: Callable) -> Callable:
    """A dunder method that records `function(self, *others)`: `x - y` is `sub(x, y)`."""

    def method(self: Proxy, *others: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", function, (self, *others), {})

    method.__name__ = f"__{function.__name__.strip('_')}__"
    return method


def _records_reflected(function: Callable) -> Callable:
    """A reflected dunder: `1 - x` calls `x.__rsub__(1)`, which records `sub(1, x)`."""

    def method(self: Proxy, other: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", function, (other, self), {})

    method.__name__ = f"__r{function.__name__.strip('_')}__"
    return method
# --8<-- [end:records]


class Proxy:
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

    def __init__(self, node: Any, tracer: Any = None) -> None:
        if tracer is None:
            from .tracer import GraphAppendingTracer  # tracer.py imports this module

            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    # --8<-- [start:operators]
    # -- Python operators, recorded as functions of the `operator` module ---------
    __add__, __radd__ = _records(operator.add), _records_reflected(operator.add)
    __sub__, __rsub__ = _records(operator.sub), _records_reflected(operator.sub)
    __mul__, __rmul__ = _records(operator.mul), _records_reflected(operator.mul)
    __truediv__ = _records(operator.truediv)
    __rtruediv__ = _records_reflected(operator.truediv)
    __floordiv__ = _records(operator.floordiv)
    __rfloordiv__ = _records_reflected(operator.floordiv)
    __mod__, __rmod__ = _records(operator.mod), _records_reflected(operator.mod)
    __pow__, __rpow__ = _records(operator.pow), _records_reflected(operator.pow)
    __matmul__ = _records(operator.matmul)
    __rmatmul__ = _records_reflected(operator.matmul)
    __lshift__ = _records(operator.lshift)
    __rlshift__ = _records_reflected(operator.lshift)
    __rshift__ = _records(operator.rshift)
    __rrshift__ = _records_reflected(operator.rshift)
    __and__, __rand__ = _records(operator.and_), _records_reflected(operator.and_)
    __or__, __ror__ = _records(operator.or_), _records_reflected(operator.or_)
    __xor__, __rxor__ = _records(operator.xor), _records_reflected(operator.xor)
    # Comparisons need no reflected form: Python turns `1 < x` into `x > 1` itself.
    __eq__, __ne__ = _records(operator.eq), _records(operator.ne)
    __lt__, __le__ = _records(operator.lt), _records(operator.le)
    __gt__, __ge__ = _records(operator.gt), _records(operator.ge)
    __neg__, __pos__ = _records(operator.neg), _records(operator.pos)
    __invert__, __abs__ = _records(operator.invert), _records(operator.abs)
    __getitem__ = _records(operator.getitem)
    # Defining __eq__ would make the class unhashable; Proxies must still work as
    # dict keys and set members, by identity.
    __hash__ = object.__hash__
    # --8<-- [end:operators]

    # -- torch functions -----------------------------------------------------------
    # --8<-- [start:torch_function]
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
        if _is_tensor_method_or_property(function):
            return tracer.create_proxy("call_method", function.__name__, args, kwargs)
        # The name is passed explicitly, as torch.fx does: a tracer that swaps the
        # target in create_proxy still gets a node named after the call written.
        name = target_to_name(function.__name__)
        return tracer.create_proxy("call_function", function, args, kwargs, name=name)
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
        raise untraceable(
            f"len() was called on %{self.node.name}.",
            "'len' is not supported in symbolic tracing by default: len() must return a "
            f"Python int now, but the size of %{self.node.name} is not known while tracing.",
            "use x.size(0) or x.shape[0], which are recorded like any other operation "
            "(or record the call itself with minifx.wrap('len') at module scope).",
            TraceRuntimeError,
        )

    def __setitem__(self, index: Any, value: Any) -> None:
        # torch.fx raises Python's bare TypeError here; a TraceError with a fix is clearer.
        name = self.node.name
        raise untraceable(
            f"%{name} was assigned to by index (`{name}[...] = value`).",
            "item assignment changes a tensor in place, and a Proxy records only "
            "operations that return new values.",
            f"build the new value instead, for example with torch.where(mask, value, {name}) "
            f"or {name}.index_put(...), or write into a real tensor outside the traced code.",
            TraceTypeError,
        )

    def __index__(self) -> int:
        raise _needs_a_number(self, "an int (int(), range() or a list index)")

    __int__ = __index__

    def __float__(self) -> float:
        raise _needs_a_number(self, "a float (float() or a math function)")
    # --8<-- [end:untraceable]

    # -- copying -------------------------------------------------------------------
    def __deepcopy__(self, memo: dict) -> Proxy:
        # Without this, deepcopy would find `__deepcopy__` through __getattr__ and
        # record a call to it. The copy holds copies of the record and the tracer, as
        # torch.fx's does; what cannot be copied (a tracer holding a module, say) is shared.
        copied = object.__new__(type(self))
        memo[id(self)] = copied
        for name, value in self.__dict__.items():
            try:
                copied.__dict__[name] = copy.deepcopy(value, memo)
            except Exception:  # noqa: BLE001 (anything a value's __deepcopy__ may raise)
                copied.__dict__[name] = value
        return copied

    def __getstate__(self) -> dict:
        return self.__dict__

    def __setstate__(self, state: dict) -> None:
        self.__dict__ = state


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

    @property
    def node(self) -> Any:
        """The `getattr` record, created on first use."""
        if self._node is None:
            proxy = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {})
            self._node = proxy.node
        return self._node

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root, *args), kwargs)
# --8<-- [end:attribute]


def _is_tensor_method_or_property(function: Callable) -> bool:
    """`torch.overrides.is_tensor_method_or_property`, without its cost per call.

    torch's version enters `warnings.catch_warnings()` on every call (about 2 µs,
    a sixth of recording a node); the set of tensor methods it looks in is
    fixed, so it is read once.
    """
    return function in _tensor_methods() or function.__name__ == "__get__"


@functools.cache
def _tensor_methods() -> frozenset:
    return frozenset(torch.overrides.get_overridable_functions()[torch.Tensor])


def _needs_a_number(proxy: Proxy, kind: str) -> TraceError:
    name = proxy.node.name
    return untraceable(
        f"%{name} was converted to {kind}.",
        f"a Python number must be known now, but %{name} is only known when the program runs.",
        "keep the value a tensor (torch functions accept tensors), or pass plain numbers "
        "into the traced function as arguments.",
        TraceTypeError,
    )


def _the_one_tracer(function: Callable, arguments: Any) -> Any:
    tracers = {proxy.tracer for proxy in _proxies_in(arguments)}
    if len(tracers) != 1:
        raise untraceable(
            f"{getattr(function, '__name__', function)}() received Proxies from "
            f"{len(tracers)} tracers.",
            "each trace records into one graph, so one call cannot belong to two traces "
            "(or to none, when the Proxy sits in a container minifx does not look into).",
            "use values from one trace per call; pass Proxies directly or in lists, "
            "tuples, dicts or slices.",
            TraceRuntimeError,
        )
    return tracers.pop()


def _proxies_in(value: Any):
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
