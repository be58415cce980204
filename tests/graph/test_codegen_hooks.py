"""`minifx.graph.codegen_hooks`: `Graph`'s methods that hand over to chapter 3's code
generator (`set_codegen`, `python_code`, `process_inputs/outputs`,
`on_generate_code`), against torch.fx.

They import stage 3 only when called (the one sanctioned exception to the layering
rule), so these tests are chapter 3's; `CodeGen` itself is tested in
tests/codegen/test_codegen.py.
"""

from __future__ import annotations

import copy
import inspect
import subprocess
import sys

import pytest
import torch
import torch.fx

import minifx
from minifx.codegen import CodeGen, python_code, symbolic_trace
from minifx.graph import Graph
from tests.codegen.support import LIBRARIES, add, list_codegen, returns_a_list, two_sums

pytestmark = pytest.mark.ch3


@pytest.mark.parametrize("lib", LIBRARIES)
def test_process_inputs_and_outputs_turn_a_plain_module_into_the_custom_one(lib):
    # test_custom_codegen: a copy of the graph with the default CodeGen, run on
    # process_inputs(...) and its result put through process_outputs, gives the same.
    trace, graph_module, base, _ = LIBRARIES[lib]
    vals = [torch.randn(3), torch.randn(3)]
    nf = trace(two_sums)
    nf.graph.set_codegen(returns_a_list(base)())
    nf.recompile()
    bare = graph_module({}, copy.deepcopy(nf.graph))
    bare.graph.set_codegen(base())
    bare.recompile()
    assert "def forward(self, a, b):" in bare.code
    out = nf.graph.process_outputs(bare(*nf.graph.process_inputs(vals)))
    assert isinstance(out, list) and all(torch.equal(o, e) for o, e in zip(out, two_sums(*vals)))


def test_deepcopy_and_set_codegen_none():
    gm = symbolic_trace(add)
    custom = list_codegen(CodeGen)()
    gm.graph.set_codegen(custom)
    copied = copy.deepcopy(gm.graph)
    assert type(copied._codegen) is type(custom) and copied._codegen is not custom
    gm.graph.set_codegen(None)  # back to the default
    gm.recompile()
    assert "def forward(self, a, b):" in gm.code
    assert gm.graph.process_inputs(1, 2) == (1, 2) and gm.graph.process_outputs(3) == 3


def test_graph_python_code_is_the_free_function():
    gm = symbolic_trace(add)
    method = gm.graph.python_code("self")
    assert method.src == python_code(gm.graph).src == gm.code
    assert method.src == torch.fx.symbolic_trace(add).graph.python_code("self").src
    verbose = gm.graph.python_code(root_module="self", verbose=True).src
    assert verbose == python_code(gm.graph, verbose=True).src


def test_the_graph_methods_load_codegen_only_when_called():
    code = (
        "import sys, torch, minifx.graph as g\n"
        "graph = g.Graph(); graph.output(graph.placeholder('x'))\n"
        "before = 'minifx.codegen' in sys.modules\n"
        "print(before, graph.process_inputs(1), 'minifx.codegen' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.stdout.split() == ["False", "(1,)", "True"], run.stderr


# -- chapter 3's "Differences from torch.fx", against torch.fx ------------------------------


def test_python_code_has_one_option():
    """`graph.python_code(root_module)` has one option, `verbose`; torch.fx's has seven."""
    ours = inspect.signature(Graph.python_code).parameters
    theirs = inspect.signature(torch.fx.Graph.python_code).parameters
    assert list(ours) == ["self", "root_module", "verbose"]
    assert {
        "verbose",
        "include_stride",
        "include_device",
        "colored",
        "expanded_def",
        "record_func",
        "additional_meta",
    } <= set(theirs)


class SinCos(torch.nn.Module):
    def forward(self, a, b):
        a = torch.sin(a)
        b = torch.cos(b)
        return a + b


def test_on_generate_code_transforms_the_body_and_keeps_the_line_map_as_torch_fx():
    def hello(body):
        return ["print('hello!')\n", *body]

    results = []
    for lib in (torch.fx, minifx):
        tracer = lib.Tracer()
        graph = tracer.trace(SinCos())
        gm = lib.GraphModule(tracer.root, graph)
        before = (dict(gm._lineno_map), gm._prologue_start)
        with gm.graph.on_generate_code(lambda previous: hello):
            gm.recompile()
        after = (dict(gm._lineno_map), gm._prologue_start, gm.code)
        assert gm.graph._codegen._body_transformer is None, "the context manager restores it"
        gm.recompile()
        results.append((before, after, gm.code))
    assert results[0] == results[1]
    assert "    print('hello!')\n    sin = torch.sin(a)" in results[1][1][2]
    assert results[1][0] == ({1: 2, 2: 3, 3: 4, 4: 5, 5: 5}, 4)
