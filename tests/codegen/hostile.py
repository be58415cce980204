"""What the tests of hostile input share (test_safety.py, test_syntax.py): payloads that
would run code if pasted into source, a check that generated source cannot run them,
and graphs built by hand for each library. The `marker` fixture is in conftest.py."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, Callable

import torch
import torch.fx

from minifx.codegen import GraphModule
from minifx.graph import Graph


def payloads(marker: Path) -> dict[str, str]:
    """Strings that run code if pasted into source, each breaking out in its own way."""
    return {
        "call": f"getattr(__import__('os'),'system')('touch {marker}')",
        "double-quote": f'a"),open("{marker}","w"),getattr(self,"a',
        "single-quote": f"a'),open('{marker}','w'),getattr(self,'a",
        "backslash-quote": f'a\\"),open("{marker}","w"),("',
        "newline-statement": f'a")\n    open("{marker}","w")\n    ("',
    }


DANGEROUS_CALLS = {"__import__", "open", "exec", "eval", "system", "compile", "breakpoint"}


def assert_inert(code: str, *payload_texts: str) -> None:
    """The source parses, calls nothing dangerous, and holds the payloads only inside
    string literals (where they are data, such as an attribute name for getattr)."""
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            function = node.func
            name = (
                function.id
                if isinstance(function, ast.Name)
                else function.attr
                if isinstance(function, ast.Attribute)
                else None
            )
            assert name not in DANGEROUS_CALLS, f"the code calls {name}:\n{code}"
        assert not isinstance(node, (ast.Import, ast.ImportFrom)), f"an import:\n{code}"
    lines = code.splitlines(keepends=True)
    for node in ast.walk(tree):  # blank out every string literal
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            assert node.lineno == node.end_lineno, "a string literal spans lines"
            line = lines[node.lineno - 1]
            lines[node.lineno - 1] = (
                line[: node.col_offset]
                + " " * (node.end_col_offset - node.col_offset)
                + line[node.end_col_offset :]
            )
    outside_strings = "".join(lines)
    # Only code-like texts are checked: a plain target such as `class` or `0` may
    # well appear in a variable name (`class_1`), and that is harmless.
    for text in [t for t in payload_texts if "(" in t or ";" in t]:
        assert text not in outside_strings, f"{text!r} is code, not a string:\n{code}"


def minifx_module(build: Callable[[Graph], Any], root: Any = None) -> GraphModule:
    graph = Graph()
    build(graph)
    return GraphModule(torch.nn.Module() if root is None else root, graph)


def torch_fx_code(build: Callable[[Any], Any], root: Any = None) -> str:
    """torch.fx's code for the same graph (compiled, never run), or the exception's type name."""
    graph = torch.fx.Graph()
    build(graph)
    try:
        return torch.fx.GraphModule(torch.nn.Module() if root is None else root, graph).code
    except SyntaxError:
        return "SyntaxError"


def assigned_names(code: str) -> list[str]:
    """Every variable the forward assigns (the node variables)."""
    tree = ast.parse(code)
    return [
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    ]


seen: list = []


def record(x, constant):
    """Returns x and keeps the constant it was given, to check it arrived intact."""
    seen.append(constant)
    return x


class EvilStr(str):
    text = ""

    def __repr__(self):
        return self.text
