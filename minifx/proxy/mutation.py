"""`check_mutable_operations`: refuse torch operators that change their arguments in place.

With `TracerBase.check_mutable_operations = True` (off by default, as in
torch.fx), a `call_function` of a torch operator is looked up in torch's
operator schemas. When exactly one schema accepts the call's arguments and
that schema mutates an argument (`aten::sigmoid.out(Tensor self, *,
Tensor(a!) out)`, `aten::relu_(Tensor(a!) self)`), recording stops with a
`RuntimeError`, the type torch.fx raises. A call that matches several
schemas, or an operator torch has no schema for, is let through: the check
is best effort, as torch.fx's is.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.jit._builtins import _find_builtin

from .errors import user_location
from .ir import format_target


def check_for_mutable_operation(target: Any, args: tuple, kwargs: dict) -> None:
    """Raise if `target(*args, **kwargs)` can only be a mutating overload of a torch operator.

    Raises:
        RuntimeError: naming the schema, the user's line and the functional alternative.
    """
    matching = [schema for schema in schemas_of(target) if accepts(schema, args, kwargs)]
    if len(matching) == 1 and matching[0].is_mutable:
        raise RuntimeError(_message(target, matching[0]))


def schemas_of(target: Any) -> list[torch.FunctionSchema]:
    """torch's schemas for an operator: an `OpOverload`'s own, a packet's overloads',
    or those of the `aten` operator behind a function such as `torch.sigmoid`."""
    if isinstance(target, torch._ops.OpOverload):
        return [target._schema]
    if isinstance(target, torch._ops.OpOverloadPacket):
        return [getattr(target, name)._schema for name in target.overloads()]
    name = _find_builtin(target)
    return list(torch._C._jit_get_schemas_for_operator(name)) if name else []


def accepts(schema: torch.FunctionSchema, args: tuple, kwargs: dict) -> bool:
    """Whether the schema's parameters can be bound to `args` and `kwargs` (by count
    and name only, as Python binds a call; the types are not checked)."""
    names = ["input" if p.name == "self" else p.name for p in schema.arguments]
    positional = [name for name, p in zip(names, schema.arguments) if not p.kwarg_only]
    if len(args) > len(positional):
        return False
    given = set(positional[: len(args)])
    if any(key not in names or key in given for key in kwargs):
        return False
    given |= set(kwargs)
    return all(name in given or p.has_default_value() for name, p in zip(names, schema.arguments))


def _message(target: Any, schema: torch.FunctionSchema) -> str:
    where = user_location()
    lines = [
        f"{format_target(target)} was called as the mutable operation {schema}, which "
        "changes one of its arguments in place (check_mutable_operations is on)."
    ]
    if where:
        lines.append(where)
    lines += [
        "Why: passes treat a graph as functional, each node changing nothing but its "
        "own result; this one also writes into an argument (an `out=` tensor, or the "
        "input of an in-place variant ending in `_`).",
        "How to fix: use the functional form and its result (y = torch.sigmoid(x) instead "
        "of torch.sigmoid(x, out=y)), or trace with check_mutable_operations = False.",
    ]
    return "\n".join(lines)
