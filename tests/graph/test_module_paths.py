"""`minifx/graph/module_paths.py`: dotted attribute paths into a module."""

from __future__ import annotations

import pytest
from torch import nn

from minifx.graph.module_paths import get_path, has_path

pytestmark = pytest.mark.ch2


def model() -> nn.Module:
    return nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU(), nn.Linear(3, 1)))


def test_get_path_follows_each_step():
    root = model()
    assert get_path(root, "1.1") is root[1][1]
    assert get_path(root, "1.1.weight") is root[1][1].weight


def test_a_missing_step_gives_the_default():
    root, missing = model(), object()
    assert get_path(root, "1.7.weight") is None
    assert get_path(root, "0.nope", missing) is missing


def test_has_path_tells_a_missing_attribute_from_one_that_is_none():
    root = model()
    root.nothing = None
    assert has_path(root, "nothing") and has_path(root, "0.bias")
    assert not has_path(root, "0.nope")
