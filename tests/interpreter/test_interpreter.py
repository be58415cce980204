"""The Interpreter's parts, one at a time, differential against torch.fx's Interpreter.

The build track's tasks 4.1 and 4.2 are graded here: fetching values (`fetch_attr`,
`fetch_args_kwargs_from_env`) and the six opcode methods, each called directly, so that
each task is checked without `run` (task 4.3). The whole Interpreter is checked on the
corpus in `test_differential.py`.
"""

from __future__ import annotations

import operator

import pytest
import torch
import torch.fx

import minifx
from minifx.interpreter import Interpreter

pytestmark = pytest.mark.ch4


class Net(torch.nn.Module):
    """A submodule on a dotted path, a parameter and a buffer."""

    def __init__(self):
        super().__init__()
        self.layers = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU())
        self.scale = torch.nn.Parameter(torch.randn(3))
        self.register_buffer("shift", torch.randn(3))

    def forward(self, x, y=2):
        h = self.layers(x) * self.scale + self.shift
        return torch.cat([h, x], dim=0).view(-1, 3), torch.add(h, y, alpha=2)


def both(build):
    """`build(interpreter)` with minifx's, then torch.fx's; both results."""
    model = Net()
    ours = build(Interpreter(minifx.symbolic_trace(model)))
    theirs = build(torch.fx.Interpreter(torch.fx.symbolic_trace(model)))
    return ours, theirs


# -- task 4.1: fetching values ----------------------------------------------------


@pytest.mark.task("4.1")
@pytest.mark.parametrize("target", ["scale", "shift", "layers", "layers.0", "layers.0.weight"])
def test_fetch_attr_follows_a_dotted_path_to_the_module_s_own_object(target):
    ours, theirs = both(
        lambda interpreter: interpreter.fetch_attr(target) is _at(interpreter, target)
    )
    assert ours is theirs is True


def _at(interpreter, target: str):
    """The object at `target`, found without `fetch_attr`."""
    module = interpreter.module
    for atom in target.split("."):
        module = getattr(module, atom)
    return module


@pytest.mark.task("4.1")
def test_fetch_attr_of_a_missing_path_names_the_missing_attribute():
    interpreter = Interpreter(minifx.symbolic_trace(Net()))
    with pytest.raises(
        RuntimeError,
        match="the graph reads 'layers.7.weight', but the module has no attribute 'layers.7'",
    ):
        interpreter.fetch_attr("layers.7.weight")


@pytest.mark.task("4.1")
def test_fetch_args_kwargs_from_env_puts_each_node_s_value_in_its_place():
    def fetch(interpreter):
        nodes = {node.name: node for node in interpreter.graph.nodes}
        # Values that are not tensors, so that the containers compare plainly.
        interpreter.env = {node: f"<{name}>" for name, node in nodes.items()}
        return [
            interpreter.fetch_args_kwargs_from_env(nodes[name])
            for name in ("layers_0", "mul", "cat", "view", "add_1", "output")
        ]

    ours, theirs = both(fetch)
    assert ours == theirs
    assert ours[2] == ((["<add>", "<x>"],), {"dim": 0})
    assert ours[4] == (("<add>", "<y>"), {"alpha": 2})
    assert type(ours[2][0][0]) is list  # plain lists, where torch.fx's are immutable


@pytest.mark.task("4.1")
def test_fetch_args_kwargs_from_env_refuses_a_value_not_computed_yet():
    interpreter = Interpreter(minifx.symbolic_trace(Net()))
    mul = next(n for n in interpreter.graph.nodes if n.name == "mul")
    interpreter.env = {}
    with pytest.raises(RuntimeError, match="%mul uses %layers_1, which has no value"):
        interpreter.fetch_args_kwargs_from_env(mul)


# -- task 4.2: one method per opcode ----------------------------------------------


@pytest.mark.task("4.2")
def test_each_opcode_method_computes_what_torch_fx_s_does():
    x = torch.randn(2, 3)

    def call_each(interpreter):
        interpreter.args_iter = iter([x])
        return [
            interpreter.placeholder("x", (), {}),
            interpreter.placeholder("y", (2,), {}),  # no argument left: the default
            interpreter.get_attr("layers.0.bias", (), {}),
            interpreter.call_module("layers.0", (x,), {}),
            interpreter.call_function(torch.add, (x, 1), {"alpha": 3}),
            interpreter.call_function(operator.getitem, ((x, 5), 1), {}),
            interpreter.call_method("view", (x, -1), {}),
            interpreter.call_method("sum", (x,), {"dim": 0}),
            interpreter.output("output", ((x, 7),), {}),
        ]

    ours, theirs = both(call_each)
    assert ours[0] is x and ours[1] == 2 and ours[5] == 5 and ours[-1] == (x, 7)
    for our, their in zip(ours, theirs):
        if isinstance(our, torch.Tensor):
            torch.testing.assert_close(our, their)
        else:
            assert our == their


@pytest.mark.task("4.2")
def test_a_star_args_placeholder_takes_the_remaining_arguments():
    interpreter = Interpreter(minifx.symbolic_trace(Net()))
    interpreter.args_iter = iter([1, 2, 3])
    assert interpreter.placeholder("a", (), {}) == 1
    assert interpreter.placeholder("*rest", (), {}) == (2, 3)
    assert interpreter.placeholder("**options", (), {}) == {}


# -- task 4.3: run and run_node -----------------------------------------------------


@pytest.mark.task("4.3")
@pytest.mark.parametrize("garbage_collect_values", [True, False])
def test_run_returns_what_torch_fx_s_run_and_the_module_return(garbage_collect_values):
    model, x = Net(), torch.randn(2, 3)
    gm = minifx.symbolic_trace(model)
    interpreter = Interpreter(gm, garbage_collect_values=garbage_collect_values)
    ours = interpreter.run(x, 5)
    theirs = torch.fx.Interpreter(torch.fx.symbolic_trace(model), garbage_collect_values).run(x, 5)
    for our, their, eager in zip(ours, theirs, model(x, 5)):
        torch.testing.assert_close(our, their)
        torch.testing.assert_close(our, eager)
    kept = [node.name for node in interpreter.env]
    assert kept == (["output"] if garbage_collect_values else [n.name for n in gm.graph.nodes])
    # The default of `y` when only `x` is given.
    torch.testing.assert_close(interpreter.run(x)[1], model(x)[1])


@pytest.mark.task("4.3")
def test_run_node_calls_the_method_named_after_the_opcode_with_the_values():
    seen = []

    class Recording(Interpreter):
        def call_function(self, target, args, kwargs):
            seen.append((getattr(target, "__name__", target), len(args), sorted(kwargs)))
            return super().call_function(target, args, kwargs)

    Recording(minifx.symbolic_trace(Net())).run(torch.randn(2, 3))
    assert seen == [("mul", 2, []), ("add", 2, []), ("cat", 1, ["dim"]), ("add", 2, ["alpha"])]
