"""Exercise 4.2: find the first NaN.

A NaN spreads: once one value is NaN, most values computed from it are too,
and the model's output says nothing about where it started. Write an
Interpreter that checks the value of every node as the graph runs and stops
at the first one that has a NaN or an infinity: that node is where the
trouble started.

Read first: chapters/04-interpreter.md#exercise-42-find-the-first-nan
Grade with: `make grade CH=4`
"""

import math  # noqa: F401  (you may need it)
from typing import Any

import torch  # noqa: F401  (you will need it)
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


def is_finite(value: Any) -> bool:
    """Whether `value` holds no NaN and no infinity.

    A node's value is a tensor (`torch.isfinite(t).all()`), a Python float
    (`math.isfinite`), or a tuple, list or dict of such values, nested to any
    depth: `torch.chunk` returns a tuple of tensors, a submodule may return a
    dict. Look inside them. Anything else (an int, a string, None, a
    `torch.Size`, ...) counts as finite.
    """
    raise NotImplementedError(
        "Exercise 4.2: is_finite is not written yet; "
        "see chapters/04-interpreter.md#exercise-42-find-the-first-nan"
    )


class NonFiniteChecker(Interpreter):
    """An Interpreter that stops at the first node whose value is not finite."""

    def run_node(self, n: Node) -> Any:
        """Run `n` as the Interpreter does; if its value is not finite, raise
        `NonFiniteError(n)`, else return the value.

        Every node is checked, placeholders and `get_attr` nodes too: a NaN
        in an input or in a parameter is reported where it enters the graph.
        """
        raise NotImplementedError(
            "Exercise 4.2: NonFiniteChecker.run_node is not written yet; "
            "see chapters/04-interpreter.md#exercise-42-find-the-first-nan"
        )
