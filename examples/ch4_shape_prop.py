"""Chapter 4: shape propagation, written twice.

`shape_prop_by_hand` is the Interpreter pattern spelled out: a loop over
`graph.nodes` that keeps every value in a dict and does what each opcode says.
`ShapeProp` is the same pass on top of `minifx.Interpreter`, which owns that
loop, so the pass is only the lines that are about shapes.

Both store, for every node whose value is a tensor, its shape and dtype in
`node.meta["shape"]` and `node.meta["dtype"]`.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch import nn

from minifx.codegen import GraphModule
from minifx.graph import Node, map_arg
from minifx.interpreter import Interpreter


# --8<-- [start:model]
class TinyCNN(nn.Module):
    """A small classifier whose graph uses all six opcodes."""

    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.head = nn.Linear(8, classes)
        self.temperature = nn.Parameter(torch.ones(1))

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))  # call_module, call_function
        y = y.mean(dim=(2, 3))  # call_method
        return self.head(y) / self.temperature  # get_attr


# --8<-- [end:model]


# --8<-- [start:record]
def record_shape(node: Node, value: Any) -> None:
    """Store the shape and dtype of `value` in `node.meta`, if it is a tensor."""
    if isinstance(value, torch.Tensor):
        node.meta["shape"] = value.shape
        node.meta["dtype"] = value.dtype


# --8<-- [end:record]


# --8<-- [start:by_hand]
def shape_prop_by_hand(gm: GraphModule, *inputs: Any) -> Any:
    """Run `gm.graph` on `inputs`, one node at a time, recording the shape of
    every tensor it computes; return what the graph returns."""
    modules = dict(gm.named_modules())
    env: dict[Node, Any] = {}  # node -> the value it computed
    next_input = iter(inputs)
    for node in gm.graph.nodes:
        # The node's arguments, with each Node replaced by its value.
        args, kwargs = map_arg((node.args, node.kwargs), lambda n: env[n])
        if node.op == "placeholder":
            value = next(next_input)
        elif node.op == "get_attr":
            value = functools.reduce(getattr, node.target.split("."), gm)
        elif node.op == "call_function":
            value = node.target(*args, **kwargs)
        elif node.op == "call_method":
            receiver, *rest = args
            value = getattr(receiver, node.target)(*rest, **kwargs)
        elif node.op == "call_module":
            value = modules[node.target](*args, **kwargs)
        else:  # "output": what the graph returns
            value = args[0]
        record_shape(node, value)  # the only line about shapes
        env[node] = value
    return value  # the output node is the last one


# --8<-- [end:by_hand]


# --8<-- [start:interpreter]
class ShapeProp(Interpreter):
    """Shape propagation as an Interpreter: the loop, the environment and the
    six opcodes are inherited; only `run_node` is extended."""

    def run_node(self, n: Node) -> Any:
        value = super().run_node(n)
        record_shape(n, value)
        return value

    def propagate(self, *inputs: Any) -> Any:
        """Run the graph on `inputs` and return its output (torch.fx's name)."""
        return self.run(*inputs)


# --8<-- [end:interpreter]
