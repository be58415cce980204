"""`Tracer`: turn an `nn.Module` (or a function) into a `Graph`.

Stage 1's Proxy records operations; the tracer adds modules: parameters of
`forward` become placeholders, parameters and buffers `get_attr` nodes, and a
call of a *leaf* submodule one `call_module` node. It sees module calls and
attribute reads by replacing `nn.Module.__call__` and `__getattr__` during
`trace()` only, as torch.fx does.
"""

from __future__ import annotations

import inspect
import math
from collections import OrderedDict
from types import FunctionType, ModuleType
from typing import Any, Callable

import torch

from ..proxy.proxy import PLAIN_VALUE_TYPES, Proxy, TracerBase
from . import errors
from .concrete_args import ConcreteArgs
from .graph import Graph
from .node import Node
from .proxyable import is_proxyable_instance
from .structured_inputs import (
    PytreeInfo,
    all_positional,
    concrete_args_by_name,
    flattening_outputs,
    has_structured_inputs,
    named_parameters,
    star_parameters,
    takes_only_plain_parameters,
)
from .tracer_constants import ConstantsOnRoot
from .tracer_options import deepcopy_tracer, get_attr_options, module_scope, record_origin
from .wrapping import Patcher, autowrapped_ids, patch_autowrapped, patch_wrapped

_ORIGINAL_MODULE_GETATTR = torch.nn.Module.__getattr__
_ORIGINAL_MODULE_CALL = torch.nn.Module.__call__
# Exact types that can be none of create_arg's module-state cases (parameter,
# buffer, submodule, named tuple, constant); Parameter's isinstance check is slow.
_NO_MODULE_STATE = PLAIN_VALUE_TYPES | {tuple, list, dict}

__all__ = ["Tracer", "PytreeInfo"]


