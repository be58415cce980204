"""Property tests (hypothesis) of the Interpreter and the Transformer.

The random graphs are those of `tests/codegen/test_properties.py`: a minifx
graph and a torch.fx twin built by the same calls, over 1-3 placeholders,
arithmetic, `torch.sort` tuples read with getitem, indexing, `cat`, methods
with keywords, and nested containers of nodes and odd constants (nan, inf,
slices, None); some values unused. For each graph:

1. `Interpreter(gm).run(*inputs)` returns what the generated code returns,
   with garbage collection on and off, and what torch.fx's Interpreter returns
   on the twin (its read-only containers made plain).
2. The values dropped after each node are torch.fx's `user_to_last_uses`, plus
   each unused value right after it is computed (difference 3); after `run`,
   `env` holds the output node only, or, with garbage collection off, every node.
3. `Transformer(gm).transform()` prints as the original graph, and as torch.fx's
   Transformer copy of the twin.

Derandomized, so a run is repeatable and takes a few seconds.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.fx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minifx.codegen
from minifx.interpreter import Interpreter, Transformer
from tests.codegen.compare import assert_same
from tests.codegen.test_properties import NAMES, SHADOWING_NAMES, build
from tests.interpreter.support import plain

pytestmark = pytest.mark.ch4

SETTINGS = settings(
    max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def module_of(graph: Any) -> minifx.codegen.GraphModule:
    return minifx.codegen.GraphModule(torch.nn.Module(), graph)


def by_name(drops: dict) -> dict[str, list[str]]:
    return {user.name: [n.name for n in dropped] for user, dropped in drops.items()}


@SETTINGS
@given(st.data())
def test_interpreter_returns_what_the_generated_code_returns(data):
    twin = build(data, NAMES + SHADOWING_NAMES)
    gm = module_of(twin.ours)
    expected = gm(*twin.inputs)
    for gc in (True, False):
        assert_same(
            Interpreter(gm, garbage_collect_values=gc).run(*twin.inputs),
            expected,
            f"garbage_collect_values={gc}",
        )


@SETTINGS
@given(st.data())
def test_interpreter_returns_what_torch_fx_interpreter_returns(data):
    twin = build(data)
    ours = Interpreter(module_of(twin.ours)).run(*twin.inputs)
    theirs = torch.fx.Interpreter(torch.nn.Module(), graph=twin.theirs).run(*twin.inputs)
    assert_same(ours, plain(theirs))


@SETTINGS
@given(st.data())
def test_values_are_dropped_as_torch_fx_drops_them_and_unused_ones_at_once(data):
    twin = build(data)
    ours = Interpreter(module_of(twin.ours))
    theirs = torch.fx.Interpreter(torch.nn.Module(), graph=twin.theirs)
    expected = by_name(theirs.user_to_last_uses)
    for node in twin.ours.nodes:
        if not node.users and node.op != "output":
            expected.setdefault(node.name, []).append(node.name)
    assert by_name(ours.user_to_last_uses) == expected
    ours.run(*twin.inputs)
    assert [n.op for n in ours.env] == ["output"]


@SETTINGS
@given(st.data())
def test_without_garbage_collection_every_value_stays(data):
    twin = build(data)
    interpreter = Interpreter(module_of(twin.ours), garbage_collect_values=False)
    interpreter.run(*twin.inputs)
    assert interpreter.user_to_last_uses == {}
    assert list(interpreter.env) == list(twin.ours.nodes)
    for node, value in twin.values.items():
        assert_same(interpreter.env[node], value, f"env[%{node.name}]")


@SETTINGS
@given(st.data())
def test_transformer_copy_prints_as_the_original_and_as_torch_fx_copy(data):
    twin = build(data)
    new = Transformer(module_of(twin.ours)).transform()
    new.graph.lint()
    assert str(new.graph) == str(twin.ours)
    theirs = torch.fx.Transformer(torch.fx.GraphModule(torch.nn.Module(), twin.theirs)).transform()
    assert str(new.graph) == str(theirs.graph)
    assert new.code == theirs.code
    assert_same(new(*twin.inputs), module_of(twin.ours)(*twin.inputs))
