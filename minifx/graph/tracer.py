"""`Tracer`: turn an `nn.Module` (or a function) into a `Graph`.

Stage 1's Proxy records operations; this tracer decides what happens at the
module level, which is where torch.fx's design lives:

- each parameter of `forward` becomes a `placeholder`;
- parameters, buffers and tensor constants become `get_attr` nodes;
- a call to a submodule becomes one `call_module` node if the submodule is a
  *leaf* (`is_leaf_module`: the standard `torch.nn` layers), otherwise the
  tracer runs its `forward` and records what happens inside;
- functions registered with `wrap` (or `torch.fx.wrap`), and `math`
  functions, are recorded as single `call_function` nodes.

The tracer sees module calls and attribute reads by replacing
`nn.Module.__call__` and `nn.Module.__getattr__` for the duration of
`trace()` only, exactly as torch.fx does; `wrapping.Patcher` undoes every change.
"""

from __future__ import annotations

import functools
import inspect
import math
import warnings
from collections import OrderedDict
from types import FunctionType, ModuleType
from typing import Any, Callable, NamedTuple

import torch
from torch.utils import _pytree as pytree

from ..proxy.errors import untraceable
from ..proxy.proxy import Proxy
from ..proxy.tracer import BASE_TYPES, PLAIN_VALUE_TYPES, TracerBase
from .graph import Graph
from .node import Node
from .placeholders import PH, PHBase, copy_metadata
from .proxyable import is_proxyable_instance
from .tracer_options import deepcopy_tracer, get_attr_options, module_scope, record_origin
from .wrapping import Patcher, recorded_as_one_call, registered_functions

_ORIGINAL_MODULE_GETATTR = torch.nn.Module.__getattr__
_ORIGINAL_MODULE_CALL = torch.nn.Module.__call__
_HAS_VARARGS = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS
# Exact types that can be none of create_arg's module-state cases (parameter,
# buffer, submodule, named tuple, constant); Parameter's isinstance check is slow.
_NO_MODULE_STATE = PLAIN_VALUE_TYPES | {tuple, list, dict}
# The attributes nn.Module.__init__ sets on every module (hooks, _parameters, ...),
# never tensors: most of a module's __dict__, skipped when looking for tensors.
_MODULE_BOOKKEEPING = frozenset(vars(torch.nn.Module()))

class PytreeInfo(NamedTuple):
    """How a graph traced with structured `concrete_args` flattens its inputs and outputs.

    Attributes:
        arg_names: the traced function's parameter names (`self` first for a module).
        in_spec: the structure of the inputs, as `torch.utils._pytree` describes it.
        out_spec: the structure of the outputs, which the graph returns flattened.
    """

    arg_names: list
    in_spec: Any
    out_spec: Any


class _NotTraceable(TypeError, AssertionError):
    """`root` has no function to trace; also the `AssertionError` torch.fx raises."""


class _SelfInStarArgs(TypeError, RuntimeError):
    """A module's `self` hidden in `*args`; also the `RuntimeError` torch.fx raises."""


