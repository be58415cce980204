"""Memory: the Interpreter drops each value after its last use, as generated code does.

Counted, never timed: a `run_node` override records `len(self.env)` as each
node starts, and weak references tell which computed tensors are still alive.
With garbage collection on, a long chain keeps one value alive at a time; with
it off, `env` keeps every value. minifx drops what torch.fx drops, at the same
nodes (`user_to_last_uses`), and also drops a value nobody uses right after
computing it (difference 3), where torch.fx keeps it until `run` returns.
"""

from __future__ import annotations

import weakref
from typing import Any

import pytest
import torch
import torch.fx

import minifx
from minifx.interpreter import Interpreter
from tests.codegen.inputs import SEED, example
from tests.graph.corpus import CASES, Case
from tests.interpreter.support import INTERPRETABLE, ids, run_args
from tests.models import ResNet18
from tests.oracle import trace_minifx, trace_torch

pytestmark = pytest.mark.ch4

LENGTH = 200


class Counting:
    """A mixin that records, as each node starts, how many values `env` holds and
    how many tensors computed so far are alive, and which node names `env` holds."""

    def start_counting(self) -> None:
        self.sizes: list[int] = []
        self.alive: list[int] = []
        self.held: list[list[str]] = []
        self.refs: list[weakref.ref] = []

    def run_node(self, n: Any) -> Any:
        self.sizes.append(len(self.env))
        self.held.append([node.name for node in self.env])
        self.alive.append(self.count_alive())
        value = super().run_node(n)
        # Placeholders are the caller's tensors; the output's value is its argument's.
        if isinstance(value, torch.Tensor) and n.op not in ("placeholder", "output"):
            self.refs.append(weakref.ref(value))
        return value

    def count_alive(self) -> int:
        return sum(ref() is not None for ref in self.refs)


class MiniCounter(Counting, Interpreter):
    pass


class TorchCounter(Counting, torch.fx.Interpreter):
    pass


def counting(cls: type, gm: Any, gc: bool = True) -> Any:
    interpreter = cls(gm, garbage_collect_values=gc)
    interpreter.start_counting()
    return interpreter


def long_chain(x):
    for _ in range(LENGTH):
        x = x + 1
    return x


def with_unused(x):
    a = x.relu()
    unused = x * 2  # noqa: F841 (computed, never read)
    return a.sigmoid()


def node_names(env: dict) -> list[str]:
    return [n.name for n in env]


# -- a long chain ---------------------------------------------------------------------------


@pytest.mark.task("4.3")
def test_long_chain_keeps_one_value_alive():
    gm = minifx.symbolic_trace(long_chain)
    interpreter = counting(MiniCounter, gm)
    x = torch.zeros(4)
    result = interpreter.run(x)
    torch.testing.assert_close(result, torch.full((4,), float(LENGTH)))
    # As the placeholder starts env is empty; then it holds the previous value only.
    assert interpreter.sizes == [0] + [1] * (LENGTH + 1)
    assert max(interpreter.alive) == 1
    assert len(interpreter.refs) == LENGTH
    assert interpreter.count_alive() == 1, "only the result outlives run()"
    assert node_names(interpreter.env) == ["output"]


@pytest.mark.task("4.3")
def test_long_chain_counts_are_torch_fx_counts():
    ours = counting(MiniCounter, minifx.symbolic_trace(long_chain))
    theirs = counting(TorchCounter, torch.fx.symbolic_trace(long_chain))
    ours.run(torch.zeros(4))
    theirs.run(torch.zeros(4))
    assert ours.sizes == theirs.sizes
    assert ours.alive == theirs.alive


def test_long_chain_without_garbage_collection_keeps_every_value():
    gm = minifx.symbolic_trace(long_chain)
    interpreter = counting(MiniCounter, gm, gc=False)
    interpreter.run(torch.zeros(4))
    assert interpreter.sizes == list(range(LENGTH + 2))
    assert interpreter.count_alive() == LENGTH
    assert list(interpreter.env) == list(gm.graph.nodes)
    for step, n in enumerate(list(gm.graph.nodes)[1:-1], start=1):
        torch.testing.assert_close(interpreter.env[n], torch.full((4,), float(step)))


# -- a model ---------------------------------------------------------------------------------


