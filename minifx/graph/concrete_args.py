"""`concrete_args`: a trace specialised to the values of some inputs.

`Tracer.create_args_for_root` gives an input named in `concrete_args` its
value instead of a Proxy, so that `if flag:` takes one branch. The graph keeps
a placeholder for that input (`flag_1`) and records a check that the caller
passes the same value; `PH` (or a `PHBase` subclass) keeps a part of an input
symbolic. `Tracer` inherits these methods from `ConcreteArgs`.
"""

from __future__ import annotations

import inspect
import warnings
from typing import TYPE_CHECKING, Any

import torch
from torch.utils import _pytree as pytree

from ..proxy.proxy import Proxy
from .placeholders import PH, PHBase, copy_metadata

if TYPE_CHECKING:
    from .tracer import Tracer

# The values whose check is an assertion `input == value`: of exactly these types, as
# in torch.fx (a subclass, such as an IntEnum member, gets the warning instead).
CHECKED_TYPES = frozenset(
    {str, int, float, bool, complex, torch.dtype, torch.device, torch.memory_format}
    | {torch.layout, torch._ops.OpOverload, torch.SymInt, torch.SymBool, torch.SymFloat}
)


class ConcreteArgs:
    """Mixed into `Tracer`: placeholders and checks for the inputs given in `concrete_args`."""

    # --8<-- [start:specialise]
    def _specialise(self: Tracer, name: str, value: Any, signature: inspect.Signature) -> Any:
        """A concrete input: placeholders named `name_1`, `name_2`, ... for its `PH`s,
        and for every other part an assertion that the input has that value."""
        from .tracer import _assert_is_none  # tracer.py imports this module

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
            elif type(part) in CHECKED_TYPES:
                torch._assert(
                    proxy == part,
                    f"{name} has been specialized to have value {part} but got another value",
                )
            else:
                # torch.fx warns with the default stacklevel too.
                warnings.warn(  # noqa: B028
                    f"Was not able to add assertion to guarantee correct input {name} "
                    "to specialized function. It is up to the user to make sure that "
                    "your inputs match the inputs you specialized the function with."
                )
            return part

        return pytree.tree_map(replace, value)

    # --8<-- [end:specialise]

    def _input_placeholder(self: Tracer, name: str, part: Any, default: tuple = ()) -> Proxy:
        """A placeholder for one part of `concrete_args`; a `PH` subclass's metadata goes
        onto its node."""
        proxy = self.create_proxy("placeholder", name, default, {})
        if isinstance(part, PHBase) and part is not PH:
            copy_metadata(part, proxy.node)
        return proxy