class Tracer(ConcreteArgs, ConstantsOnRoot, TracerBase):
    """Traces an `nn.Module` or a function into a `Graph`, as `torch.fx.Tracer` does.

    Override `is_leaf_module`, `create_proxy`, `create_node`, `create_arg` or
    `call_module` to change what gets recorded.

    Args:
        autowrap_modules: modules whose functions are recorded as one node (`math.sqrt`).
        autowrap_functions: single functions recorded the same way.
        param_shapes_constant: read a parameter's `shape`, `size()`, ... as real values.
    """

    root: torch.nn.Module  # set by `trace`: a new Tracer has no root
    graph: Graph  # nor graph, as in torch.fx
    __deepcopy__ = deepcopy_tracer

    def __init__(
        self,
        autowrap_modules: tuple[ModuleType, ...] = (math,),
        autowrap_functions: tuple[Callable, ...] = (),
        param_shapes_constant: bool = False,
    ) -> None:
        self._autowrap_ids = autowrapped_ids(autowrap_modules, autowrap_functions)
        self._autowrap_search = list(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths: dict[torch.nn.Module, str] | None = None
        self.tensor_attrs: dict[torch.Tensor, str] = {}
        # The submodule calls under way, for node.meta["nn_module_stack"] (tracer_options).
        self.module_stack: OrderedDict[str, tuple[str, type]] = OrderedDict()
        self.num_calls: dict[str, int] = {}

    # --8<-- [start:trace]
    def trace(
        self, root: torch.nn.Module | Callable, concrete_args: dict | tuple | None = None
    ) -> Graph:
        """Run `root` (a module's `forward`, or a function) on Proxies; return the `Graph`.

        Args:
            concrete_args: values for some inputs, by name (or all, as a
                tuple): the graph is specialised to them (`concrete_args.py`).

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

    def _start(self, root: torch.nn.Module | Callable) -> FunctionType:
        """Set up `root`, `graph` and `tensor_attrs`; return the function to trace."""
        if isinstance(root, torch.nn.Module):
            self.root = root
            fn = getattr(type(root), self.traced_func_name, None)
            if fn is None:
                raise errors.no_traced_function(root, self.traced_func_name)
            self.submodule_paths = {module: path for path, module in root.named_modules()}
        else:
            self.root, fn = torch.nn.Module(), root
        if not isinstance(fn, FunctionType):
            raise errors.not_a_function(fn, self.traced_func_name)
        self.graph = Graph(tracer_cls=type(self))
        # Where the traced code lives: chapter 3 names the generated forward's file after it.
        fields = ("co_name", "co_filename", "co_firstlineno")
        self.graph._co_fields = {field: getattr(fn.__code__, field) for field in fields}
        self.tensor_attrs = {}
        self._collect_tensor_attrs(self.root, "")
        return fn

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
            patch_autowrapped(patcher, module_globals, self._autowrap_ids)
            return self.call_module(module, forward, args, kwargs)

        patcher.patch_method(torch.nn.Module, "__getattr__", module_getattr)
        patcher.patch_method(torch.nn.Module, "__call__", module_call)

    # --8<-- [end:patch_modules]

    def _patch_wrapped_functions(self, patcher: Patcher, fn_globals: dict[str, Any]) -> None:
        """Install stand-ins for `wrap`ped functions (minifx's and torch.fx's) and autowraps."""
        patch_wrapped(patcher)
        for namespace in [fn_globals, *map(vars, self._autowrap_search)]:
            patch_autowrapped(patcher, namespace, self._autowrap_ids)

    # --8<-- [start:leaf]
    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        """Whether a call to `m` (at path `module_qualified_name`) is one `call_module` node.

        By default the layers of `torch.nn` and `torch.ao.nn` are, except `nn.Sequential`.
        """
        return m.__module__.startswith(("torch.nn", "torch.ao.nn")) and not isinstance(
            m, torch.nn.Sequential
        )

    # --8<-- [task:2.6] "Leaf modules and parameters" points=5 section=02-graph.md#leaf-modules
    def call_module(self, m: torch.nn.Module, forward: Callable, args: tuple, kwargs: dict) -> Any:
        """Record a leaf module call as `call_module`; run any other module's `forward`."""
        path = self.path_of_module(m)
        with module_scope(self, path, m):  # for node.meta["nn_module_stack"]
            if not self.is_leaf_module(m, path):
                return forward(*args, **kwargs)
            return self.create_proxy("call_module", path, args, kwargs)

    # --8<-- [end-task:2.6]
    # --8<-- [end:leaf]

    def path_of_module(self, mod: torch.nn.Module) -> str:
        """The path of `mod` in the root module, such as `"layer1.0.conv1"` (else `NameError`)."""
        paths = self.submodule_paths
        if paths is None:
            paths = {module: path for path, module in self.root.named_modules()}
        if mod not in paths:
            raise errors.module_not_in_root(mod)
        return paths[mod]

    # --8<-- [start:getattr]
    # --8<-- [task:2.6]
    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Proxy]) -> Any:
        """Called for each `module.attr` read while tracing: a parameter becomes a Proxy
        for one `get_attr` node, made on first use; other values are returned as they are."""
        if isinstance(attr_val, torch.nn.Parameter):
            found = self._cached_get_attr(
                attr_val, self.root.named_parameters(), parameter_proxy_cache
            )
            if found is not None:
                return found
        if self.proxy_buffer_attributes and isinstance(attr_val, torch.Tensor):
            found = self._cached_get_attr(
                attr_val, self.root.named_buffers(), parameter_proxy_cache
            )
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

    # --8<-- [end-task:2.6]
    def create_node(
        self,
        kind: str,
        target: Any,
        args: tuple,
        kwargs: dict,
        name: str | None = None,
        type_expr: Any = None,
    ) -> Node:
        """Like `TracerBase.create_node`, and notes where the node came from in `node.meta`."""
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        record_origin(self, node)
        return node

    # --8<-- [start:create_arg]
    def create_arg(self, a: Any) -> Any:
        """Like `TracerBase.create_arg`, plus the module's state, read by `get_attr` nodes.

        Other tensors are stored on the root as `_tensor_constant0`, ...; a named
        tuple is rebuilt by a `call_function`.
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
            return self.create_node(
                "call_function", type(a), tuple(self.create_arg(x) for x in a), {}
            )
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
            raise errors.value_not_in_root(kind)
        return self.create_node("get_attr", path, (), {})

    # --8<-- [start:create_args_for_root]
    def create_args_for_root(
        self, root_fn: Callable, is_module: bool, concrete_args: dict | tuple | None = None
    ) -> tuple[Callable, list]:
        """One placeholder Proxy per parameter of `root_fn` (after `self`, for a module).

        Returns:
            The function to call (rebuilt if it takes `*args`, ...), and its arguments.
        """
        fn = inspect.unwrap(root_fn)
        signature = inspect.signature(fn)
        names, args = named_parameters(signature), []
        if is_module and not names:
            raise errors.self_in_star_args(fn.__qualname__)
        if is_module:
            names, args = names[1:], [self.root]
        if isinstance(concrete_args, tuple):
            if len(names) + is_module == 1 and concrete_args and star_parameters(signature):
                # `forward(self, *inputs)` (or `f(a, *rest)`) with a tuple: torch.fx
                # makes one input per element, named `input_0`, `input_1`, ...
                return root_fn, args + [
                    self._input_placeholder(f"input_{i}", value)
                    for i, value in enumerate(concrete_args)
                ]
            concrete_args = concrete_args_by_name(names, concrete_args)
        args += [self._placeholder(name, concrete_args or {}, signature, fn) for name in names]
        if not takes_only_plain_parameters(signature):  # *args, **kwargs, keyword-only
            args += [
                self._placeholder(star, {}, signature, fn) for star in star_parameters(signature)
            ]
            root_fn = all_positional(root_fn, len(args))
        if has_structured_inputs(args):  # an input given as a structure, such as `(PH, 2)`
            root_fn = flattening_outputs(self.graph, root_fn, ["self"] * is_module + names, args)
        return root_fn, args

    # --8<-- [end:create_args_for_root]

    def _placeholder(
        self, name: str, concrete_args: dict, signature: inspect.Signature, fn: Callable
    ) -> Any:
        if name in concrete_args:
            return self._specialise(name, concrete_args[name], signature)
        if name.startswith("*"):  # `*args` or `**kwargs`: no default, no annotation
            return self.create_proxy("placeholder", name, (), {}, type_expr=None)
        parameter = signature.parameters[name]
        default = () if parameter.default is parameter.empty else (parameter.default,)
        annotation = fn.__annotations__.get(name)
        return self.create_proxy("placeholder", name, default, {}, type_expr=annotation)


def _assert_is_none(value: Any, message: str) -> None:
    """Recorded for a `concrete_args` input specialised to `None`."""
    assert value is None, message
