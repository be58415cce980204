"""Which calls dead-code elimination must keep although nobody uses their result.

`Node.is_impure` asks `node_is_impure`, which asks `is_impure_call` about
every `call_function` node. A call is impure, as in torch.fx 2.13, when its target

- is an operator (`torch.ops.aten.add_.Tensor`, `torch.ops.aten.add.out`)
  whose schema says it writes to an argument; an operator packet without an
  overload (`torch.ops.aten.add_`) is judged by its `.default` overload;
- is an operator registered as effectful with PyTorch
  (`torch.library._register_effectful_op`, which `aten._print` is);
- is a random function (`torch.rand`, `torch.randn_like`, ...), which
  advances the random generator, or, unless `impure_random=False`, an
  operator tagged `nondeterministic_seeded` (`torch.ops.aten.rand.default`);
- is in the table below (asserts, profiler ranges, `operator.setitem`,
  grad-mode and autocast switches), or was registered with `has_side_effect`
  here or with `torch.fx.has_side_effect` (libraries register there:
  `torch.distributed` registers its collectives' `wait_tensor`).

minifx also keeps in-place calls that have no schema to say so, by their
name (`x.add_(1)`, `torch.relu_(x)`), which torch.fx erases (chapter 2's
"Differences from torch.fx").
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Callable, TypeVar

import torch

from .module_paths import get_path

if TYPE_CHECKING:
    from .node import Node

_F = TypeVar("_F", bound=Callable)


def _operators(*paths: str) -> list[Any]:
    """`torch.ops.<path>` for each path that this build of torch has."""
    found = []
    for path in paths:
        target: Any = torch.ops
        try:
            for part in path.split("."):
                target = getattr(target, part)
        except (AttributeError, RuntimeError):
            continue
        found.append(target)
    return found


# Calls with an effect that neither a schema nor the effect registry shows:
# torch.fx's own table, extended with `has_side_effect`.
_SIDE_EFFECT_FUNCTIONS: set[Any] = {
    torch._assert,
    torch._assert_async,
    operator.setitem,
    torch._C._set_grad_enabled,
    torch.amp._enter_autocast,
    torch.amp._exit_autocast,
    *_operators(
        "aten._assert_async.msg",
        "aten._assert_scalar.default",
        "aten._assert_tensor_metadata.default",
        "aten.sym_constrain_range.default",
        "aten.sym_constrain_range_for_size.default",
        "profiler._record_function_enter",
        "profiler._record_function_enter.default",
        "profiler._record_function_enter_new",
        "profiler._record_function_enter_new.default",
        "profiler._record_function_exit",
        "profiler._record_function_exit._RecordFunction",
        "inductor.accumulate_grad_.default",
        "inductor.resize_storage_bytes_.default",
    ),
}

# They advance the global random generator, so they stay whatever `impure_random` says.
RANDOM_FUNCTIONS = frozenset(
    {
        torch.rand,
        torch.randn,
        torch.randint,
        torch.randperm,
        torch.rand_like,
        torch.randn_like,
        torch.randint_like,
        torch.normal,
        torch.poisson,
        torch.bernoulli,
        torch.multinomial,
    }
)


def has_side_effect(fn: _F) -> _F:
    """Register `fn` so that dead-code elimination keeps every call of it.

    Use it as a decorator; with `wrap` too, the function is traced as one
    node that stays even though nothing uses its result:

        @minifx.has_side_effect
        @minifx.wrap
        def log(x):
            print(x)

    Returns:
        `fn` itself.
    """
    _SIDE_EFFECT_FUNCTIONS.add(fn)
    return fn


def node_is_impure(node: Node, impure_random: bool = True) -> bool:
    """`Node.is_impure`: whether dead-code elimination must keep `node` even without users.

    Placeholders and the output are the graph's interface; a module is
    impure if it says so with `_is_impure = True`; a function call is impure
    if `is_impure_call` says so or, like a method, if its name says it works
    in place (`is_in_place`).
    """
    if node.op in ("placeholder", "output"):
        return True
    if node.op == "call_method":
        return is_in_place(node.target)
    if node.op == "call_function":
        return is_impure_call(node.target, node.args, impure_random) or is_in_place(
            getattr(node.target, "__name__", None)
        )
    if node.op == "call_module":
        root = getattr(node.graph, "owning_module", None)
        submodule = None if root is None else get_path(root, node.target)
        return getattr(submodule, "_is_impure", False)
    return False


def is_impure_call(target: Any, args: tuple = (), impure_random: bool = True) -> bool:
    """Whether calling `target` (a `call_function` node's target) does more than return a value.

    Args:
        target: the function or operator called.
        args: the call's arguments (an `auto_functionalized` call is judged
            by the operator it wraps, its first argument).
        impure_random: count operators tagged `nondeterministic_seeded`
            (`torch.ops.aten.rand.default`) as impure.
    """
    if isinstance(target, torch._ops.OpOverloadPacket):
        if _registered(target):
            return True
        default = getattr(target, "default", None)
        if default is not None:
            return is_impure_call(default, args, impure_random)
    if isinstance(target, torch._ops.OpOverload) and (
        _mutates_an_argument(target) or _registered(target) or _effectful(target)
    ):
        return True
    if isinstance(target, torch._ops.HigherOrderOperator):
        return _effectful(target) or _registered(target) or _wraps_an_impure_operator(target, args)
    if impure_random and getattr(target, "_nondeterministic_seeded", False):
        return True
    return target in RANDOM_FUNCTIONS or _mutates_an_argument(target) or _registered(target)


def is_in_place(name: Any) -> bool:
    """`add_` and `relu_` work in place, by PyTorch's naming rule; `__add__` and `_private` do not."""
    return (
        isinstance(name, str)
        and name.endswith("_")
        and not name.endswith("__")
        and not name.startswith("_")
    )


def _mutates_an_argument(target: Any) -> bool:
    """An operator whose schema marks an argument as written (`Tensor(a!)`)."""
    schema = getattr(target, "_schema", None)
    return schema is not None and schema.is_mutable


def _registered(target: Any) -> bool:
    """In minifx's table, or registered with `torch.fx.has_side_effect` (only read here)."""
    import torch.fx.node as torch_fx_node

    return target in _SIDE_EFFECT_FUNCTIONS or target in getattr(
        torch_fx_node, "_side_effectful_functions", ()
    )


def _effectful(target: Any) -> bool:
    """Registered with PyTorch's effect system (`torch.library._register_effectful_op`)."""
    from torch._higher_order_ops.effects import _get_effect

    return _get_effect(target) is not None


def _wraps_an_impure_operator(target: Any, args: tuple) -> bool:
    """`auto_functionalized(op, ...)` has the side effects of `op` when `op` is registered."""
    wrappers = [
        getattr(torch.ops.higher_order, name, None)
        for name in ("auto_functionalized", "auto_functionalized_v2")
    ]
    return target in wrappers and bool(args) and _registered(args[0])
