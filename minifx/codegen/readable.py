"""`GraphModule.print_readable`: the generated code, written to be read.

`python_code(graph, verbose=True)` writes the same lines as the code that
runs, with two additions for a reader: a comment before each group of nodes
saying where they were traced from (the last frame of their stack trace),
and each tensor's dtype and shape as its annotation (`relu: "f32[2, 3]"`)
where `node.meta` holds them. `print_readable` shows that code as a class,
followed by the classes of the GraphModules nested in it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from ..graph.node import Node
from .syntax import stack_summary

if TYPE_CHECKING:
    from .graph_module import GraphModule
    from .python_code import _SourceWriter


class ReadableMixin(torch.nn.Module):
    """`GraphModule.print_readable` and `str(gm)`."""

    def print_readable(self, print_output: bool = True) -> str:
        """The code of this module and of its GraphModule children, as a class.

        Each group of nodes is preceded by a comment saying where it came from
        (its stack trace, when the tracer recorded one).
        """
        text = readable_text(self, self._get_name())
        if print_output:
            print(text)
        return text

    def __str__(self) -> str:
        return "\n".join(
            [
                super().__str__(),
                self._code,
                "# To see more debug info, please use `graph_module.print_readable()`",
            ]
        )


def verbose_comment(writer: _SourceWriter, node: Node) -> None:
    """Add `# File: model.py:12 in forward, code: ...` before `node`'s line when it
    came from elsewhere than the node before it."""
    if node.op in ("placeholder", "output"):
        return
    summary = stack_summary(node.stack_trace) or "No stacktrace found for following nodes"
    if summary != writer.last_comment:
        writer.last_comment = summary
        # A blank line first, as torch.fx writes it; `assemble` drops the blank lines the
        # body starts with, so the first comment gets one only if a transformer wrote before it.
        writer.body.extend(["", f"# {summary}"])


def readable_text(gm: GraphModule, name: str) -> str:
    """`print_readable`'s text: a class with the verbose forward, then nested GraphModules."""
    from .graph_module import GraphModule  # graph_module.py imports this module

    code = gm.graph.python_code("self", verbose=True).src.strip("\n").rstrip()
    lines = [f"class {name}(torch.nn.Module):", *code.split("\n")]
    for child_name, child in gm.named_children():
        if isinstance(child, GraphModule):
            lines += ["", *readable_text(child, child_name).rstrip("\n").split("\n")]
    indented = [f"    {line}" if line.strip() else "" for line in lines[1:]]
    return "\n".join([lines[0], *indented]) + "\n"