def test_resnet18_holds_what_torch_fx_holds_and_few_values():
    """ResNet-18 computes no unused value, so minifx holds exactly what torch.fx
    holds, node by node; no node starts with more than two values held (a
    residual block's identity and its branch)."""
    torch.manual_seed(SEED)
    model = ResNet18().eval()
    x = torch.randn(1, 3, 32, 32)
    ours = counting(MiniCounter, minifx.symbolic_trace(model))
    theirs = counting(TorchCounter, torch.fx.symbolic_trace(model))
    with torch.no_grad():
        torch.testing.assert_close(ours.run(x), theirs.run(x))
    assert ours.held == theirs.held
    assert ours.alive == theirs.alive
    assert max(ours.sizes) == 2
    assert len(ours.sizes) == len(ours.graph.nodes) > 60
    assert node_names(ours.env) == ["output"]


def test_resnet18_without_garbage_collection_keeps_every_value():
    torch.manual_seed(SEED)
    gm = minifx.symbolic_trace(ResNet18().eval())
    interpreter = counting(MiniCounter, gm, gc=False)
    with torch.no_grad():
        interpreter.run(torch.randn(1, 3, 32, 32))
    assert interpreter.sizes == list(range(len(gm.graph.nodes)))
    assert list(interpreter.env) == list(gm.graph.nodes)


# -- unused values (difference 3) ---------------------------------------------------------------


@pytest.mark.task("4.3")
def test_unused_value_is_dropped_at_once():
    ours = counting(MiniCounter, minifx.symbolic_trace(with_unused))
    theirs = counting(TorchCounter, torch.fx.symbolic_trace(with_unused))
    x = torch.randn(3)
    torch.testing.assert_close(ours.run(x), theirs.run(x))
    # Nodes: x, relu, mul, sigmoid, output. As %sigmoid starts, %mul is gone in minifx.
    assert ours.held == [[], ["x"], ["x", "relu"], ["relu"], ["sigmoid"]]
    assert theirs.held == [[], ["x"], ["x", "relu"], ["relu", "mul"], ["mul", "sigmoid"]]
    assert node_names(ours.env) == ["output"]
    assert node_names(theirs.env) == ["mul", "output"]
    assert ours.count_alive() == 1 and theirs.count_alive() == 2


def unused_names(graph: Any) -> list[str]:
    return [n.name for n in graph.nodes if not n.users and n.op != "output"]


@pytest.mark.parametrize("c", CASES, ids=ids(CASES))
def test_drop_lists_are_torch_fx_plus_unused_values(c: Case):
    ours_traced, theirs_traced = trace_minifx(c), trace_torch(c)
    ours = Interpreter(ours_traced.tracer.root, graph=ours_traced.graph)
    theirs = torch.fx.Interpreter(theirs_traced.tracer.root, graph=theirs_traced.graph)
    expected = {
        user.name: [n.name for n in dropped] for user, dropped in theirs.user_to_last_uses.items()
    }
    for name in unused_names(ours_traced.graph):
        expected.setdefault(name, []).append(name)
    assert {
        user.name: [n.name for n in dropped] for user, dropped in ours.user_to_last_uses.items()
    } == expected


# NamesCollideWithInputsAndOps reads `.T` of a 1-d parameter, deprecated in torch.
@pytest.mark.filterwarnings("ignore:The use of `x.T`:UserWarning")
@pytest.mark.parametrize("c", INTERPRETABLE, ids=ids(INTERPRETABLE))
def test_after_run_env_holds_only_the_output(c: Case):
    """minifx: the output node alone; torch.fx: the output and every unused value.
    Without garbage collection: every node, in both."""
    ours_traced, theirs_traced = trace_minifx(c), trace_torch(c)
    for gc in (True, False):
        ours = Interpreter(ours_traced.tracer.root, gc, graph=ours_traced.graph)
        theirs = torch.fx.Interpreter(theirs_traced.tracer.root, gc, graph=theirs_traced.graph)
        torch.manual_seed(SEED)
        ours.run(*run_args(c.name, example(c.name)))
        torch.manual_seed(SEED)
        theirs.run(*run_args(c.name, example(c.name)))
        if gc:
            assert node_names(ours.env) == ["output"]
            assert sorted(node_names(theirs.env)) == sorted(
                unused_names(theirs_traced.graph) + ["output"]
            )
        else:
            assert (
                node_names(ours.env)
                == node_names(theirs.env)
                == [n.name for n in ours_traced.graph.nodes]
            )
