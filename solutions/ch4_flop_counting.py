"""Exercise 4.1: FLOP counting (solution).

An Interpreter sees every value the graph computes, so a FLOP count needs no
shape rules of its own: run the node, then read the sizes off its inputs and
its output. Every counted operation is a batch of dot products, one per
output element, so its FLOPs are `2 * output.numel() * K`, where K is the
length of each dot product.
"""

import operator
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from minifx.graph import Node
from minifx.interpreter import Interpreter

# --8<-- [start:given]
# The operations counted, as the graph records them. `x @ w` is operator.matmul;
# `x.mm(w)` and `x.matmul(w)` are call_method nodes, whose target is a string.
MATMUL_FUNCTIONS = (torch.mm, torch.bmm, torch.matmul, operator.matmul)
MATMUL_METHODS = ("mm", "bmm", "matmul")


def conv2d_flops(output: torch.Tensor, weight: torch.Tensor) -> int:
    """The FLOPs of a 2-D convolution that produced `output` with filters `weight`.

    Each output element is one filter, `weight[c_out]`, dotted with one window
    of the input: `weight[0].numel()` (in_channels / groups × kh × kw)
    multiply-adds, 2 FLOPs each. Stride, padding and dilation change how many
    output elements there are, not what one costs, and the bias add is not
    counted: the rules of `torch.utils.flop_counter.FlopCounterMode`.
    """
    return 2 * output.numel() * weight[0].numel()


def count_flops(gm: nn.Module, *args: Any) -> int:
    """Run `gm` on `args` and return the FLOPs of its matmuls, linears and convs."""
    counter = FlopCounter(gm)
    counter.run(*args)
    return counter.total_flops


class FlopCounter(Interpreter):
    """An Interpreter that counts the FLOPs of each node while it runs the graph.

    Counted, as `FlopCounterMode` counts them (2 FLOPs per multiply-add, bias
    adds not counted): `torch.mm`, `torch.bmm`, `torch.matmul` and `@`
    (functions or methods), `F.linear` and `nn.Linear`, `F.conv2d` and
    `nn.Conv2d`. Every other node counts 0. (A matrix-vector product, `a @ v`
    with a 1-D `v`, is one exception: FlopCounterMode has no rule for
    `aten.mv` and `aten.dot` and counts 0 for it. The grader uses none.)

    Attributes:
        flops_by_node: node name -> its FLOPs, for every node that has run.
    """

    def __init__(self, module: nn.Module, garbage_collect_values: bool = True) -> None:
        super().__init__(module, garbage_collect_values)
        self.flops_by_node: dict[str, int] = {}

    @property
    def total_flops(self) -> int:
        """The FLOPs of the whole graph: the sum over its nodes."""
        return sum(self.flops_by_node.values())

    # --8<-- [end:given]

    # --8<-- [start:solution]
    def run_node(self, n: Node) -> Any:
        """Run `n` as the Interpreter does, and record its FLOPs under `n.name`."""
        # Interpreter.run_node, unrolled: the counter needs the argument values.
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        output = getattr(self, n.op)(n.target, args, kwargs)
        self.flops_by_node[n.name] = self.node_flops(n, args, kwargs, output)
        return output

    def node_flops(self, n: Node, args: tuple, kwargs: dict, output: Any) -> int:
        """The FLOPs of node `n`, from its argument values and its output."""
        if n.op == "call_module":
            return module_flops(self.fetch_attr(n.target), output)
        function = n.op == "call_function"
        if (function and n.target in MATMUL_FUNCTIONS) or (
            n.op == "call_method" and n.target in MATMUL_METHODS
        ):
            # a @ b: one dot product of length a.shape[-1] per output element,
            # whatever the batch dimensions and their broadcasting.
            return 2 * output.numel() * args[0].shape[-1]
        if function and n.target is F.linear:
            return linear_flops(_weight(args, kwargs), output)
        if function and n.target is F.conv2d:
            return conv2d_flops(output, _weight(args, kwargs))
        return 0


def linear_flops(weight: torch.Tensor, output: torch.Tensor) -> int:
    """`x @ weight.T`: a dot product of length in_features per output element."""
    return 2 * output.numel() * weight.shape[1]


def module_flops(module: nn.Module, output: Any) -> int:
    """The FLOPs of calling `module`: its weight is a parameter, not an argument."""
    if isinstance(module, nn.Linear):
        return linear_flops(module.weight, output)
    if isinstance(module, nn.Conv2d):
        return conv2d_flops(output, module.weight)
    return 0


def _weight(args: tuple, kwargs: dict) -> torch.Tensor:
    """The weight of `F.linear(input, weight, ...)` or `F.conv2d(input, weight, ...)`."""
    return args[1] if len(args) > 1 else kwargs["weight"]


# --8<-- [end:solution]
