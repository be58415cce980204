"""`minifx.codegen.constants`: constants without a plain literal, written as torch.fx writes them.

Each case puts one constant into a graph by hand, generates the code with
both libraries, and checks that the text is the same and that running it
gives the constant back.
"""

from __future__ import annotations

import collections
import enum
import math

import pytest
import torch
import torch.fx

import minifx.codegen
import minifx.graph

pytestmark = pytest.mark.ch3

Point = collections.namedtuple("Point", ["x", "y"])


class Color(enum.Enum):
    RED = 1


def identity(value):
    return value


CONSTANTS = {
    "nan": math.nan,
    "minus_inf": -math.inf,
    "float": 0.25,
    "named_tuple": Point(1, 2),
    "ordered_dict": collections.OrderedDict(a=1),
    "slice": slice(1, None, 2),
    "dtype": torch.float16,
    "device": torch.device("cpu"),
    "complex": 1 + 2j,
    "complex_inf": complex(math.inf, 1),
    "enum": Color.RED,
    # Written as their repr, as torch.fx pastes it:
    "set": {1, "a", (2, 3)},
    "empty_set": set(),
    "frozenset": frozenset({1.5}),
    "empty_frozenset": frozenset(),
    "range": range(3),
    "range_step": range(1, 9, 2),
    "bytearray": bytearray(b"x\x00"),
    "qscheme": torch.per_channel_affine,
}


def code_and_result(fx, graph_module, constant):
    graph = fx.Graph()
    graph.output(graph.call_function(identity, (constant,)))
    gm = graph_module(torch.nn.Module(), graph)
    return gm.code, gm()


@pytest.mark.parametrize("name", CONSTANTS)
def test_a_constant_is_written_as_torch_fx_writes_it_and_evaluates_back(name) -> None:
    constant = CONSTANTS[name]
    ours, ours_value = code_and_result(minifx.graph, minifx.codegen.GraphModule, constant)
    theirs, theirs_value = code_and_result(torch.fx, torch.fx.GraphModule, constant)
    assert ours == theirs
    assert type(ours_value) is type(theirs_value)
    if name == "nan":
        assert math.isnan(ours_value)
    else:
        assert ours_value == constant == theirs_value


def test_a_dtype_is_reached_through_torch_and_a_nan_through_a_global() -> None:
    graph = minifx.graph.Graph()
    graph.output(graph.call_function(identity, ((torch.int8, math.nan),)))
    code = minifx.codegen.python_code(graph)
    assert "identity((torch.int8, nan))" in code.src
    assert code.globals["torch"] is torch and code.globals["nan"] is math.nan
