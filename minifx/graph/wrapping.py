"""`wrap`: record a whole function as one `call_function` node, and the patching behind it.

While tracing, the Tracer temporarily replaces some names with stand-ins:

- `nn.Module.__call__` and `nn.Module.__getattr__` (see `Tracer.trace`);
- functions registered with `wrap` (or with `torch.fx.wrap`), in the
  globals of the module that registered them;
- autowrapped functions such as `math.sqrt`, wherever they are found;
- methods listed in `_wrapped_methods_to_patch` (minifx's or torch.fx's), on their class;
- torch.fx's "is tracing" flag, which model code written for torch.fx asks.

A stand-in records one node when an argument is a Proxy and calls the real
function otherwise. `Patcher` remembers every replacement and undoes all of
them when tracing ends, even if it fails.
"""

from __future__ import annotations

import builtins
import functools
import inspect
from types import BuiltinFunctionType, FunctionType, ModuleType
from typing import Any, Callable

from ..proxy.proxy import _proxies_in
from .errors import NotAGlobalFunction

# (id of a module's globals, function name) -> those globals; filled by `wrap`.
_wrapped_functions: dict[tuple[int, str], dict[str, Any]] = {}
# (class, method name): calls given a Proxy are recorded as one call_method node. Empty
# unless code appends to it, as to torch.fx's list of the same name (which counts too):
# `(torch.Tensor, "__getitem__")` traces `self.buffer[:, : x.size(0)]` on a plain tensor.
_wrapped_methods_to_patch: list[tuple[type, str]] = []


# --8<-- [start:wrap]
def wrap(fn_or_name: str | Callable) -> str | Callable:
    """Record calls to a module-level function as one `call_function` node.

    Call it at the top level of the module that defines (or imports) the
    function, by name or as a decorator. While tracing, the function's name
    in that module's globals is replaced by a stand-in that records a node
    whenever an argument is a Proxy, so the function body is never traced:

        def clamp_len(x, n):
            return x[: min(len(x), n)]   # len() of a Proxy would fail

        minifx.wrap("clamp_len")

    Raises:
        NotAGlobalFunction: a `TypeError` (and torch.fx's `RuntimeError`), if given
            neither a function nor a name.
        NotImplementedError: if called anywhere but at a module's top level (torch.fx's).
    """
    if isinstance(fn_or_name, str):
        name = fn_or_name
    elif callable(fn_or_name):
        name = fn_or_name.__name__
    else:
        raise NotAGlobalFunction(
            f"wrap() takes a function or the name of a global function, got "
            f"{type(fn_or_name).__name__}: {fn_or_name!r}."
        )
    caller = inspect.currentframe().f_back
    if caller.f_code.co_name != "<module>":
        raise NotImplementedError(
            f"wrap({name!r}) was called inside {caller.f_code.co_name}(), but it must be called "
            "at the top level of a module: it replaces the name in that module's globals "
            "while tracing. Move the call next to the function's definition."
        )
    _wrapped_functions[(id(caller.f_globals), name)] = caller.f_globals
    return fn_or_name


# --8<-- [end:wrap]


def recorded_as_one_call(original: Callable) -> Callable:
    """A stand-in for `original` that records one node when given a Proxy."""

    @functools.wraps(original)
    def stand_in(*args: Any, **kwargs: Any) -> Any:
        proxy = next(_proxies_in((args, kwargs)), None)
        if proxy is None:
            return original(*args, **kwargs)
        result = proxy.tracer.create_proxy("call_function", original, args, kwargs)
        result.node.meta["is_wrapped"] = True
        return result

    stand_in._minifx_stand_in = True
    return stand_in


@functools.lru_cache(maxsize=1024)
def _kept_stand_in(original: Callable) -> Callable:
    return recorded_as_one_call(original)


def stand_in_for(original: Callable) -> Callable:
    """`recorded_as_one_call(original)`, made once per function and kept: every trace
    patches the same functions (the 60 of `math`, say), and `functools.wraps` is most of it.
    A stand-in holds no state of a trace, so one serves them all."""
    # Plain functions and a module's builtins (`math.sqrt`): hashable, and long-lived.
    if isinstance(original, FunctionType) or (
        isinstance(original, BuiltinFunctionType) and isinstance(original.__self__, ModuleType)
    ):
        return _kept_stand_in(original)
    return recorded_as_one_call(original)


