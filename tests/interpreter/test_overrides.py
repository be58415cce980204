"""Subclassing the Interpreter and the Transformer, as the book and torch.fx's docs do.

Every override is written once, as a function of the base class, and built for
both libraries, so the same code runs on minifx and on torch.fx: the graphs,
the generated code, the node metadata and the outputs must agree.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

import minifx
from minifx.interpreter import Interpreter, Transformer
from tests.interpreter.support import assert_same_module, trace_both
from tests.models import ResNet18

pytestmark = pytest.mark.ch4


# -- the docs' sigmoid/neg swap ---------------------------------------------------------------


# The class bodies of torch.fx's docstrings (Interpreter and Transformer), built on each base.
def neg_sigm_swap(base: type) -> type:
    class NegSigmSwap(base):
        def call_function(self, target, args, kwargs):
            if target is torch.sigmoid:
                return torch.neg(*args, **kwargs)
            return super().call_function(target, args, kwargs)

        def call_method(self, target, args, kwargs):
            if target == "neg":
                call_self, *args_tail = args
                return call_self.sigmoid(*args_tail, **kwargs)
            return super().call_method(target, args, kwargs)

    return NegSigmSwap


def fn(x):
    return torch.sigmoid(x).neg()


def test_neg_sigm_swap_interpreter():
    gm, tgm = trace_both(lambda: fn)
    x = torch.randn(3, 4)
    result = neg_sigm_swap(Interpreter)(gm).run(x)
    torch.testing.assert_close(result, torch.neg(x).sigmoid())
    torch.testing.assert_close(result, neg_sigm_swap(torch.fx.Interpreter)(tgm).run(x))
    torch.testing.assert_close(gm(x), fn(x))  # the GraphModule itself is unchanged


@pytest.mark.task("4.4")
def test_neg_sigm_swap_transformer():
    gm, tgm = trace_both(lambda: fn)
    ours = neg_sigm_swap(Transformer)(gm).transform()
    theirs = neg_sigm_swap(torch.fx.Transformer)(tgm).transform()
    assert_same_module(ours, theirs)
    assert [n.target for n in ours.graph.nodes][1:3] == [torch.neg, "sigmoid"]
    x = torch.randn(3, 4)
    torch.testing.assert_close(ours(x), torch.neg(x).sigmoid())
    torch.testing.assert_close(ours(x), theirs(x))


# -- Transformers that replace an op -----------------------------------------------------------


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3, bias=False)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = h.view(h.size(0), -1)
        return F.relu(self.fc2(h)).sigmoid()


def relu_to_gelu(base: type) -> type:
    class ReluToGelu(base):
        def call_function(self, target, args, kwargs):
            if target in (torch.relu, F.relu):
                return F.gelu(args[0])
            return super().call_function(target, args, kwargs)

    return ReluToGelu


def linear_to_functional(base: type) -> type:
    class LinearToFunctional(base):
        """`self.fcN(x)` becomes `F.linear(x, self.fcN.weight, self.fcN.bias)`."""

        def call_module(self, target, args, kwargs):
            submodule = self.fetch_attr(target)
            if not isinstance(submodule, nn.Linear):
                return super().call_module(target, args, kwargs)
            weight = self.get_attr(f"{target}.weight", (), {})
            bias = self.get_attr(f"{target}.bias", (), {}) if submodule.bias is not None else None
            return F.linear(args[0], weight, bias)

    return LinearToFunctional


def view_to_reshape(base: type) -> type:
    class ViewToReshape(base):
        def call_method(self, target, args, kwargs):
            if target == "view":
                return super().call_method("reshape", args, kwargs)
            return super().call_method(target, args, kwargs)

    return ViewToReshape


def reference(net: Net, x: torch.Tensor) -> torch.Tensor:
    """Net's forward written with `reshape` instead of `view`."""
    return F.relu(net.fc2(F.relu(net.fc1(x)).reshape(x.size(0), -1))).sigmoid()


