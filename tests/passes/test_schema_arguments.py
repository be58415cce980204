"""`schema_arguments`: a call of a `torch.ops` overload spelled out in full, so that two
spellings of the same call compare equal (the matcher relies on it, chapter 7)."""

from __future__ import annotations

import operator

import pytest
import torch

from minifx.graph import Graph
from minifx.passes.schema_arguments import has_schema, schema_arguments

pytestmark = pytest.mark.ch7

POOL = torch.ops.aten.max_pool2d_with_indices.default


def call(target, args, kwargs=None):
    graph = Graph()
    x = graph.placeholder("x")
    return graph.call_function(target, (x, *args), kwargs or {})


def test_only_calls_of_an_overload_have_a_schema():
    assert has_schema(call(POOL, ([2, 2],)))
    assert not has_schema(call(torch.sum, ()))
    assert not has_schema(call(operator.add, (1,)))


def test_positional_keyword_and_default_spellings_agree():
    spellings = [
        call(POOL, ([2, 2], [1, 1])),
        call(POOL, ([2, 2],), {"stride": [1, 1]}),
        call(POOL, ([2, 2], [1, 1], [0, 0], [1, 1], False)),
        call(POOL, ([2, 2], [1, 1]), {"ceil_mode": False, "padding": [0, 0]}),
    ]
    full = [schema_arguments(node)[1:] for node in spellings]  # [0] is the placeholder
    assert full == [[[2, 2], [1, 1], [0, 0], [1, 1], False]] * 4


def test_a_different_argument_is_seen():
    assert schema_arguments(call(POOL, ([2, 2],), {"padding": [1, 1]}))[3] == [1, 1]
    assert schema_arguments(call(POOL, ([2, 2],)))[3] == [0, 0]