class Patcher:
    """Replaces attributes and global names, and puts every one back on exit."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []
        self._visited: set[int] = set()

    def patch(self, namespace: dict[str, Any], name: str, new: Any) -> None:
        """Set `namespace[name] = new` until exit (once: a stand-in is never wrapped again)."""
        if getattr(namespace.get(name), "_minifx_stand_in", False):
            return
        if name in namespace:
            old = namespace[name]
            self._undo.append(lambda: namespace.__setitem__(name, old))
        else:
            self._undo.append(lambda: namespace.pop(name, None))
        namespace[name] = new

    def patch_method(self, cls: type, name: str, new: Any) -> None:
        """Set `cls.name = new` until exit; an inherited method is inherited again after."""
        if name in cls.__dict__:
            old = cls.__dict__[name]
            self._undo.append(lambda: setattr(cls, name, old))
        else:
            self._undo.append(lambda: delattr(cls, name))
        setattr(cls, name, new)

    def visit_once(self, thing: Any) -> bool:
        """True the first time `thing` is seen, so each module's globals are scanned once."""
        first = id(thing) not in self._visited
        self._visited.add(id(thing))
        return first

    def __enter__(self) -> Patcher:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        while self._undo:
            self._undo.pop()()


def patch_torch_fx_tracing_flag(patcher: Patcher) -> None:
    """Set torch.fx's "is tracing" flag until the trace ends: model code written for torch.fx
    asks `torch.fx._symbolic_trace.is_fx_tracing()` so as to take its traceable branch."""
    import torch.fx._symbolic_trace as torch_fx_trace

    patcher.patch(vars(torch_fx_trace), "_is_fx_tracing_flag", True)


def _torch_fx_wrap_registrations() -> dict[tuple[int, str], dict[str, Any]]:
    """Functions that libraries registered with `torch.fx.wrap` (torchvision does)."""
    import torch.fx._symbolic_trace as torch_fx_trace  # only read, never changed

    return dict(getattr(torch_fx_trace, "_wrapped_fns_to_patch", {}))


def registered_methods() -> list[tuple[type, str]]:
    """The methods in minifx's `_wrapped_methods_to_patch` and torch.fx's, each once."""
    import torch.fx._symbolic_trace as torch_fx_trace  # only read, never changed

    theirs = getattr(torch_fx_trace, "_wrapped_methods_to_patch", [])
    return list(dict.fromkeys([*_wrapped_methods_to_patch, *theirs]))


def method_recorded_as_one_call(cls: type, name: str) -> Callable:
    """A stand-in for the method `cls.name` that records one call_method node when given
    a Proxy (the object it is called on need not be one: `tensor[:, proxy]`)."""
    original = getattr(cls, name)

    @functools.wraps(original)
    def stand_in(*args: Any, **kwargs: Any) -> Any:
        proxy = next(_proxies_in((args, kwargs)), None)
        if proxy is None:
            return original(*args, **kwargs)
        return proxy.tracer.create_proxy("call_method", name, args, kwargs)

    return stand_in


def registered_functions() -> dict[tuple[int, str], tuple[dict[str, Any], Any]]:
    """Every `wrap`ped name (minifx's and torch.fx's) -> (the globals holding it, the function).

    A name that is not in its globals yet but is a builtin (`wrap("len")`)
    maps to the builtin.
    """
    found = {}
    for key, namespace in {**_torch_fx_wrap_registrations(), **_wrapped_functions}.items():
        original = namespace.get(key[1], getattr(builtins, key[1], None))
        if original is not None:
            found[key] = (namespace, original)
    return found


def autowrapped_ids(modules: tuple[ModuleType, ...], functions: tuple[Callable, ...]) -> set[int]:
    """The ids of `functions` and of the public functions of `modules` (`math.sqrt`, ...),
    which the tracer records as one `call_function` node wherever they are used."""
    ids = {id(fn) for fn in functions}
    for module in modules:
        ids |= {
            id(value)
            for name, value in vars(module).items()
            if not name.startswith("_") and callable(value)
        }
    return ids


def patch_autowrapped(patcher: Patcher, namespace: dict[str, Any], ids: set[int]) -> None:
    """In the globals `namespace`, put a stand-in over every function whose id is in `ids`
    (each namespace is scanned once per trace)."""
    if not patcher.visit_once(namespace):
        return
    for name, value in list(namespace.items()):
        if not name.startswith("_") and callable(value) and id(value) in ids:
            patcher.patch(namespace, name, stand_in_for(value))


def patch_wrapped(patcher: Patcher) -> None:
    """Put a stand-in over every `wrap`ped function and every method listed to patch
    (minifx's and torch.fx's registrations), and raise torch.fx's "is tracing" flag,
    as torch.fx's tracer does."""
    patch_torch_fx_tracing_flag(patcher)
    for (_, name), (namespace, original) in registered_functions().items():
        patcher.patch(namespace, name, stand_in_for(original))
    for cls, name in registered_methods():
        patcher.patch_method(cls, name, method_recorded_as_one_call(cls, name))
