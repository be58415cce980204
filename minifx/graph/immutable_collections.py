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


class immutable_list(list):
    """The list a node stores: editing it in place would bypass the use-def lists."""

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            "a list inside a Node's args or kwargs cannot be changed in place, because the "
            "graph would not see the change and its use-def lists would go stale. Build a new "
            "list and assign it (new_args = (new_list, *node.args[1:]); node.args = new_args), "
            "or use node.update_arg."
        )

    append = extend = insert = pop = remove = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __reduce__(self) -> tuple:
        # type(self), as torch.fx's: a copy of a subclass stays that subclass.
        return (type(self), (list(self),))


class immutable_dict(dict):
    """The dict a node stores; see `immutable_list`."""

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            "a dict inside a Node's args or kwargs cannot be changed in place, because the "
            "graph would not see the change and its use-def lists would go stale. Build a new "
            "dict and assign it (new_kwargs = {**node.kwargs, key: value}; node.kwargs = "
            "new_kwargs), or use node.update_kwarg(key, value)."
        )

    __setitem__ = __delitem__ = __ior__ = pop = popitem = clear = update = setdefault = _refuse

    def __hash__(self) -> int:
        # Equal dicts hash alike whatever their order, as equal dicts must.
        return hash(frozenset(self.items()))

    def __reduce__(self) -> tuple:
        return (type(self), (dict(self),))


def _flatten_list(values: immutable_list) -> tuple[list, None]:
    return list(values), None


def _flatten_dict(mapping: immutable_dict) -> tuple[list, list]:
    return list(mapping.values()), list(mapping.keys())


pytree.register_pytree_node(
    immutable_list,
    _flatten_list,
    lambda values, _: immutable_list(values),
    serialized_type_name="minifx.graph.immutable_collections.immutable_list",
    flatten_with_keys_fn=lambda values: (
        [(pytree.SequenceKey(i), v) for i, v in enumerate(values)],
        None,
    ),
)
pytree.register_pytree_node(
    immutable_dict,
    _flatten_dict,
    lambda values, keys: immutable_dict(zip(keys, values)),
    serialized_type_name="minifx.graph.immutable_collections.immutable_dict",
    flatten_with_keys_fn=lambda mapping: (
        [(pytree.MappingKey(k), v) for k, v in mapping.items()],
        list(mapping.keys()),
    ),
)
