"""Flattening structured inputs in generated code (`fx_pytree` in the source).

A graph traced with structured `concrete_args` (`{"a": PH, "b": PH}`) has one
placeholder per leaf, but its `forward` takes the structures. The generated
code's first line flattens them, checking that each input has the structure
the graph was traced with:

    x_1, x_2, = fx_pytree.tree_flatten_spec([x], self._in_spec)
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from typing import Any

from torch.utils import _pytree as pytree
from torch.utils._pytree import TreeSpec

from ..proxy.proxy import Proxy


def tree_flatten_spec(pytree: Any, spec: TreeSpec, where: str = "the inputs") -> list:
    """The leaves of `pytree` (a value with structure), read in the order and shape that
    `spec` describes. The parameters are named as torch.fx's.

    Dicts are read by the spec's keys (extra keys are ignored, as in torch.fx);
    lists and tuples must have the spec's length; other structures (an `OrderedDict`)
    must be the traced one exactly, keys and their order too.

    Raises:
        TypeError: if `pytree` does not have the structure of `spec`.
    """
    if spec.is_leaf():
        return [pytree]
    children = _children(pytree, spec, where)
    leaves = []
    for key, child, child_spec in zip(_keys(spec), children, spec.children()):
        leaves += tree_flatten_spec(child, child_spec, f"{where}[{key!r}]")
    return leaves


def register_pytree_flatten_spec(
    cls: type, flatten_fn_spec: Any, flatten_fn_exact_match_spec: Any = None
) -> None:
    """Tell generated code how to read the parts of a `cls` input (torch.fx._pytree's API).

    Args:
        cls: a class already registered with `torch.utils._pytree`.
        flatten_fn_spec: `(value, spec) -> list of its parts`, in the spec's order.
        flatten_fn_exact_match_spec: accepted for torch.fx's signature; minifx always
            checks the structure itself.
    """
    _FLATTEN_SPEC[cls] = flatten_fn_spec


_FLATTEN_SPEC: dict[type, Any] = {}

# Structures whose children are read as `value[key]`, by the spec's keys or by position.
_BY_KEY = (dict, OrderedDict)
_BY_POSITION = (list, tuple, namedtuple)


def _keys(spec: TreeSpec) -> list:
    if spec.type in _BY_KEY:
        return list(spec.context)
    return list(range(spec.num_children))


def _children(value: Any, spec: TreeSpec, where: str) -> list:
    if isinstance(value, Proxy):  # retracing generated code: record the lookups
        if spec.type in _BY_KEY + _BY_POSITION:
            return [value[key] for key in _keys(spec)]
        # A registered class: its flatten function reads its parts (`x.a`), recorded too.
        return list(pytree.SUPPORTED_NODES[spec.type].flatten_fn(value)[0])
    if spec.type is dict:
        if not isinstance(value, dict):
            raise _mismatch(where, f"a dict with keys {list(spec.context)}", value)
        missing = [key for key in spec.context if key not in value]
        if missing:
            raise _mismatch(
                where, f"a dict with keys {list(spec.context)}", value, f"missing {missing}"
            )
        return [value[key] for key in spec.context]
    if spec.type in _BY_POSITION:  # read by position, as torch.fx does
        if not isinstance(value, (list, tuple)) or len(value) != spec.num_children:
            raise _mismatch(where, f"a {_type_name(spec)} of {spec.num_children} items", value)
        return list(value)
    # Any other registered structure (an OrderedDict, a class registered with pytree, ...).
    if type(value) is not spec.type:
        raise _mismatch(where, _a(spec.type.__name__), value)
    if spec.type in _FLATTEN_SPEC:
        return list(_FLATTEN_SPEC[spec.type](value, spec))
    # Flattened as pytree does, so it must match exactly, as in torch.fx: an OrderedDict
    # has the traced keys in the traced order, or its leaves would be read in another.
    children, context = pytree.SUPPORTED_NODES[spec.type].flatten_fn(value)
    if context != spec.context or len(children) != spec.num_children:
        raise _mismatch(where, f"{_a(spec.type.__name__)} {_structure(spec)}", value)
    return list(children)


def _a(name: str) -> str:
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _structure(spec: TreeSpec) -> str:
    if spec.type is OrderedDict:
        return f"with the keys {list(spec.context)}, in that order"
    return f"with the context {spec.context!r}"


def _type_name(spec: TreeSpec) -> str:
    # pytree files every named tuple under `collections.namedtuple`, its class in the context.
    return spec.context.__name__ if spec.type is namedtuple else spec.type.__name__


def _mismatch(where: str, expected: str, value: Any, detail: str = "") -> TypeError:
    detail = f" ({detail})" if detail else ""
    return TypeError(
        f"{where} should be {expected}, as when the module was traced with concrete_args, "
        f"but got {type(value).__name__}: {value!r}{detail}. A graph traced with structured "
        "concrete_args only accepts inputs of that structure; retrace to accept another."
    )
