"""`minifx/graph/errors.py`: each misuse error is also the type torch.fx raises."""

from __future__ import annotations

import pytest
import torch
import torch.fx

import minifx.graph
from minifx.graph.errors import (
    InsertArgIndexError,
    MisuseError,
    NotTraceable,
    SelfInStarArgs,
    new_node_error,
)

pytestmark = pytest.mark.ch2


@pytest.mark.parametrize(
    "error, also",
    [
        (MisuseError, (ValueError, AssertionError)),
        (InsertArgIndexError, (IndexError, AssertionError)),
        (NotTraceable, (TypeError, AssertionError)),
        (SelfInStarArgs, (TypeError, RuntimeError)),
    ],
)
def test_each_error_is_caught_as_torch_fx_s_type(error, also):
    for kind in also:
        with pytest.raises(kind):
            raise error("message")


def test_the_node_module_still_exports_misuse_error():
    from minifx.graph.node import MisuseError as from_node

    assert from_node is MisuseError


@pytest.mark.parametrize(
    "problem, op, target, kind",
    [
        ("an opcode", "call_fn", "x", MisuseError),
        ("a callable", "call_function", "relu", MisuseError),
        ("a str", "call_method", torch.relu, MisuseError),
    ],
)
def test_new_node_error_is_torch_fx_s_type(problem, op, target, kind):
    error = new_node_error("n", op, target, problem)
    assert type(error) is kind
    assert str(error).startswith("cannot create node %n: ")


# torch.fx's Node raises a ValueError for a wrong target, Graph.create_node an
# AssertionError (it makes a name from the target first); minifx's error is both.
@pytest.mark.parametrize(
    "op, target", [("call_function", "relu"), ("call_method", 3), ("get_attr", 3)]
)
def test_a_wrong_target_is_the_error_torch_fx_raises_on_each_path(op, target):
    for create in (
        lambda g: g.create_node(op, target),
        lambda g: g.create_node(op, target, name="n"),
    ):
        with pytest.raises(Exception) as theirs:
            create(torch.fx.Graph())
        with pytest.raises(MisuseError) as ours:
            create(minifx.graph.Graph())
        assert isinstance(ours.value, type(theirs.value))
