"""Hostile node names, functions and constants: valid code or a clear error, never
executed text (hostile targets, keyword keys and numbers, which `minifx.codegen.syntax`
spells, are in test_syntax.py).

Graphs are built by hand with `minifx.graph.Graph`, where nothing checks what a
node's name, target or arguments say, and wrapped in a `GraphModule`, which
compiles the code at once. Every hostile string carries a payload that would
create a marker file if it ever ran; the `marker` fixture (conftest.py) fails the
test if the file appears, and `assert_inert` (hostile.py) parses the generated source
and fails if any call could run the payload (a Call of `__import__`, `open`, `exec`, ...).

Where torch.fx behaves differently the test says so. torch.fx pastes names and
reprs into its code, so its code for a payload is only compiled here
(GraphModule construction) and inspected, never run.
"""

from __future__ import annotations

import ast
import enum
import math
import operator
import typing
from typing import Any, Callable

import pytest
import torch
import torch.fx

from minifx.codegen import GraphModule, python_code
from minifx.graph import Graph
from tests.codegen.hostile import (
    EvilStr,
    assert_inert,
    assigned_names,
    minifx_module,
    payloads,
    record,
    seen,
    torch_fx_code,
)

pytestmark = pytest.mark.ch3

try:
    import numpy
except ImportError:  # numpy is optional
    numpy = None


# -- node names ------------------------------------------------------------------------

