"""Exercise 4.2: find the first NaN (solution).

A NaN spreads: once one value is NaN, most values computed from it are too,
and the output says nothing about where it started. An Interpreter checks
every value as it is computed, in graph order, so the first node whose value
is not finite is where the trouble started: its inputs were all finite.
"""

import math
from typing import Any

import torch
from torch import nn

from minifx.graph import Node
from minifx.interpreter import Interpreter
from minifx.proxy.ir import format_target


# --8<-- [start:given]
class NonFiniteError(ArithmeticError):
    """A node produced a NaN or an infinity from finite inputs.

    Attributes:
        node: the node's name, as in the printed graph (`"log"`, `"fc"`, ...).
        op: its opcode (`"call_function"`, `"placeholder"`, ...).
        target: its target (`torch.log`, `"fc"`, ...).
        inputs: the names of the nodes it read, all of them finite.
    """

    def __init__(self, node: Node) -> None:
        self.node = node.name
        self.op = node.op
        self.target = node.target
        self.inputs = [n.name for n in node.all_input_nodes]
        read = ", ".join(f"%{name}" for name in self.inputs)
        super().__init__(
            f"%{node.name} ({node.op} {format_target(node.target)}) is the first node whose "
            "value has a NaN or an infinity"
            + (f"; what it read ({read}) was finite" if read else "")
        )


def first_nonfinite(gm: nn.Module, *args: Any) -> str | None:
    """Run `gm` on `args`; return the name of the first node whose value is not
    finite, or None if every value is."""
    try:
        NonFiniteChecker(gm).run(*args)
    except NonFiniteError as error:
        return error.node
    return None


# --8<-- [end:given]


# --8<-- [start:solution]
def is_finite(value: Any) -> bool:
    """Whether `value` holds no NaN and no infinity: a tensor, a float, or a
    tuple, list or dict of them (nested). Anything else counts as finite."""
    if isinstance(value, torch.Tensor):
        return bool(torch.isfinite(value).all())
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (tuple, list)):
        return all(is_finite(item) for item in value)
    if isinstance(value, dict):
        return all(is_finite(item) for item in value.values())
    return True


class NonFiniteChecker(Interpreter):
    """An Interpreter that stops at the first node whose value is not finite."""

    def run_node(self, n: Node) -> Any:
        value = super().run_node(n)
        # Checked before the value reaches env: no later node sees it.
        if not is_finite(value):
            raise NonFiniteError(n)
        return value


# --8<-- [end:solution]