REWRITES = {
    "relu_to_gelu": relu_to_gelu,
    "linear_to_functional": linear_to_functional,
    "view_to_reshape": view_to_reshape,
}


@pytest.mark.parametrize("rewrite", REWRITES)
def test_rewrite_is_torch_fx_rewrite(rewrite: str):
    gm, tgm = trace_both(Net)
    ours = REWRITES[rewrite](Transformer)(gm).transform()
    theirs = REWRITES[rewrite](torch.fx.Transformer)(tgm).transform()
    assert_same_module(ours, theirs)
    x = torch.randn(2, 4)
    torch.testing.assert_close(ours(x), theirs(x))


def test_relu_to_gelu_code():
    gm, _ = trace_both(Net)
    new = relu_to_gelu(Transformer)(gm).transform()
    assert (
        new.code
        == """


def forward(self, x):
    fc1 = self.fc1(x);  x = None
    gelu = torch._C._nn.gelu(fc1);  fc1 = None
    size = gelu.size(0)
    view = gelu.view(size, -1);  gelu = size = None
    fc2 = self.fc2(view);  view = None
    gelu_1 = torch._C._nn.gelu(fc2);  fc2 = None
    sigmoid = gelu_1.sigmoid();  gelu_1 = None
    return sigmoid
    """
    )
    net, x = gm, torch.randn(2, 4)
    expected = F.gelu(net.fc2(F.gelu(net.fc1(x)).view(2, -1))).sigmoid()
    torch.testing.assert_close(new(x), expected)


def test_linear_to_functional_code_and_state():
    gm, _ = trace_both(Net)
    new = linear_to_functional(Transformer)(gm).transform()
    assert (
        new.code
        == """


def forward(self, x):
    fc1_weight = self.fc1.weight
    fc1_bias = self.fc1.bias
    linear = torch._C._nn.linear(x, fc1_weight, fc1_bias);  x = fc1_weight = fc1_bias = None
    relu = torch.relu(linear);  linear = None
    size = relu.size(0)
    view = relu.view(size, -1);  relu = size = None
    fc2_weight = self.fc2.weight
    linear_1 = torch._C._nn.linear(view, fc2_weight, None);  view = fc2_weight = None
    relu_1 = torch.nn.functional.relu(linear_1, inplace = False);  linear_1 = None
    sigmoid = relu_1.sigmoid();  relu_1 = None
    return sigmoid
    """
    )
    assert new.fc1.weight is gm.fc1.weight, "the new module shares the old one's parameters"
    x = torch.randn(2, 4)
    torch.testing.assert_close(new(x), gm(x))


def test_view_to_reshape_runs_like_the_reference():
    gm, _ = trace_both(Net)
    new = view_to_reshape(Transformer)(gm).transform()
    assert [n.target for n in new.graph.find_nodes(op="call_method")] == [
        "size",
        "reshape",
        "sigmoid",
    ]
    x = torch.randn(2, 4)
    torch.testing.assert_close(new(x), reference(gm, x))


# -- run_node overrides: a small ShapeProp ------------------------------------------------------


def shape_recorder(base: type) -> type:
    class ShapeRecorder(base):
        """Stores each tensor value's shape and dtype in its node's meta."""

        def run_node(self, n):
            value = super().run_node(n)
            if isinstance(value, torch.Tensor):
                n.meta["shape"], n.meta["dtype"] = value.shape, value.dtype
            return value

    return ShapeRecorder


def recorded(gm: Any) -> dict[str, tuple]:
    return {n.name: (n.meta.get("shape"), n.meta.get("dtype")) for n in gm.graph.nodes}