HOSTILE_NAMES = [
    "a; import os",
    "class",
    "print",
    "torch",
    "x y",
    "häßlich",
    "λ",
    "1abc",
    "",
    "self",
    "getattr",
    "None",
    "inf",
    "device",
    "x",
    "__builtins__",
    "a\nb",
    "a = 1",
    'a"b',
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_hostile_node_name_becomes_a_valid_variable_as_in_torch_fx(name):
    def build(g):
        x = g.placeholder("x")
        relu = g.call_function(torch.relu, (x,))
        relu.name = name
        # Uses after the renamed node need torch, getattr, inf and device as globals.
        inf = g.call_function(torch.add, (relu, math.inf))
        first = g.call_function(torch.Tensor.__getitem__, (inf, 0))
        g.output((first, g.call_function(torch.zeros, (1,), {"device": torch.device("cpu")})))

    gm = minifx_module(build)
    first, zeros = gm(torch.tensor([-1.0, 2.0]))
    assert first.item() == math.inf and zeros.tolist() == [0.0]
    variables = assigned_names(gm.code)
    assert all(v.isascii() and v.isidentifier() for v in variables), variables
    assert variables[0] not in ("torch", "getattr", "inf", "device", "self", "x")
    assert_inert(gm.code)
    fx_variable = assigned_names(torch_fx_code(build))[0]
    if name == "self":
        # minifx differs on purpose: torch.fx writes `self = torch.relu(x)`, so any
        # later `self.<attribute>` would read the tensor instead of the module.
        assert fx_variable == "self" and variables[0] == "self_1"
    else:  # torch.fx makes a variable of the same name
        assert variables[0] == fx_variable


def test_names_that_sanitize_alike_stay_distinct():
    def build(g):
        x = g.placeholder("x")
        nodes = []
        for index, name in enumerate(["x y", "x_y", "x-y", "x y"]):
            node = g.call_function(operator.add, (x, index))
            node.name = name
            nodes.append(node)
        g.output(tuple(nodes))

    gm = minifx_module(build)
    assert [t.item() for t in gm(torch.tensor(10))] == [10, 11, 12, 13]
    returned = next(n for n in ast.walk(ast.parse(gm.code)) if isinstance(n, ast.Return))
    assert len({element.id for element in returned.value.elts}) == 4


# -- call_function targets with hostile names ----------------------------------------------


def renamed(
    function: Callable, *, name: str, qualname: str | None = None, module: str | None = None
) -> Callable:
    function.__name__ = name
    function.__qualname__ = qualname if qualname is not None else name
    if module is not None:
        function.__module__ = module
    return function


def test_a_function_with_hostile_names_is_bound_as_a_global(marker):
    evil = payloads(marker)["call"]

    def add_one(x):
        return x + 1

    function = renamed(add_one, name="x; import os", qualname=evil, module=evil)
    gm = minifx_module(lambda g: g.output(g.call_function(function, (g.placeholder("x"),))))
    assert gm(1) == 2
    assert_inert(gm.code, evil, "x; import os")
    global_names = [n for n, v in python_code(gm.graph).globals.items() if v is function]
    assert len(global_names) == 1 and global_names[0].isidentifier()


@pytest.mark.parametrize(
    "module, name",
    [
        ("torch", "relu; import os"),
        ("torch", "relu"),
        ("torch.nn.functional", "gelu"),
        ("math", "sqrt"),
        ("builtins", "abs"),
        ("torch", "Tensor.add"),
    ],
)
def test_a_fake_torch_looking_function_is_bound_not_looked_up_by_name(module, name):
    def triple(x):
        return x * 3

    function = renamed(triple, name=name, module=module)
    build = lambda g: g.output(g.call_function(function, (g.placeholder("x"),)))  # noqa: E731
    gm = minifx_module(build)
    assert gm(torch.tensor(-2.0)).item() == -6.0  # not relu's 0, gelu's, sqrt's or abs's
    assert_inert(gm.code, name)
    assert f" {module}.{name}(" not in gm.code
    if (module, name) == ("torch", "relu"):
        # torch.fx trusts __module__ and __name__: its code calls the real torch.relu.
        assert "relu = torch.relu(x)" in torch_fx_code(build)


def test_a_callable_object_with_odd_names_and_repr_is_bound_as_a_global(marker):
    class Odd:
        __name__ = 5  # not even a str
        __module__ = None

        def __call__(self, x):
            return x + 1

        def __repr__(self):
            return payloads(marker)["call"]

    odd = Odd()
    graph = Graph()
    graph.output(graph.create_node("call_function", odd, (graph.placeholder("x"),), name="odd"))
    gm = GraphModule(torch.nn.Module(), graph)
    assert gm(1) == 2
    assert_inert(gm.code)


# -- constants -------------------------------------------------------------------------


class EvilRepr:
    def __init__(self, text: str):
        self.text = text

    def __repr__(self):
        return self.text


class EvilFloat(float):
    text = ""

    def __repr__(self):
        return self.text


class EvilInt(int):
    text = ""

    def __repr__(self):
        return self.text


class Colour(enum.Enum):
    RED = 1
    CLASS = 2


Keywords = enum.Enum("Keywords", {"class": 1, "a b": 2})  # members no `.name` can reach


def hostile_constants(evil: str) -> dict[str, Any]:
    for cls in (EvilStr, EvilFloat, EvilInt):
        cls.text = evil
    constants = {
        "object": EvilRepr(evil),
        "str-subclass": EvilStr("hello"),
        "float-subclass": EvilFloat(1.5),
        "int-subclass": EvilInt(3),
        "tensor": torch.tensor([1.0, 2.0]),
        "list-of-evil": [EvilStr("a"), EvilRepr(evil)],
        "dict-of-evil": {"k": EvilRepr(evil)},
        "evil-key": {EvilStr("key"): 1},
        "tuple-of-evil": (EvilRepr(evil),),
        "slice-of-evil": slice(EvilInt(1), None, EvilInt(2)),
        "enum": Colour.CLASS,
        "enum-keyword": Keywords["class"],
        "enum-space": Keywords["a b"],
        "complex-inf": complex("inf"),
        "big-int": 10**40,
        "bytes": b"\x00\"'",
        "str-quotes": "a\"b'c\\\n",
        "ellipsis": ...,
        "none": None,
    }
    if numpy is not None:
        constants |= {
            "numpy-float": numpy.float32(1.5),
            "numpy-int": numpy.int64(3),
            "numpy-array": numpy.arange(3),
        }
    return constants


CONSTANT_KINDS = list(hostile_constants("x"))


def same_constant(actual: Any, expected: Any) -> bool:
    if isinstance(expected, (torch.Tensor,)) or type(expected).__module__ == "numpy":
        return actual is expected
    if isinstance(expected, (dict, list, tuple, slice)) or type(expected) in (int, bytes, str):
        return type(actual) is type(expected) and actual == expected
    return actual is expected or (type(actual) is type(expected) and actual == expected)


@pytest.mark.parametrize("kind", CONSTANT_KINDS)
def test_a_constant_with_a_dangerous_repr_is_passed_through_intact(kind, marker):
    evil = payloads(marker)["call"]
    constant = hostile_constants(evil)[kind]
    gm = minifx_module(lambda g: g.output(g.call_function(record, (g.placeholder("x"), constant))))
    seen.clear()
    assert gm(1) == 1
    assert same_constant(seen[0], constant), (seen[0], constant)
    assert_inert(gm.code, evil)
    # Reached through the same object, not rebuilt, where it has no literal.
    if kind in (
        "object",
        "str-subclass",
        "float-subclass",
        "int-subclass",
        "tensor",
        "enum",
        "enum-keyword",
        "enum-space",
    ):
        assert seen[0] is constant


def test_torch_fx_pastes_the_repr_of_an_unknown_constant(marker):
    # minifx differs on purpose: torch.fx writes repr(constant) into its code, so the
    # payload would run on the first call (this test only compiles torch.fx's code).
    evil = payloads(marker)["call"]

    def build(g):
        g.output(g.call_function(record, (g.placeholder("x"), EvilRepr(evil))))

    with pytest.raises(AssertionError, match="the code calls"):
        assert_inert(torch_fx_code(build))
    assert_inert(minifx_module(build).code, evil)


def test_a_placeholder_default_with_a_dangerous_repr_is_the_same_object(marker):
    default = EvilRepr(payloads(marker)["call"])
    gm = minifx_module(lambda g: g.output(g.placeholder("x", default_value=default)))
    assert gm() is default and gm(3) == 3
    assert_inert(gm.code, default.text)


def test_type_annotations_with_hostile_names_are_bound_as_globals(marker):
    evil = payloads(marker)["call"]
    hostile = type("Hostile", (), {})
    hostile.__name__, hostile.__qualname__, hostile.__module__ = "x; import os", evil, evil

    def build(g):
        x = g.placeholder("x", type_expr=hostile)
        y = g.call_function(operator.add, (x, 1))
        y.type = typing.List[hostile]
        g.output(y, type_expr=typing.Optional[hostile])

    gm = minifx_module(build)
    assert gm(1) == 2
    assert_inert(gm.code, evil)


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_inf_and_nan_constants(value):
    def build(g):
        x = g.placeholder("x")
        g.output(
            (
                g.call_function(torch.add, (x, value)),
                g.call_function(record, (x, value)),
                g.call_function(operator.mul, (x, value)),
            )
        )

    gm = minifx_module(build)
    seen.clear()
    added, _, multiplied = gm(torch.tensor([1.0]))
    expected = torch.tensor([1.0]) + value
    torch.testing.assert_close(added, expected, equal_nan=True)
    torch.testing.assert_close(multiplied, torch.tensor([1.0]) * value, equal_nan=True)
    assert math.isnan(seen[0]) if math.isnan(value) else seen[0] == value
    # torch.fx writes the same names (`inf`, `-inf`, `nan`) as globals.
    assert gm.code == torch_fx_code(build)


def test_inf_still_means_inf_when_a_node_or_parameter_is_named_inf():
    def build(g):
        nan = g.placeholder("nan")
        inf = g.call_function(operator.neg, (nan,))
        inf.name = "inf"
        g.output(
            (
                g.call_function(operator.add, (inf, math.inf)),
                g.call_function(operator.add, (nan, -math.inf)),
                g.call_function(record, (inf, math.nan)),
            )
        )

    gm = minifx_module(build)
    seen.clear()
    plus, minus, _ = gm(torch.tensor([1.0]))
    assert plus.tolist() == [math.inf] and minus.tolist() == [-math.inf] and math.isnan(seen[0])


def test_negative_zero_keeps_its_sign():
    gm = minifx_module(lambda g: g.output(g.call_function(record, (g.placeholder("x"), -0.0))))
    seen.clear()
    gm(1)
    assert math.copysign(1.0, seen[0]) == -1.0
