"""A dunder called by its name, `x.__int__()`, records as in torch.fx
(`minifx/proxy/called_by_name.py`; tests/proxy/test_differential.py compares the
records); what Python calls by itself, `int(x)`, still raises minifx's clear error."""

from __future__ import annotations

import operator

import pytest
import torch.fx

from minifx.proxy import TraceError, trace_to_tape
from minifx.proxy.called_by_name import called_attribute

pytestmark = pytest.mark.ch1


def converted(x):
    return int(x)


def converted_by_range(x):
    return range(x)


def converted_to_float(x):
    return float(x)


def converted_inside_a_call_by_name(x):
    return x.__add__(int(x))


def assigned(x):
    x[0] = 1
    return x


def converted_by_a_function_of_a_module(x):
    return operator.__index__(x)


@pytest.mark.parametrize(
    "program",
    [
        converted,
        converted_by_range,
        converted_to_float,
        converted_inside_a_call_by_name,
        assigned,
        converted_by_a_function_of_a_module,
    ],
    ids=lambda f: f.__name__,
)
def test_what_python_calls_by_itself_still_raises_the_clear_error(program):
    with pytest.raises(TypeError) as theirs:
        torch.fx.symbolic_trace(program)
    assert not isinstance(theirs.value, TraceError)
    with pytest.raises(TypeError) as ours:
        trace_to_tape(program)
    assert isinstance(ours.value, TraceError)
    assert "How to fix:" in str(ours.value)


class Probe:
    """Answers each call with the attribute its caller's bytecode is calling."""

    def method(self):
        return called_attribute(1)

    def __call__(self):
        return called_attribute(1)


def test_called_attribute_reads_the_callee_from_the_bytecode():
    # Calls outside `assert` statements: pytest rewrites those, bytecode and positions.
    probe = Probe()
    written_out = probe.method()
    over_two_lines = (
        probe
        .method()
    )  # fmt: skip
    in_a_comprehension = [probe.method() for _ in range(2)]
    through_getattr = getattr(probe, "method")()  # noqa: B009 (the case under test)
    kept_in_a_variable = probe.method
    called_later = kept_in_a_variable()
    not_an_attribute = probe()
    assert (written_out, over_two_lines, in_a_comprehension) == ("method", "method", ["method"] * 2)
    assert (through_getattr, called_later, not_an_attribute) == (None, None, None)
