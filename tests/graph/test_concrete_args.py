"""`minifx/graph/concrete_args.py`: placeholders and checks for inputs given in
`concrete_args`. The graphs are compared with torch.fx's in test_differential.py."""

from __future__ import annotations

import enum
import warnings

import pytest
import torch
import torch.fx

from minifx.graph import PH, PHWithMeta, Tracer
from minifx.graph.tracer import _assert_is_none

pytestmark = pytest.mark.ch2


def test_an_input_specialised_to_none_records_a_wrapped_check():
    def f(x, y):
        return x if y is None else x + y

    graph = Tracer().trace(f, concrete_args={"y": None})
    (check,) = graph.find_nodes(op="call_function", target=_assert_is_none)
    assert [str(a) for a in check.args] == [
        "y_1",
        "y has been specialized to have value None but got another value",
    ]
    assert check.meta["is_wrapped"] is True


def test_each_part_of_a_structured_input_gets_a_placeholder():
    def f(x, pair):
        return x * pair[0] * pair[1]

    graph = Tracer().trace(f, concrete_args={"pair": (PH, 2)})
    assert [n.name for n in graph.find_nodes(op="placeholder")] == ["x", "pair_1", "pair_2"]


def test_a_ph_subclass_puts_its_attributes_on_its_placeholder():
    def f(x):
        return x + 1

    graph = Tracer().trace(f, concrete_args={"x": PHWithMeta(ph_key="image")})
    (x_1,) = graph.find_nodes(op="placeholder")
    assert x_1.name == "x_1" and x_1.ph_key == "image"


def test_a_value_that_cannot_be_checked_warns():
    def f(x, t):
        return x

    with pytest.warns(UserWarning, match="Was not able to add assertion"):
        Tracer().trace(f, concrete_args={"t": object()})


class Mode(enum.IntEnum):
    FAST = 1


class Name(str):
    pass


def scaled(x, setting):
    return x * len(str(setting))


@pytest.mark.parametrize(
    "value, checked",
    [(1, True), ("ab", True), (torch.float64, True), (Mode.FAST, False), (Name("ab"), False)],
    ids=["int", "str", "dtype", "IntEnum", "str-subclass"],
)
def test_a_value_is_checked_only_if_its_type_is_exactly_one_torch_fx_checks(value, checked):
    # torch.fx compares types exactly: a subclass's value (an IntEnum member) only warns.
    graphs = {}
    for name, tracer in (("torch.fx", torch.fx.Tracer()), ("minifx", Tracer())):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            graphs[name] = str(tracer.trace(scaled, concrete_args={"setting": value}))
        assert bool(caught) is not checked, name
    assert graphs["minifx"] == graphs["torch.fx"]
    assert ("torch._assert" in graphs["minifx"]) is checked
