"""`minifx.codegen.readable`: `print_readable`, the generated code annotated for a reader.

More cases, byte for byte against torch.fx, are in test_source.py (stack
traces) and test_graph_module.py (shapes from `meta`, nested GraphModules).
"""

from __future__ import annotations

import pytest
import torch
import torch.fx

import minifx
import minifx.codegen
from minifx.codegen.readable import readable_text

pytestmark = pytest.mark.ch3


class Inner(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) + 1


class Outer(torch.nn.Module):
    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x) * 2


def nested(library) -> torch.nn.Module:
    """An Outer GraphModule whose `inner` is a GraphModule too (traced as a leaf first)."""
    gm = library.symbolic_trace(Outer(torch.nn.ReLU()))
    gm.inner = library.symbolic_trace(Inner())
    return gm


def test_print_readable_of_a_nested_graph_module_is_torch_fx_text() -> None:
    ours = nested(minifx.codegen).print_readable(print_output=False)
    theirs = nested(torch.fx).print_readable(print_output=False)
    assert ours == theirs
    assert ours.startswith("class Outer(torch.nn.Module):")
    assert "    class inner(torch.nn.Module):" in ours


def _says_hello_first(library) -> torch.nn.Module:
    gm = library.symbolic_trace(Inner())
    gm.graph.on_generate_code(lambda _: lambda body: ["print('hello!')\n", *body])
    gm.recompile()
    return gm


def test_a_body_transformer_s_first_line_comes_before_a_blank_line_as_in_torch_fx() -> None:
    """The first comment's blank line is dropped only where the body starts (test_fx's
    test_lineno_map adds a line before it, as here)."""
    ours = _says_hello_first(minifx.codegen).print_readable(print_output=False)
    theirs = _says_hello_first(torch.fx).print_readable(print_output=False)
    assert ours == theirs
    assert "print('hello!')\n\n        # No stacktrace found" in ours


def test_readable_text_is_print_readable_without_printing(capsys) -> None:
    gm = nested(minifx.codegen)
    assert readable_text(gm, "Outer") == gm.print_readable(print_output=False)
    assert capsys.readouterr().out == ""


def test_a_comment_starts_each_group_of_nodes_from_one_place() -> None:
    graph = minifx.codegen.symbolic_trace(Inner()).graph
    add = next(n for n in graph.nodes if n.name == "add")
    add.stack_trace = '  File "model.py", line 7, in forward\n    return torch.relu(x) + 1\n'
    code = minifx.codegen.python_code(graph, verbose=True).src
    comments = [line.strip() for line in code.split("\n") if line.strip().startswith("#")]
    assert comments == [
        "# No stacktrace found for following nodes",
        "# File: model.py:7 in forward, code: return torch.relu(x) + 1",
    ]


def test_every_dtype_is_abbreviated_as_torch_fx_abbreviates_it() -> None:
    from torch.utils._dtype_abbrs import dtype_abbrs

    from minifx.codegen.syntax import DTYPE_ABBREVIATIONS

    assert DTYPE_ABBREVIATIONS == dtype_abbrs


# What print_readable reads a placeholder's annotation from: (meta key, the value's maker).
ANNOTATED = {
    "a float8 value": ("val", lambda: torch.zeros(2, dtype=torch.float8_e5m2)),
    "an example value": ("example_value", lambda: torch.zeros(2)),
    "a Parameter": ("val", lambda: torch.nn.Parameter(torch.zeros(2))),
    "a sparse CSR tensor (not annotated)": ("val", lambda: torch.eye(2).to_sparse_csr()),
}


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
@pytest.mark.parametrize("case", ANNOTATED)
def test_an_annotation_from_node_meta_is_torch_fx_s(case) -> None:
    key, make = ANNOTATED[case]
    value = make()

    def readable(library) -> str:
        graph = library.Graph()
        x = graph.placeholder("x")
        x.meta[key] = value
        graph.output(x)
        return library.GraphModule(torch.nn.Module(), graph).print_readable(print_output=False)

    assert readable(minifx) == readable(torch.fx)