class Tracer(TracerBase):
    """Traces an `nn.Module` or a function into a `Graph`, as `torch.fx.Tracer` does.

    Subclass it and override `is_leaf_module`, `create_proxy`, `create_node`,
    `create_arg` or `call_module` to change what gets recorded. Every node
    made inside a submodule call gets `node.meta["nn_module_stack"]`; set
    `record_stack_traces = True` for `node.meta["stack_trace"]` too.

    Args:
        autowrap_modules: modules whose public functions are recorded as one
            `call_function` node wherever they are used (`math.sqrt(x)`).
        autowrap_functions: single functions recorded the same way.
        param_shapes_constant: read a parameter's `shape`, `size()`, `dim()`,
            `ndim`, `numel()` and `nelement()` as real values while tracing,
            so code may branch on them (see `tracer_options.ParameterProxy`).
    """

    # Read a buffer through a get_attr node on every use (torch.fx's default).
    proxy_buffer_attributes: bool = False
    traced_func_name: str = "forward"
    __deepcopy__ = deepcopy_tracer

    def __init__(self, autowrap_modules: tuple[ModuleType, ...] = (math,),
                 autowrap_functions: tuple[Callable, ...] = (),
                 param_shapes_constant: bool = False) -> None:
        self._autowrap_ids = {id(fn) for fn in autowrap_functions}
        for module in autowrap_modules:
            self._autowrap_ids |= {id(value) for name, value in vars(module).items()
                                   if not name.startswith("_") and callable(value)}
        self._autowrap_search = list(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths: dict[torch.nn.Module, str] | None = None
        self.root: torch.nn.Module | None = None
        self.graph: Graph | None = None
        self.tensor_attrs: dict[torch.Tensor, str] = {}
        # The submodule calls under way, for node.meta["nn_module_stack"] (tracer_options).
        self.module_stack: OrderedDict[str, tuple[str, type]] = OrderedDict()
        self.num_calls: dict[str, int] = {}

    # --8<-- [start:trace]
    def trace(self, root: torch.nn.Module | Callable, concrete_args: dict | tuple | None = None) -> Graph:
        """Run `root` on Proxies and return the `Graph` of what it did.

        Args:
            root: an `nn.Module` (its `forward` is traced) or a function.
            concrete_args: values for some inputs, by name (or all, as a
                tuple): the graph is specialised to them. `PH` keeps (a part
                of) an input symbolic.

        Raises:
            TraceError: if the program does something a Proxy cannot record.
        """
        fn = self._start(root)
        fn_globals = fn.__globals__
        fn, args = self.create_args_for_root(fn, isinstance(root, torch.nn.Module), concrete_args)
        with Patcher() as patcher:
            self._patch_modules(patcher)
            self._patch_wrapped_functions(patcher, fn_globals)
            result = fn(*args)
            returns = inspect.get_annotations(inspect.unwrap(fn)).get("return")
            self.create_node("output", "output", (self.create_arg(result),), {}, type_expr=returns)
        self.submodule_paths = None
        return self.graph
    # --8<-- [end:trace]

    def _start(self, root: Any) -> FunctionType:
        """Set up `root`, `graph` and `tensor_attrs`; return the function to trace."""
        if isinstance(root, torch.nn.Module):
            self.root = root
            fn = getattr(type(root), self.traced_func_name, None)
            if fn is None:
                raise _NotTraceable(
                    f"traced_func_name={self.traced_func_name} doesn't exist in "
                    f"{type(root).__name__}: set the tracer's traced_func_name to a method of the "
                    "module (by default it traces forward).")
            self.submodule_paths = {module: path for path, module in root.named_modules()}
        else:
            self.root, fn = torch.nn.Module(), root
        if not isinstance(fn, FunctionType):
            raise _NotTraceable(
                f"cannot trace {fn!r}: the tracer needs a Python function (or a module whose "
                f"{self.traced_func_name} is one), because it reads the parameter names from "
                "its code. Wrap the callable in a def."
            )
        self.graph = Graph(tracer_cls=type(self))
        # Where the traced code lives: chapter 3 names the generated forward's file after it.
        code = fn.__code__
        self.graph._co_fields = {"co_name": code.co_name, "co_filename": code.co_filename,
                                 "co_firstlineno": code.co_firstlineno}
        self.tensor_attrs = {}
        self._collect_tensor_attrs(self.root, "")
        return fn

    def _collect_tensor_attrs(self, module: torch.nn.Module, prefix: str) -> None:
        """Remember the path of every plain tensor attribute, such as `self.scale = torch.ones(3)`."""
        for name, value in vars(module).items():
            if name not in _MODULE_BOOKKEEPING and isinstance(value, torch.Tensor):
                self.tensor_attrs[value] = prefix + name
        for name, child in module.named_children():
            self._collect_tensor_attrs(child, f"{prefix}{name}.")

    # --8<-- [start:patch_modules]
    def _patch_modules(self, patcher: Patcher) -> None:
        """Send module calls to `call_module` and attribute reads to `getattr`."""
        parameter_proxy_cache: dict[str, Proxy] = {}

        def module_getattr(module: torch.nn.Module, name: str) -> Any:
            value = _ORIGINAL_MODULE_GETATTR(module, name)
            return self.getattr(name, value, parameter_proxy_cache)

        def module_call(module: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
            def forward(*args: Any, **kwargs: Any) -> Any:
                return _ORIGINAL_MODULE_CALL(module, *args, **kwargs)

            module_globals = getattr(getattr(module, "forward", None), "__globals__", {})
            self._autowrap(patcher, module_globals)
            return self.call_module(module, forward, args, kwargs)

        patcher.patch_method(torch.nn.Module, "__getattr__", module_getattr)
        patcher.patch_method(torch.nn.Module, "__call__", module_call)
    # --8<-- [end:patch_modules]

    def _patch_wrapped_functions(self, patcher: Patcher, fn_globals: dict[str, Any]) -> None:
        """Install stand-ins for `wrap`ped functions (minifx's and torch.fx's) and autowraps."""
        for (_, name), (namespace, original) in registered_functions().items():
            patcher.patch(namespace, name, recorded_as_one_call(original))
        self._autowrap(patcher, fn_globals)
        for module in self._autowrap_search:
            self._autowrap(patcher, vars(module))

    def _autowrap(self, patcher: Patcher, namespace: dict[str, Any]) -> None:
        if not patcher.visit_once(namespace):
            return
        for name, value in list(namespace.items()):
            if not name.startswith("_") and callable(value) and id(value) in self._autowrap_ids:
                patcher.patch(namespace, name, recorded_as_one_call(value))

    # --8<-- [start:leaf]
    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        """Whether a call to `m` is recorded as one `call_module` node.

        By default the layers of `torch.nn` (and `torch.ao.nn`) are leaves,
        except `nn.Sequential`, which is traced through; user modules are
        traced through. Override to keep other modules opaque.

        Args:
            m: the submodule being called.
            module_qualified_name: its path from the root, such as `"layer1.0"`.
        """
        return m.__module__.startswith(("torch.nn", "torch.ao.nn")) \
            and not isinstance(m, torch.nn.Sequential)

    def call_module(self, m: torch.nn.Module, forward: Callable, args: tuple, kwargs: dict) -> Any:
        """Record a leaf module call as `call_module`; run any other module's `forward`."""
        path = self.path_of_module(m)
        with module_scope(self, path, m):  # for node.meta["nn_module_stack"]
            if not self.is_leaf_module(m, path):
                return forward(*args, **kwargs)
            return self.create_proxy("call_module", path, args, kwargs)
    # --8<-- [end:leaf]

    def path_of_module(self, mod: torch.nn.Module) -> str:
        """The path of `mod` inside the root module, such as `"layer1.0.conv1"`.

        Raises:
            NameError: if `mod` is not a submodule of the root.
        """
        paths = self.submodule_paths
        if paths is None:
            paths = {module: path for path, module in self.root.named_modules()}
        if mod not in paths:
            raise NameError(str(untraceable(
                f"a {type(mod).__name__} module was called that is not a submodule of the "
                "traced module.",
                "a call_module node names its module by its path in the root module, and "
                "this one has no path (it was probably created inside forward).",
                f"create it in __init__ and store it as an attribute (self.layer = "
                f"nn.{type(mod).__name__}(...)), or call the functional form (torch.nn.functional).",
            )))
        return paths[mod]

    # --8<-- [start:getattr]
    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Proxy]) -> Any:
        """Called for each `module.attr` read while tracing (the tracer's `__getattr__`).

        A parameter becomes a Proxy for one `get_attr` node, made on first use
        and reused after; any other value is returned as it is.
        """
        if isinstance(attr_val, torch.nn.Parameter):
            found = self._cached_get_attr(attr_val, self.root.named_parameters(), parameter_proxy_cache)
            if found is not None:
                return found
        if self.proxy_buffer_attributes and isinstance(attr_val, torch.Tensor):
            found = self._cached_get_attr(attr_val, self.root.named_buffers(), parameter_proxy_cache)
            if found is not None:
                return found
        return attr_val
    # --8<-- [end:getattr]

    def _cached_get_attr(self, value: Any, named: Any, cache: dict[str, Proxy]) -> Proxy | None:
        for path, candidate in named:
            if candidate is value:
                if path not in cache:
                    options = get_attr_options(self, path, value)  # param_shapes_constant
                    cache[path] = self.create_proxy("get_attr", path, (), {}, **options)
                return cache[path]
        return None

    def create_node(self, kind: str, target: Any, args: tuple, kwargs: dict,
                    name: str | None = None, type_expr: Any = None) -> Node:
        """Like `TracerBase.create_node`, and notes where the node came from in
        `node.meta` (`nn_module_stack`, and `stack_trace` if `record_stack_traces`)."""
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        record_origin(self, node)
        return node

    # --8<-- [start:create_arg]
    def create_arg(self, a: Any) -> Any:
        """Like `TracerBase.create_arg`, plus the module's state.

        Parameters, buffers and submodules of the root become `get_attr`
        nodes; any other tensor is stored on the root as `_tensor_constant0`,
        `_tensor_constant1`, ... (unless it already is a module attribute) and
        read with `get_attr`, and so is an instance of a `ProxyableClassMeta`
        class; a named tuple is rebuilt by a `call_function`.
        """
        if isinstance(a, Proxy) or type(a) in _NO_MODULE_STATE:
            return super().create_arg(a)  # most arguments: skip the checks below
        if isinstance(a, torch.nn.Parameter):
            return self._get_attr_of(a, self.root.named_parameters(), "parameter")
        if isinstance(a, torch.Tensor):
            path = self._path_in(a, self.root.named_buffers())
            if path is not None:
                return self.create_node("get_attr", path, (), {})
        if isinstance(a, torch.nn.Module):
            return self._get_attr_of(a, self.root.named_modules(), "module")
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            return self.create_node("call_function", type(a), tuple(self.create_arg(x) for x in a), {})
        if isinstance(a, torch.Tensor):
            return self.create_node("get_attr", self._tensor_constant_path(a), (), {})
        if is_proxyable_instance(a):
            return self.create_node("get_attr", self._store_constant(a), (), {})
        return super().create_arg(a)
    # --8<-- [end:create_arg]

    def _path_in(self, value: Any, named: Any) -> str | None:
        return next((path for path, candidate in named if candidate is value), None)

    def _get_attr_of(self, value: Any, named: Any, kind: str) -> Node:
        path = self._path_in(value, named)
        if path is None:
            raise NameError(str(untraceable(
                f"a {kind} that is not part of the traced module was used.",
                f"a get_attr node reads a {kind} by its path in the root module, and this one "
                "has none (it was probably created inside forward, or belongs to another module).",
                f"create the {kind} in __init__ and store it as an attribute of the module.",
            )))
        return self.create_node("get_attr", path, (), {})

    def _tensor_constant_path(self, tensor: torch.Tensor) -> str:
        """Where a constant tensor lives on the root: its attribute path, or a fresh name."""
        if tensor not in self.tensor_attrs:
            self.tensor_attrs[tensor] = self._store_constant(tensor, "_tensor_constant")
        return self.tensor_attrs[tensor]

    def _store_constant(self, value: Any, prefix: str | None = None) -> str:
        """Set `value` on the root under a fresh name (by default `_TypeName_constant_0`,
        `_TypeName_constant_1`, ...), and return that name."""
        name = self.get_fresh_qualname(prefix or f"_{type(value).__name__}_constant_")
        setattr(self.root, name, value)
        return name

    def get_fresh_qualname(self, prefix: str) -> str:
        """The first of `prefix0`, `prefix1`, ... that the root module does not have."""
        index = 0
        while hasattr(self.root, f"{prefix}{index}"):
            index += 1
        return f"{prefix}{index}"

    # --8<-- [start:create_args_for_root]
    def create_args_for_root(self, root_fn: Callable, is_module: bool,
                             concrete_args: dict | tuple | None = None) -> tuple[Callable, list]:
        """One placeholder Proxy per parameter of `root_fn` (after `self`, for a module).

        `*args` and `**kwargs` become one placeholder each (named `*args`,
        `**kwargs`); the function is then rebuilt to take them positionally.

        Returns:
            The function to call, and the arguments to call it with.
        """
        fn = inspect.unwrap(root_fn)
        code, signature = fn.__code__, inspect.signature(fn)
        names = list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
        args: list[Any] = []
        if is_module and not names:
            raise _SelfInStarArgs(
                f"cannot trace {fn.__qualname__}: it takes `self` inside `*args` (``self`` "
                "argument cannot be part of *args expansion!). Name it: def forward(self, *args).")
        if is_module:
            names, args = names[1:], [self.root]
        if isinstance(concrete_args, tuple):
            if len(names) + is_module == 1 and concrete_args and code.co_flags & _HAS_VARARGS:
                # `forward(self, *inputs)` (or `f(a, *rest)`) with a tuple: torch.fx
                # makes one input per element, named `input_0`, `input_1`, ...
                return root_fn, args + [self._input_placeholder(f"input_{i}", value)
                                        for i, value in enumerate(concrete_args)]
            if len(concrete_args) != len(names):
                raise TypeError(f"concrete_args has {_count(len(concrete_args), 'value')} but the "
                                f"traced function takes {_count(len(names), 'input')}"
                                + (f" ({', '.join(names)})." if names else "."))
            concrete_args = dict(zip(names, concrete_args))
        args += [self._placeholder(name, concrete_args or {}, signature, fn) for name in names]
        if code.co_kwonlyargcount or code.co_flags & _HAS_VARARGS:
            star_names = iter(code.co_varnames[code.co_argcount + code.co_kwonlyargcount:])
            for flag, stars in ((inspect.CO_VARARGS, "*"), (inspect.CO_VARKEYWORDS, "**")):
                if code.co_flags & flag:
                    args.append(self._placeholder(stars + next(star_names), {}, signature, fn))
            root_fn = _all_positional(root_fn, len(args))
        in_spec = pytree.tree_flatten(tuple(args))[1]
        if any(not spec.is_leaf() for spec in in_spec.children()):
            # An input given as a structure (`(PH, 2)`): as torch.fx does, the
            # graph then returns its outputs flattened into a list, and keeps
            # both structures for chapter 3's code generator to put back.
            root_fn = self._flattening_outputs(root_fn, ["self"] * is_module + names, in_spec)
        return root_fn, args
    # --8<-- [end:create_args_for_root]

    def _flattening_outputs(self, fn: Callable, arg_names: list[str],
                            in_spec: pytree.TreeSpec) -> Callable:
        """`fn`, returning the leaves of its result as a flat list; the input and
        output structures are kept in `graph.pytree_info`."""
        graph = self.graph

        @functools.wraps(fn)
        def flattened(*args: Any) -> list:
            leaves, out_spec = pytree.tree_flatten(fn(*args))
            graph.pytree_info = PytreeInfo(arg_names, in_spec, out_spec)
            return leaves

        return flattened

    def _placeholder(self, name: str, concrete_args: dict, signature: inspect.Signature,
                     fn: Callable) -> Any:
        if name in concrete_args:
            return self._specialise(name, concrete_args[name], signature)
        parameter = signature.parameters.get(name.lstrip("*"))
        default = () if name.startswith("*") or parameter.default is parameter.empty \
            else (parameter.default,)
        annotation = None if name.startswith("*") else fn.__annotations__.get(name)
        return self.create_proxy("placeholder", name, default, {}, type_expr=annotation)

    # --8<-- [start:specialise]
    def _specialise(self, name: str, value: Any, signature: inspect.Signature) -> Any:
        """A concrete input: placeholders named `name_1`, `name_2`, ... for its `PH`s,
        and for every other part an assertion that the input has that value."""
        parameter = signature.parameters[name]
        default = () if parameter.default is parameter.empty else (parameter.default,)
        count = 0

        def replace(part: Any) -> Any:
            nonlocal count
            count += 1
            proxy = self._input_placeholder(f"{name}_{count}", part, default)
            if isinstance(part, PHBase):
                return proxy
            if part is None:
                message = f"{name} has been specialized to have value None but got another value"
                check = self.create_proxy("call_function", _assert_is_none, (proxy, message), {})
                # Generated code then registers it with `wrap`, so retracing that
                # code records the check again instead of running it on a Proxy.
                check.node.meta["is_wrapped"] = True
            elif isinstance(part, BASE_TYPES) and not isinstance(part, torch.Tensor):
                torch._assert(proxy == part, f"{name} has been specialized to have value {part} "
                              "but got another value")
            else:
                warnings.warn(f"Was not able to add assertion to guarantee correct input {name} "
                              "to specialized function. It is up to the user to make sure that "
                              "your inputs match the inputs you specialized the function with.")
            return part

        return pytree.tree_map(replace, value)
    # --8<-- [end:specialise]

    def _input_placeholder(self, name: str, part: Any, default: tuple = ()) -> Proxy:
        """A placeholder for one part of `concrete_args`; a `PH` subclass's metadata goes
        onto its node."""
        proxy = self.create_proxy("placeholder", name, default, {})
        if isinstance(part, PHBase) and part is not PH:
            copy_metadata(part, proxy.node)
        return proxy


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


def _assert_is_none(value: Any, message: str) -> None:
    """Recorded for a `concrete_args` input specialised to `None`."""
    assert value is None, message


def _all_positional(fn: Callable, count: int) -> Callable:
    """A copy of `fn` whose keyword-only, `*args` and `**kwargs` parameters are plain
    positional ones, so the tracer can pass one Proxy for each."""
    code = fn.__code__
    code = code.replace(co_flags=code.co_flags & ~_HAS_VARARGS, co_argcount=count,
                        co_kwonlyargcount=0)
    return FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
