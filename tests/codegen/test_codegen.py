"""`minifx.codegen.codegen`: `CodeGen` and the pytree CodeGen of structured inputs,
against torch.fx (`Graph`'s methods that use them, `set_codegen`,
`process_inputs/outputs`, `python_code`, are tested in tests/graph/test_codegen_hooks.py;
the flattening of structured inputs in test_pytree.py).

A graph's CodeGen writes the `def` line and the `return` of its code, and
maps a caller's inputs and outputs to the graph's. PyTorch's test_fx checks
this with a CodeGen whose `forward` takes one list (test_custom_codegen), and
with `set_codegen(CodeGen())` on a graph traced with structured
`concrete_args` (test_pytree). Both run here on both libraries, and the
generated code must be the same text.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.fx
from torch.utils import _pytree as pytree

import minifx
import minifx.codegen
from minifx.codegen import CodeGen, PythonCode, python_code, symbolic_trace
from minifx.codegen.codegen import codegen_of
from minifx.graph import PH, Graph
from tests.codegen.support import (
    LIBRARIES,
    add,
    f_dict_add,
    list_codegen,
    returns_a_list,
    two_sums,
)

pytestmark = pytest.mark.ch3


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


class SumOfList(torch.nn.Module):
    def forward(self, x):
        return sum(x)


@pytest.mark.parametrize("empty", [[], {}], ids=["list", "dict"])
def test_a_module_with_no_leaves_still_flattens_self(empty):
    # test_pytree's `f_sum` with `[]`, traced as a module: no placeholder is left, but
    # torch.fx's code flattens `self` all the same, and so must ours.
    codes, results = {}, {}
    for lib, (trace, *_) in LIBRARIES.items():
        gm = trace(SumOfList(), concrete_args={"x": empty})
        codes[lib], results[lib] = gm.code, gm(empty)
    assert codes["minifx"] == codes["torch.fx"]
    assert "    self, = fx_pytree.tree_flatten_spec([self, x], self._in_spec)\n" in codes["minifx"]
    assert results["minifx"] == results["torch.fx"] == 0


class DictAdd(torch.nn.Module):
    def forward(self, x):
        return f_dict_add(x)


@pytest.mark.parametrize("root", [f_dict_add, DictAdd()], ids=["function", "module"])
def test_the_pytree_codegens_process_inputs_returns_a_list_as_torch_fx_s(root):
    # test_pytree flattens with `process_inputs`; torch.fx's gives a list of leaves.
    flat = {}
    for lib, (trace, _, _, ph) in LIBRARIES.items():
        gm = trace(root, concrete_args={"x": {"a": ph, "z": (ph, 3)}})
        flat[lib] = gm.graph.process_inputs({"a": 1, "z": (2, 3)})
    assert flat["minifx"] == flat["torch.fx"] == [1, 2, 3]


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


@pytest.mark.parametrize("base", [torch.fx.CodeGen, CodeGen], ids=["torch.fx", "minifx"])
def test_a_codegen_names_its_function_by_func_name_as_torch_fx_s(base):
    # test_fx's custom CodeGens write `def {self._func_name}(...)`; a GraphModule still
    # runs only a function called `forward`, in both libraries.
    class Renaming(base):
        def gen_fn_def(self, free_vars, maybe_return_annotation):
            return "# renamed\n" + super().gen_fn_def(free_vars, maybe_return_annotation)

    lib = torch.fx if base is torch.fx.CodeGen else minifx
    graph = lib.symbolic_trace(add).graph
    graph.set_codegen(Renaming())
    assert graph._codegen._func_name == "forward"
    assert lib.GraphModule(torch.nn.Module(), graph)(1, 2) == 3
    graph._codegen._func_name = "main"
    assert "\ndef main(self, a, b):\n" in graph.python_code("self").src
    with pytest.raises(KeyError, match="forward"):
        lib.GraphModule(torch.nn.Module(), graph)


def test_a_multi_line_def_keeps_the_line_map_right():
    gm = symbolic_trace(add)
    gm.graph.set_codegen(list_codegen(CodeGen)())
    code = gm.recompile()
    lines = code.src.split("\n")
    add_line = next(i for i, line in enumerate(lines, start=1) if line.startswith("    add = "))
    nodes = list(gm.graph.nodes)
    assert nodes[code._lineno_map[add_line - code._prologue_start]].name == "add"


def test_another_root_name_still_names_the_first_parameter():
    graph = Graph()
    graph.output(graph.get_attr("w"))
    assert "def forward(model):\n    w = model.w" in python_code(graph, root_module="model").src


# -- chapter 3's "Differences from torch.fx", against torch.fx ------------------------------


def test_only_the_default_and_the_pytree_codegen():
    """No `_BoxedCodeGen` or `_ExportCodeGen`, which torch.fx has."""
    for name in ("_BoxedCodeGen", "_ExportCodeGen", "_PyTreeCodeGen", "CodeGen"):
        assert hasattr(torch.fx.graph, name)
    assert hasattr(minifx.codegen.codegen, "_PyTreeCodeGen")
    assert not hasattr(minifx.codegen.codegen, "_BoxedCodeGen")
    assert not hasattr(minifx.codegen.codegen, "_ExportCodeGen")


def test_a_new_graph_keeps_no_codegen_and_the_default_is_the_plain_one():
    """`graph._codegen` stays `None` until `set_codegen`; torch.fx stores a `CodeGen()`."""
    assert type(torch.fx.Graph()._codegen) is torch.fx.CodeGen
    graph = Graph()
    assert graph._codegen is None
    assert type(codegen_of(graph)) is minifx.codegen.codegen.CodeGen


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


def test_python_code_has_torch_fx_s_fields():
    """`PythonCode(src, globals, _lineno_map, _prologue_start)`, torch.fx's dataclass:
    code written for torch.fx reads `code._lineno_map` (minifx adds a default for it)."""
    import dataclasses

    import torch.fx

    def fields(cls: type) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    assert fields(PythonCode) == fields(torch.fx.graph.PythonCode)
    gms = symbolic_trace(add), torch.fx.symbolic_trace(add)
    ours, theirs = (gm.graph.python_code("self") for gm in gms)
    assert (ours._lineno_map, ours._prologue_start) == (theirs._lineno_map, theirs._prologue_start)
