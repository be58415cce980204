"""`minifx.graph.placeholders`: `PH` and its subclasses with metadata, against torch.fx.

A `PHWithMeta` (or any `PHBase` subclass) in `concrete_args` puts its plain data
attributes on the placeholder it stands for; both tracers must tag the same nodes.
"""

from __future__ import annotations

import pytest
import torch.fx._symbolic_trace as torch_fx_trace
from torch import nn

import minifx
import minifx.graph
from tests.graph.support import TRACERS

pytestmark = pytest.mark.ch2


def add_two(a, b):
    return a + b


def same_keys(d):
    return d["f1"] == d["f2"]


def placeholder_keys(library, fn, concrete_args) -> list:
    ph_with_meta = {"minifx": minifx.graph.PHWithMeta, "torch.fx": torch_fx_trace.PHWithMeta}
    args = concrete_args(ph_with_meta[library])
    graph = TRACERS[library]().trace(fn, concrete_args=args)
    return [
        (node.name, getattr(node, "ph_key", None))
        for node in graph.nodes
        if node.op == "placeholder"
    ]


@pytest.mark.parametrize(
    ("fn", "concrete_args", "expected"),
    [
        (
            add_two,
            lambda PHWithMeta: {"a": PHWithMeta(ph_key="a"), "b": PHWithMeta(ph_key="b")},
            [("a_1", "a"), ("b_1", "b")],
        ),
        (
            same_keys,
            lambda PHWithMeta: {"d": {"f1": PHWithMeta(ph_key="f1"), "f2": PHWithMeta("f2")}},
            [("d_1", "f1"), ("d_2", "f2")],
        ),
    ],
)
def test_a_ph_with_meta_puts_its_key_on_its_placeholder(fn, concrete_args, expected):
    assert placeholder_keys("minifx", fn, concrete_args) == expected
    assert placeholder_keys("torch.fx", fn, concrete_args) == expected


def tagged_placeholders(library) -> list:
    base = {"minifx": minifx.graph.PHBase, "torch.fx": torch_fx_trace.PHBase}[library]

    class PHWithTag(base):
        def __init__(self, tag):
            super().__init__()
            self.tag, self.colour = tag, "red"

        def method(self):  # not data: not copied
            return 1

    class Tagging(TRACERS[library]):
        def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
            node = super().create_node(kind, target, args, kwargs, name, type_expr)
            node.tag = "foo"
            return node

    graph = Tagging().trace(add_two, concrete_args={"a": PHWithTag("bar"), "b": PHWithTag("bar")})
    return [(n.tag, getattr(n, "colour", None), hasattr(n, "method")) for n in graph.nodes]


def test_ph_metadata_never_overwrites_what_the_node_has():
    tags = tagged_placeholders("minifx")
    assert tags == tagged_placeholders("torch.fx")
    assert tags == [("foo", "red", False)] * 2 + [("foo", None, False)] * 2  # a_1, b_1, add, output


class StarInputs(nn.Module):
    def forward(self, *inputs):
        return inputs[0] + inputs[1]


def test_ph_metadata_reaches_the_placeholders_of_a_star_args_forward():
    keys = {}
    for library, ph_with_meta in (
        ("minifx", minifx.graph.PHWithMeta),
        ("torch.fx", torch_fx_trace.PHWithMeta),
    ):
        graph = TRACERS[library]().trace(
            StarInputs(), (ph_with_meta("first"), ph_with_meta("second"))
        )
        keys[library] = [(n.name, n.ph_key) for n in graph.nodes if n.op == "placeholder"]
    assert keys["minifx"] == keys["torch.fx"] == [("input_0", "first"), ("input_1", "second")]


def test_ph_names_are_exported_where_torch_fx_has_them():
    assert minifx.PH is minifx.graph.PH and isinstance(minifx.PH, minifx.graph.PHBase)
    assert repr(minifx.graph.PHWithMeta("k")) == repr(torch_fx_trace.PHWithMeta("k")) == "PH"
    assert minifx.graph.PHWithMeta().ph_key is None