def test_shape_recorder_on_resnet18_matches_torch_fx():
    gm, tgm = trace_both(lambda: ResNet18().eval())
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        out = shape_recorder(Interpreter)(gm).run(x)
        torch_out = shape_recorder(torch.fx.Interpreter)(tgm).run(x)
    torch.testing.assert_close(out, torch_out)
    ours = recorded(gm)
    assert ours == recorded(tgm)
    assert ours["x"] == (torch.Size([2, 3, 32, 32]), torch.float32)
    assert ours["conv1"] == (torch.Size([2, 16, 16, 16]), torch.float32)
    assert ours["fc"] == (torch.Size([2, 10]), torch.float32)
    assert ours["output"] == (torch.Size([2, 10]), torch.float32), (
        "output returns the tensor itself"
    )
    assert sum(shape is not None for shape, _ in ours.values()) == len(ours)


# -- Transformer copies of particular modules -------------------------------------------------------


def with_constant(x):
    return x + torch.tensor([1.0, 2.0])


class SharedTwice(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(self.lin(x))


def with_default(x, scale=2.0, shift: int = 1):
    return x * scale + shift


def with_star_args(x, *rest):
    return x + rest[0] * rest[1]


def copies(make: Any) -> tuple[minifx.GraphModule, minifx.GraphModule, torch.fx.GraphModule]:
    """The original, minifx's Transformer copy, and torch.fx's, compared as code."""
    gm, tgm = trace_both(make)
    new, theirs = Transformer(gm).transform(), torch.fx.Transformer(tgm).transform()
    assert_same_module(new, theirs)
    return gm, new, theirs


@pytest.mark.task("4.4")
def test_transformer_copy_with_a_tensor_constant():
    gm, new, theirs = copies(lambda: with_constant)
    assert new.code.splitlines()[4] == "    _tensor_constant0 = self._tensor_constant0"
    assert new._tensor_constant0 is gm._tensor_constant0
    assert theirs._tensor_constant0 is not None
    x = torch.randn(2)
    torch.testing.assert_close(new(x), with_constant(x))


@pytest.mark.task("4.4")
def test_transformer_copy_with_a_submodule_used_twice():
    gm, new, _ = copies(SharedTwice)
    assert [n.name for n in new.graph.find_nodes(op="call_module")] == ["lin", "lin_1"]
    assert [n.target for n in new.graph.find_nodes(op="call_module")] == ["lin", "lin"]
    assert [name for name, _ in new.named_children()] == ["lin"]
    assert new.lin is gm.lin
    x = torch.randn(2, 3)
    torch.testing.assert_close(new(x), gm.lin(gm.lin(x)))


@pytest.mark.task("4.4")
def test_transformer_copy_keeps_placeholder_defaults():
    _, new, _ = copies(lambda: with_default)
    assert "def forward(self, x, scale = 2.0, shift = 1):" in new.code
    x = torch.randn(2)
    torch.testing.assert_close(new(x), with_default(x))
    torch.testing.assert_close(new(x, 3.0, 2), with_default(x, 3.0, 2))


def test_transformer_copy_keeps_star_args():
    _, new, _ = copies(lambda: with_star_args)
    assert "def forward(self, x, *rest):" in new.code
    x, a, b = torch.randn(3), torch.randn(3), torch.randn(3)
    torch.testing.assert_close(new(x, a, b), with_star_args(x, a, b))


def test_star_args_placeholder_gets_a_tuple():
    """Difference 1: minifx gives `*rest` a tuple, as Python does; torch.fx a list."""
    gm, tgm = trace_both(lambda: with_star_args)
    x, a, b = torch.randn(3), torch.randn(3), torch.randn(3)
    ours = Interpreter(gm, garbage_collect_values=False)
    theirs = torch.fx.Interpreter(tgm, garbage_collect_values=False)
    torch.testing.assert_close(ours.run(x, a, b), with_star_args(x, a, b))
    torch.testing.assert_close(theirs.run(x, a, b), with_star_args(x, a, b))
    rest = {n.name: v for n, v in ours.env.items()}["_rest"]
    torch_rest = {n.name: v for n, v in theirs.env.items()}["_rest"]
    assert type(rest) is tuple and type(torch_rest) is list
    assert rest[0] is a and rest[1] is b and torch_rest == [a, b]
