"""`CodeGen`, `Graph.set_codegen`, `process_inputs/outputs` and `Graph.python_code`, against torch.fx.

A graph's CodeGen writes the `def` line and the `return` of its code, and
maps a caller's inputs and outputs to the graph's. PyTorch's test_fx checks
this with a CodeGen whose `forward` takes one list (test_custom_codegen), and
with `set_codegen(CodeGen())` on a graph traced with structured
`concrete_args` (test_pytree). Both run here on both libraries, and the
generated code must be the same text.
"""

from __future__ import annotations

import copy
import inspect
import subprocess
import sys

import pytest
import torch
import torch.fx
from torch.utils import _pytree as pytree

import minifx
import minifx.codegen
from minifx.codegen import CodeGen, GraphModule, python_code, symbolic_trace
from minifx.codegen.codegen import codegen_of
from minifx.graph import PH, Graph

pytestmark = pytest.mark.ch3


def list_codegen(base: type) -> type:
    """test_fx's ListCodeGen, on `base` (torch.fx's or minifx's CodeGen): `forward(self, args_list)`."""

    class ListCodeGen(base):
        def gen_fn_def(self, free_vars, maybe_return_annotation):
            return (
                f"\ndef forward(self, args_list: List[torch.Tensor]){maybe_return_annotation}:\n"
                f"    {', '.join(free_vars)} = args_list"
            )

        def additional_globals(self):
            return [("List", list)]

        def process_inputs(self, *inputs):
            assert len(inputs) == 1
            return inputs[0]

    return ListCodeGen


def returns_a_list(base: type) -> type:
    """ListCodeGen that also returns a list (test_interpreter_with_codegen's)."""

    class ListInListOut(list_codegen(base)):
        def generate_output(self, output_args):
            return f"return list({repr(output_args)})"

        def process_outputs(self, outputs):
            return list(outputs)

    return ListInListOut


LIBRARIES = {
    "torch.fx": (torch.fx.symbolic_trace, torch.fx.GraphModule, torch.fx.CodeGen, torch.fx.PH),
    "minifx": (symbolic_trace, GraphModule, CodeGen, PH),
}


def add(a, b):
    return a + b


def two_sums(a, b):
    a = a + b
    b = a + b
    return a, b


def test_codegen_is_exported_like_torch_fx():
    assert minifx.CodeGen is minifx.codegen.CodeGen is CodeGen
    assert "CodeGen" in dir(minifx) and torch.fx.CodeGen is torch.fx.graph.CodeGen


@pytest.mark.parametrize(
    "make, fn",
    [(list_codegen, add), (returns_a_list, two_sums)],
    ids=["list-in", "list-in-list-out"],
)
def test_a_custom_codegen_writes_the_same_code_and_the_module_runs_with_it(make, fn):
    vals = [torch.randn(3), torch.randn(3)]
    codes = {}
    for lib, (trace, _, base, _) in LIBRARIES.items():
        gm = trace(fn)
        gm.graph.set_codegen(make(base)())
        gm.recompile()
        codes[lib] = gm.code
        result = gm(vals)
        expected = fn(*vals)
        assert (
            all(torch.equal(r, e) for r, e in zip(result, expected))
            if isinstance(expected, tuple)
            else torch.equal(result, expected)
        )
    assert codes["minifx"] == codes["torch.fx"]
    assert (
        "def forward(self, args_list: List[torch.Tensor]):\n    a, b = args_list" in codes["minifx"]
    )


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


def f_dict_add(x):
    return x["a"] + sum(x["z"])


