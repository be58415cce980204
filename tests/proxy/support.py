"""What the stage-1 tests share: a placeholder Proxy, the leaves of a record's arguments,
and test ids that do not hold memory addresses."""

from __future__ import annotations

import re
from typing import Any, Iterator

from minifx.proxy import Proxy, TracerBase


def placeholder(tracer: TracerBase, name: str = "x") -> Proxy:
    return tracer.create_proxy("placeholder", name, (), {})


def walk(value: Any) -> Iterator[Any]:
    """Every leaf inside nested lists, tuples, dicts and slices."""
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from walk(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from walk(item)
    elif isinstance(value, slice):
        yield from walk((value.start, value.stop, value.step))
    else:
        yield value


def param_id(value: Any) -> str:
    """`str(value)` without memory addresses (`<function relu at 0x7f...>` becomes
    `<function relu>`): with pytest-xdist each worker collects the tests itself, and
    they must all find the same ids."""
    return re.sub(r" at 0x[0-9a-fA-F]+", "", str(value))
