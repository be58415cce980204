"""The rarer arguments `TracerBase.create_arg` converts, as torch.fx does (beside
chapter 1's path).

`create_arg` converts Proxies, plain values, tuples, lists and dicts itself;
everything else comes here: objects that convert themselves
(`__fx_create_arg__`), named tuples and other subclasses of the containers,
slices and ranges, dataclasses, and the `BASE_TYPES` a record keeps as they are.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import TYPE_CHECKING, Any

import torch

from .errors import not_recordable

if TYPE_CHECKING:
    from .proxy import TracerBase

# Values stored in a record as they are.
BASE_TYPES = (str, int, float, bool, complex, type(None), type(Ellipsis), enum.Enum)
BASE_TYPES += (torch.Tensor, torch.dtype, torch.device, torch.memory_format, torch.layout)


def create_other_arg(tracer: TracerBase, a: Any) -> Any:
    """Convert an argument that is not a Proxy, a plain value, nor an exact tuple,
    list or dict; parts are converted with `tracer.create_arg`.

    Raises:
        TraceError: for a type that a record could not reproduce.
    """
    if hasattr(a, "__fx_create_arg__"):  # the object knows how to be recorded
        return a.__fx_create_arg__(tracer)
    if isinstance(a, tuple):
        items = [tracer.create_arg(item) for item in a]
        return type(a)(*items) if hasattr(a, "_fields") else type(a)(items)
    if isinstance(a, list):
        return [tracer.create_arg(item) for item in a]
    if isinstance(a, dict):  # converted, like a dict, into a plain dict
        return tracer.create_arg(dict(a.items()))
    if isinstance(a, (slice, range)):
        return type(a)(*(tracer.create_arg(part) for part in (a.start, a.stop, a.step)))
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        fields = {f.name: tracer.create_arg(getattr(a, f.name)) for f in dataclasses.fields(a)}
        return tracer.create_node("call_function", type(a), (), fields)
    if isinstance(a, BASE_TYPES):
        return a
    raise not_recordable(a)
