"""Exercise 4.1: FLOP counting.

How much work does a model do? Count it while the model runs: an Interpreter
subclass sees every node with the values of its arguments and its output, so
it can read the sizes it needs off the real tensors. Write `FlopCounter`,
which runs a GraphModule and counts the FLOPs of each matmul, linear and
conv2d node, as `torch.utils.flop_counter.FlopCounterMode` counts them.
Count them yourself, from the sizes of the tensors: a counter that hands the
work to FlopCounterMode (or to its formulas) fails every test.

Read first: chapters/04-interpreter.md#exercise-41-flop-counting
Grade with: `make grade CH=4`
"""

import operator
from typing import Any

import torch
import torch.nn.functional as F  # noqa: F401  (you will need it)
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

    def run_node(self, n: Node) -> Any:
        """Run `n` as the Interpreter does, and record its FLOPs under `n.name`.

        `Interpreter.run_node` fetches the values of the node's arguments
        (`self.fetch_args_kwargs_from_env(n)`) and calls the method named after
        its opcode (`getattr(self, n.op)(n.target, args, kwargs)`). Do the same,
        then set `self.flops_by_node[n.name]` to what `node_flops` says, and
        return the node's value. Every node gets an entry, 0 for most.
        """
        raise NotImplementedError(
            "Exercise 4.1: FlopCounter.run_node is not written yet; "
            "see chapters/04-interpreter.md#exercise-41-flop-counting"
        )

    def node_flops(self, n: Node, args: tuple, kwargs: dict, output: Any) -> int:
        """The FLOPs of node `n`, from its argument values and its output.

        Each counted operation computes one dot product per output element,
        so it costs `2 * output.numel() * K` FLOPs, where K is the length of
        that dot product:

        - a matmul (`call_function` of `MATMUL_FUNCTIONS`, or `call_method` of
          `MATMUL_METHODS`) `a @ b`: K = `a.shape[-1]`, for any batch dims;
        - `F.linear(x, weight, bias)`: K = in_features = `weight.shape[1]`;
        - `F.conv2d(x, weight, ...)`: `conv2d_flops(output, weight)`, given;
        - for both, the weight may come by keyword (`F.linear(x, weight=w)`): then it is
          `kwargs["weight"]`, not `args[1]`;
        - a `call_module` node of an `nn.Linear` or an `nn.Conv2d`: the same
          rules, but the weight is not among the args: it is the submodule's
          (`self.fetch_attr(n.target)`).

        Every other node (placeholders, adds, relus, other submodules, ...)
        counts 0.
        """
        raise NotImplementedError(
            "Exercise 4.1: FlopCounter.node_flops is not written yet; "
            "see chapters/04-interpreter.md#exercise-41-flop-counting"
        )
