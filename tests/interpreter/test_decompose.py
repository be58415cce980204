"""`minifx.interpreter.decompose`: rules written as Python on Proxies, recorded in place of
the calls they match, against the loop of torch.fx's docs ("decompose with
GraphAppendingTracer") run on torch.fx."""

from __future__ import annotations

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

import minifx
from minifx.interpreter import decompose
from tests.interpreter.support import SEED, assert_same_module

pytestmark = pytest.mark.ch4


def relu_decomposition(x, inplace=False):
    return (x > 0) * x


class ReluNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return F.relu(self.lin(x)) + F.relu(x).sum()


def torch_decompose(model: nn.Module, rules: dict) -> torch.fx.GraphModule:
    """The loop of torch.fx's docs ("decompose with GraphAppendingTracer"), run on
    torch.fx, giving the rules the kwargs too (the docs give only `node.args`)."""
    graph = torch.fx.Tracer().trace(model)
    new_graph = torch.fx.Graph()
    env = {}
    tracer = torch.fx.proxy.GraphAppendingTracer(new_graph)
    for node in graph.nodes:
        if node.op == "call_function" and node.target in rules:
            args, kwargs = torch.fx.node.map_arg(
                (node.args, node.kwargs), lambda n: torch.fx.Proxy(env[n.name], tracer)
            )
            env[node.name] = rules[node.target](*args, **kwargs).node
        else:
            env[node.name] = new_graph.node_copy(node, lambda n: env[n.name])
    return torch.fx.GraphModule(model, new_graph)


def test_decompose_is_the_docs_loop_on_torch_fx():
    torch.manual_seed(SEED)
    model = ReluNet()
    ours = decompose(model, {F.relu: relu_decomposition})
    theirs = torch_decompose(model, {F.relu: relu_decomposition})
    assert_same_module(ours, theirs)
    assert not ours.graph.find_nodes(op="call_function", target=F.relu)
    x = torch.randn(3, 4)
    torch.testing.assert_close(ours(x), model(x))
    torch.testing.assert_close(ours(x), theirs(x))


def test_decompose_golden_graph():
    torch.manual_seed(SEED)
    assert (
        str(decompose(ReluNet(), {F.relu: relu_decomposition}).graph)
        == """graph():
    %x : [num_users=3] = placeholder[target=x]
    %lin : [num_users=2] = call_module[target=lin](args = (%x,), kwargs = {})
    %gt : [num_users=1] = call_function[target=operator.gt](args = (%lin, 0), kwargs = {})
    %mul : [num_users=1] = call_function[target=operator.mul](args = (%gt, %lin), kwargs = {})
    %gt_1 : [num_users=1] = call_function[target=operator.gt](args = (%x, 0), kwargs = {})
    %mul_1 : [num_users=1] = call_function[target=operator.mul](args = (%gt_1, %x), kwargs = {})
    %sum_1 : [num_users=1] = call_method[target=sum](args = (%mul_1,), kwargs = {})
    %add : [num_users=1] = call_function[target=operator.add](args = (%mul, %sum_1), kwargs = {})
    return add"""
    )


def test_decompose_uses_the_tracer_class():
    """With a tracer that traces through Linear, the rules see its F.linear too."""

    class ThroughLinear(minifx.graph.Tracer):
        def is_leaf_module(self, m, module_qualified_name):
            return not isinstance(m, nn.Linear) and super().is_leaf_module(m, module_qualified_name)

    def linear_decomposition(x, weight, bias=None):
        return x @ weight.t() + bias

    torch.manual_seed(SEED)
    model = ReluNet()
    new = decompose(model, {F.linear: linear_decomposition}, tracer_class=ThroughLinear)
    assert not new.graph.find_nodes(op="call_module")
    assert [n.target for n in new.graph.find_nodes(op="call_method")] == ["t", "sum"]
    x = torch.randn(3, 4)
    torch.testing.assert_close(new(x), model(x))
