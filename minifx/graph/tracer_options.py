"""What the Tracer records and offers beyond chapter 2's path, as torch.fx's does.

- **Where a node came from.** Every node made inside a submodule's call gets
  `node.meta["nn_module_stack"]`: the modules being called, outermost first,
  as `{key: (path, type)}`; a module called a second time has the key
  `"path@1"`. With `tracer.record_stack_traces = True`, a node also gets
  `node.meta["stack_trace"]`: the user's frames, from the root's `forward`
  down to the line that made it, formatted like a traceback. Tools use both
  to map a node back to the user's module and line; a Transformer passes
  them on to the nodes it makes from a node (`copy_origin`).
- **`Tracer(param_shapes_constant=True)`**: a parameter's `shape`, `size()`,
  `dim()`, `ndim`, `numel()` and `nelement()` are the real values while
  tracing (a `ParameterProxy`), so code may branch on them.
- **`copy.deepcopy(tracer)`**, also after a trace.
"""

from __future__ import annotations

import copy
import inspect
import sys
import traceback
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import torch

from ..proxy.errors import is_library_code
from ..proxy.proxy import Proxy

if TYPE_CHECKING:
    from .node import Node
    from .tracer import Tracer


# -- where a node came from -----------------------------------------------------------


def module_scope(tracer: Tracer, path: str, module: torch.nn.Module) -> _ModuleScope:
    """Push the call of the submodule at `path` onto `tracer.module_stack` while it runs
    (`with module_scope(...):`)."""
    return _ModuleScope(tracer, path, module)


class _ModuleScope:
    """`module_scope`'s context manager: a class, not `contextlib.contextmanager`, because
    it runs for every module call of every trace, and a generator costs several times more."""

    def __init__(self, tracer: Tracer, path: str, module: torch.nn.Module) -> None:
        self.tracer, self.path, self.module = tracer, path, module

    def __enter__(self) -> None:
        tracer, path = self.tracer, self.path
        calls = tracer.num_calls.get(path, 0)
        self.key = f"{path}@{calls}" if calls else path
        tracer.module_stack[self.key] = (path, type(self.module))
        tracer.num_calls[path] = calls + 1

    def __exit__(self, *exc_info: Any) -> None:
        self.tracer.module_stack.pop(self.key)


def record_origin(tracer: Tracer, node: Node) -> None:
    """Store the module stack, and the user's stack trace if asked for, in `node.meta`."""
    if tracer.module_stack:
        node.meta["nn_module_stack"] = OrderedDict(tracer.module_stack)
    if tracer.record_stack_traces and not node.stack_trace:
        trace = user_stack_trace(1)
        if trace:
            node.stack_trace = trace


# What else a node made from another one takes from it: the fields torch.fx copies.
ORIGIN_FIELDS = (
    "torch_fn",
    "source_fn_stack",
    "original_aten",
    "recompute",
    "ac_graph_id",
    "has_backward_hook",
    "from_node",
    "quantization_tag",
    "_numeric_debug_handle",
    "custom",
    "partitioner_tag",
)


def copy_origin(source: Node, node: Node) -> None:
    """Give `node` the origin of `source`, the node it was made from (a Transformer's
    copies): `source`'s stack trace and module stack (and none of its own), and the
    other fields torch.fx copies (`source_fn_stack`, `custom`, ...) that `source` has."""
    for key in ("stack_trace", "nn_module_stack"):
        if source.meta.get(key):
            node.meta[key] = copy.copy(source.meta[key])
        else:
            node.meta.pop(key, None)
    for key in ORIGIN_FIELDS:
        if key in source.meta:
            node.meta[key] = copy.copy(source.meta[key])


def user_stack_trace(depth: int = 0) -> str | None:
    """The user's frames from the first `forward` on, above the caller's frame (or the one
    `depth` levels above it), formatted like a traceback.

    As in torch.fx, a stack without a `forward` (a function traced on its own,
    a placeholder made before `forward` runs) gives no trace. The frames are read here
    and only their file, line and name go on (see `errors.user_location`).
    """
    frame, entries = sys._getframe(depth + 1), []
    while frame is not None:
        entries.append((frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name, None))
        frame = frame.f_back
    entries.reverse()  # outermost first, as a traceback prints
    first = next((i for i, entry in enumerate(entries) if entry[2] == "forward"), None)
    if first is None:
        return None
    user = [entry for entry in entries[first:] if not is_library_code(entry[0])]
    return "".join(traceback.StackSummary.from_list(user).format()).strip() or None


# -- param_shapes_constant --------------------------------------------------------------


class ParameterProxy(Proxy):
    """The Proxy of a parameter read with `param_shapes_constant=True`.

    Its shape queries answer with the parameter's real values, so that
    `if self.weight.shape[0] < 10:` picks a branch while tracing; every
    other operation is recorded as on any Proxy.
    """

    def __init__(self, tracer: Tracer, node: Node, name: str, param: torch.nn.Parameter) -> None:
        super().__init__(node, tracer)
        self.param, self.name = param, name

    def __repr__(self) -> str:
        return f"ParameterProxy({self.name})"

    @property
    def shape(self) -> torch.Size:
        return self.param.shape

    @property
    def ndim(self) -> int:
        return self.param.ndim

    def size(self, *dim: int) -> Any:
        return self.param.size(*dim)

    def dim(self) -> int:
        return self.param.dim()

    def numel(self) -> int:
        return self.param.numel()

    def nelement(self) -> int:
        return self.param.nelement()


def get_attr_options(tracer: Tracer, path: str, value: Any) -> dict[str, Any]:
    """Extra arguments to `create_proxy` for the `get_attr` of `value`: a ParameterProxy
    factory when `param_shapes_constant` asks for one and `create_proxy` accepts it."""
    if not (tracer.param_shapes_constant and isinstance(value, torch.nn.Parameter)):
        return {}
    if "proxy_factory_fn" not in inspect.signature(tracer.create_proxy).parameters:
        return {}  # a subclass's create_proxy without the option, as torch.fx allows
    return {"proxy_factory_fn": lambda node: ParameterProxy(tracer, node, path, value)}


# -- copying -----------------------------------------------------------------------------


def deepcopy_tracer(tracer: Tracer, memo: dict) -> Tracer:
    """`copy.deepcopy(tracer)`: everything copied except the autowrapped modules (such
    as `math`), which cannot be copied and are shared."""
    copied = type(tracer).__new__(type(tracer))
    memo[id(tracer)] = copied
    for name, value in vars(tracer).items():
        shared = name == "_autowrap_search"
        copied.__dict__[name] = list(value) if shared else copy.deepcopy(value, memo)
    return copied
