"""The read-only list and dict that a node stores in its `args` and `kwargs`.

Editing such a container in place would bypass `Node._set_args_kwargs`, and
the graph's use-def lists would go stale; so, as in torch.fx, every method
that would change one raises `TypeError`. Both are registered with
`torch.utils._pytree`, so `tree_leaves(node.args)` and `tree_map` reach the
nodes inside them, as with torch.fx's `immutable_list` and `immutable_dict`.
"""

from __future__ import annotations

from typing import Any

from torch.utils import _pytree as pytree


class _ImmutableList(list):
    """The list a node stores: editing it in place would bypass the use-def lists."""

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            "a list inside a Node's args or kwargs cannot be changed in place, because the "
            "graph would not see the change and its use-def lists would go stale. Build a new "
            "list and assign it: node.args = (new_list, *node.args[1:]), or use node.update_arg."
        )

    append = extend = insert = pop = remove = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __reduce__(self) -> tuple:
        return (_ImmutableList, (list(self),))


class _ImmutableDict(dict):
    """The dict a node stores; see `_ImmutableList`."""

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            "a dict inside a Node's args or kwargs cannot be changed in place, because the "
            "graph would not see the change and its use-def lists would go stale. Build a new "
            "dict and assign it: node.kwargs = {**node.kwargs, key: value}, or use "
            "node.update_kwarg(key, value)."
        )

    __setitem__ = __delitem__ = __ior__ = pop = popitem = clear = update = setdefault = _refuse

    def __hash__(self) -> int:
        # Equal dicts hash alike whatever their order, as equal dicts must.
        return hash(frozenset(self.items()))

    def __reduce__(self) -> tuple:
        return (_ImmutableDict, (dict(self),))


def _flatten_list(values: _ImmutableList) -> tuple[list, None]:
    return list(values), None


def _flatten_dict(mapping: _ImmutableDict) -> tuple[list, list]:
    return list(mapping.values()), list(mapping.keys())


pytree.register_pytree_node(
    _ImmutableList, _flatten_list, lambda values, _: _ImmutableList(values),
    serialized_type_name="minifx.graph.immutable_collections._ImmutableList",
    flatten_with_keys_fn=lambda values: (
        [(pytree.SequenceKey(i), v) for i, v in enumerate(values)], None),
)
pytree.register_pytree_node(
    _ImmutableDict, _flatten_dict, lambda values, keys: _ImmutableDict(zip(keys, values)),
    serialized_type_name="minifx.graph.immutable_collections._ImmutableDict",
    flatten_with_keys_fn=lambda mapping: (
        [(pytree.MappingKey(k), v) for k, v in mapping.items()], list(mapping.keys())),
)
