"""The protocols a recorder and its lines satisfy (`minifx/proxy/interfaces.py`)."""

from __future__ import annotations

import inspect
import typing

import pytest

from minifx.proxy import Tape, trace_to_tape
from minifx.proxy.interfaces import IRGraph, IRNode

pytestmark = pytest.mark.ch1


def test_every_record_has_what_an_ir_node_promises():
    tape = trace_to_tape(lambda x, n: (x + n).relu())
    for record in tape:
        for attribute in typing.get_type_hints(IRNode, localns={"IRGraph": IRGraph}):
            assert hasattr(record, attribute), (record, attribute)
        assert record.graph is tape


def test_the_tape_creates_nodes_with_the_signature_an_ir_graph_promises():
    promised = inspect.signature(IRGraph.create_node).parameters
    actual = inspect.signature(Tape.create_node).parameters
    assert [(p.name, p.default) for p in actual.values()] == [
        (p.name, p.default) for p in promised.values()
    ]
