"""What the stage-1 tests share: a placeholder Proxy, and the leaves of a record's arguments."""

from __future__ import annotations

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
