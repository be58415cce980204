"""Compare what two runs returned, leaf by leaf, with a path in every message."""

from __future__ import annotations

import math
import types
from typing import Any

import torch


def assert_same(actual: Any, expected: Any, where: str = "output") -> None:
    """Assert that `actual` has the structure and the values of `expected`.

    Containers must have the same type (a namedtuple stays that namedtuple, a
    list is not a tuple) and the same keys or length; tensors must be close
    (`torch.testing.assert_close`: same dtype, device and shape; NaN equals
    NaN); a tensor's bound method (`x.item`) must be the same method of an
    equal tensor; any other leaf must be `==` (or both NaN) and of the same type.

    Args:
        actual: what the GraphModule returned.
        expected: what eager mode returned.
        where: the path of these values in the output, for messages.
    """
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor), f"{where}: expected a tensor, got {actual!r}"
        torch.testing.assert_close(actual, expected, equal_nan=True, msg=lambda m: f"{where}: {m}")
        return
    assert type(actual) is type(expected), (
        f"{where}: expected a {type(expected).__name__}, got {type(actual).__name__}: {actual!r}"
    )
    if isinstance(expected, dict):
        assert list(actual) == list(expected), f"{where}: keys {list(actual)} != {list(expected)}"
        for key in expected:
            assert_same(actual[key], expected[key], f"{where}[{key!r}]")
    elif isinstance(expected, (tuple, list)) and not isinstance(expected, torch.Size):
        assert len(actual) == len(expected), f"{where}: length {len(actual)} != {len(expected)}"
        for index, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, f"{where}[{index}]")
    elif isinstance(expected, types.BuiltinMethodType) and isinstance(
        expected.__self__, torch.Tensor
    ):
        assert actual.__name__ == expected.__name__, f"{where}: {actual!r} != {expected!r}"
        assert_same(actual.__self__, expected.__self__, f"{where}.__self__")
    elif isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(actual), f"{where}: {actual!r} != nan"
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"