# torch's own TreeSpec warns when a LeafSpec is copied (copyreg), whoever copies it.
@pytest.mark.filterwarnings("ignore:.*LeafSpec.*:FutureWarning")
def test_structured_inputs_are_the_pytree_codegens_job():
    # test_pytree: a flat copy (plain CodeGen) runs on process_inputs(...).
    results = {}
    for lib, (trace, graph_module, base, ph) in LIBRARIES.items():
        inp = {"a": ph, "z": (ph, ph)}
        val = pytree.tree_map(lambda leaf: torch.full((2,), 2.0) if leaf is ph else leaf, inp)
        nf = trace(f_dict_add, concrete_args={"x": inp})
        bare = graph_module({}, copy.deepcopy(nf.graph))
        bare.graph.set_codegen(base())
        bare.recompile()
        flat = nf.graph.process_inputs(val)
        results[lib] = (
            nf.code,
            bare.code,
            len(flat),
            nf.graph.process_outputs(bare(*flat)).tolist(),
            nf(val).tolist(),
        )
    assert results["minifx"] == results["torch.fx"]
    code, flat_code, leaves, out, expected = results["minifx"]
    assert "tree_flatten_spec" in code and "tree_flatten_spec" not in flat_code
    assert leaves == 3 and out == expected == [6.0, 6.0]


def test_the_pytree_codegen_checks_the_structure_of_process_inputs():
    nf = symbolic_trace(f_dict_add, concrete_args={"x": {"a": PH, "z": (PH, PH)}})
    with pytest.raises(TypeError, match=r"the inputs\[0\] should be a dict with keys \['a', 'z'\]"):
        nf.graph.process_inputs({"a": 1})


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


def test_a_codegen_for_torch_fx_works_without_minifx_keywords():
    # minifx passes `root_module` and `repr_fn` only to hooks that take them, as
    # torch.fx passes `expanded_def`, `descs` and `repr_fn`.
    class Shouting(CodeGen):
        def gen_fn_def(self, free_vars, maybe_return_annotation):
            return f"def forward(self, {', '.join(free_vars)}):"

        def generate_output(self, output_args):
            return f"return ('done', {output_args!r})"

    gm = symbolic_trace(add)
    gm.graph.set_codegen(Shouting())
    gm.recompile()
    assert gm(1, 2) == ("done", 3)


def test_a_multi_line_def_keeps_the_line_map_right():
    gm = symbolic_trace(add)
    gm.graph.set_codegen(list_codegen(CodeGen)())
    code = gm.recompile()
    lines = code.src.split("\n")
    add_line = next(i for i, line in enumerate(lines, start=1) if line.startswith("    add = "))
    nodes = list(gm.graph.nodes)
    assert nodes[code.lineno_map[add_line - code.prologue_start]].name == "add"


def test_another_root_name_still_names_the_first_parameter():
    graph = Graph()
    graph.output(graph.get_attr("w"))
    assert "def forward(model):\n    w = model.w" in python_code(graph, root_module="model").src


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


def test_only_the_default_and_the_pytree_codegen():
    """No `_BoxedCodeGen` or `_ExportCodeGen`, which torch.fx has."""
    for name in ("_BoxedCodeGen", "_ExportCodeGen", "_PyTreeCodeGen", "CodeGen"):
        assert hasattr(torch.fx.graph, name)
    assert hasattr(minifx.codegen.codegen, "_PyTreeCodeGen")
    assert not hasattr(minifx.codegen.codegen, "_BoxedCodeGen")
    assert not hasattr(minifx.codegen.codegen, "_ExportCodeGen")


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


def test_a_structured_graph_keeps_no_codegen_and_checks_what_process_inputs_gets():
    """`graph._codegen` stays `None` (the default is the pytree one); `process_inputs` checks."""
    theirs = torch.fx.symbolic_trace(
        f_dict_add, concrete_args={"x": {"a": torch.fx.PH, "z": (torch.fx.PH,)}}
    )
    ours = symbolic_trace(f_dict_add, concrete_args={"x": {"a": PH, "z": (PH,)}})
    assert type(theirs.graph._codegen).__name__ == "_PyTreeCodeGen"
    assert ours.graph._codegen is None
    assert type(codegen_of(ours.graph)) is minifx.codegen.codegen._PyTreeCodeGen
    assert theirs.graph.process_inputs({"a": 1}) == [1]  # flattened, not checked
    with pytest.raises(TypeError, match="should be a dict with keys"):
        ours.graph.process_inputs({"a": 1})
