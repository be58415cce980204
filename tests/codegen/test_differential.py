"""Differential tests of stage 3: generated code and outputs against torch.fx and eager mode.

Every case of `tests/graph/corpus.py` is traced with each library, on fresh
roots, and wrapped in that library's GraphModule. Then:

1. `gm.code` is torch.fx's, byte for byte, after two documented normalisations:
   torch.fx registers wrapped functions with `torch.fx._symbolic_trace.wrap("f")`
   where minifx writes `wrap("f")`, and the case's `mini_aliases` (a helper
   that lives in minifx instead of torch.fx) are mapped back in code form.
2. The GraphModule returns what the program returns in eager mode, on the
   inputs of `tests/codegen/inputs.py`, and changes its inputs in the same way.
3. Retracing the GraphModule gives the same graph, the same code and the same
   outputs, and the graph lints.
4. A few golden texts pin the code the book shows, for minifx and torch.fx both.
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
import torch
import torch.fx

import minifx.codegen
import minifx.graph
from tests.codegen.compare import assert_same
from tests.codegen.inputs import INPUTS, NOT_RUNNABLE
from tests.codegen.support import (
    TORCH_FX_CANNOT_COMPILE,
    assert_runs_like_eager,
    minifx_code,
    minifx_printout,
    torch_code,
)
from tests.graph.corpus import CASES, CASES_BY_NAME, Case
from tests.oracle import minifx_module, torch_module, trace_minifx

pytestmark = pytest.mark.ch3

RUNNABLE = [c for c in CASES if c.name in INPUTS]


# Retraced with the case's own tracer, not `symbolic_trace`'s default one: these
# tracers choose leaf modules (or cache buffers), and the default tracer would
# trace through what the original graph calls as one module.
RETRACED_WITH_CASE_TRACER = {
    "custom_tracer_user_block_leaf": "Block is a leaf only for its tracer",
    "custom_tracer_leaf_by_path": "`first` is a leaf only for its tracer",
    "custom_tracer_untraceable_leaf": "Untraceable has an `if` on a tensor; a leaf only for its tracer",
    "proxy_buffer_attributes_tracer": "one get_attr per buffer only with proxy_buffer_attributes",
}

# Structured concrete_args: the generated forward takes the structures and flattens
# them with fx_pytree.tree_flatten_spec. Retracing that forward records the structure
# as one placeholder and getitem nodes, in torch.fx as in minifx, so the retraced
# graph is compared with torch.fx's retraced graph instead of the original one.
RETRACE_FLATTENS_INPUTS = {
    "concrete_ph_in_structure",
    "concrete_dict_with_ph",
    "concrete_list_of_ph",
    "concrete_namedtuple_of_ph",
}

# Known minifx bugs, marked where they make a test fail.
# Cases that show a minifx bug, as strict xfails (none at the moment).
MINIFX_BUGS: dict[str, str] = {}


# -- calling ----------------------------------------------------------------------------


def retrace(c: Case, gm: minifx.codegen.GraphModule) -> minifx.codegen.GraphModule:
    """`symbolic_trace(gm)`, or the case's own tracer where it chooses leaves."""
    if c.name in RETRACED_WITH_CASE_TRACER:
        return minifx.codegen.GraphModule(gm, c.tracer(minifx.graph.Tracer).trace(gm))
    return minifx.codegen.symbolic_trace(gm)


def retrace_torch(c: Case) -> torch.fx.Graph:
    """torch.fx's retrace of its own GraphModule, as a graph.

    Not `torch.fx.symbolic_trace`: its GraphModule would run a
    `wrap("torch.fx._symbolic_trace._assert_is_none")` line for concrete_none,
    which registers a dotted name and breaks every later torch.fx trace.
    """
    gm = torch_module(c)
    if c.name in RETRACED_WITH_CASE_TRACER:
        return c.tracer(torch.fx.Tracer).trace(gm)
    return torch.fx.Tracer().trace(gm)


def code_text(golden: str) -> str:
    """A golden text as generated code: dedented, ending in an indented empty line
    (both libraries end `forward` with the four spaces of its last, empty line)."""
    return textwrap.dedent(golden) + "    "


def with_bug_marks(cases: list[Case], bugs: dict[str, str]) -> list[Any]:
    return [
        pytest.param(c, marks=pytest.mark.xfail(reason=bugs[c.name], strict=True))
        if c.name in bugs
        else c
        for c in cases
    ]


def ids(cases: list[Case]) -> list[str]:
    return [c.name for c in cases]


# -- 1. the code ----------------------------------------------------------------------


@pytest.mark.parametrize("c", CASES, ids=ids(CASES))
def test_code_is_torch_fx_code(c: Case):
    if c.name in TORCH_FX_CANNOT_COMPILE:
        pytest.skip(f"torch.fx's code does not compile: {TORCH_FX_CANNOT_COMPILE[c.name]}")
    expected = torch_code(torch_module(c).code)
    _, gm = minifx_module(c)
    assert minifx_code(c, gm.code) == expected


@pytest.mark.parametrize("name", TORCH_FX_CANNOT_COMPILE)
def test_torch_fx_cannot_compile_the_skipped_cases(name: str):
    """Keeps TORCH_FX_CANNOT_COMPILE honest: drop a case from it once torch.fx compiles it."""
    with pytest.raises(SyntaxError):
        torch_module(CASES_BY_NAME[name])


def test_keyword_only_without_default_stays_keyword_only():
    """torch.fx writes `alpha = 1.0, beta`, a SyntaxError; minifx puts `*` before `beta`."""
    _, gm = minifx_module(CASES_BY_NAME["keyword_only_parameters"])
    assert "def forward(self, x, alpha = 1.0, *, beta):" in gm.code
    x = torch.ones(2)
    torch.testing.assert_close(gm(x, beta=0.5), x * 1.0 + 0.5)


def test_submodule_named_like_keyword_is_reached_with_getattr():
    _, gm = minifx_module(CASES_BY_NAME["SubmoduleNamedLikeKeyword"])
    assert gm.code == code_text("""


        def forward(self, x):
            lambda_1 = getattr(self, "lambda")(x);  x = None
            class_1 = getattr(self, "class")(lambda_1);  lambda_1 = None
            return class_1
""")


# -- 2. the outputs ---------------------------------------------------------------------


def test_every_corpus_case_has_inputs_or_a_reason():
    names = {c.name for c in CASES}
    assert not set(INPUTS) & set(NOT_RUNNABLE), "a case is both runnable and not runnable"
    assert names - set(INPUTS) - set(NOT_RUNNABLE) == set(), (
        "add these cases to INPUTS (or, with a reason, to NOT_RUNNABLE) in tests/codegen/inputs.py"
    )
    assert (set(INPUTS) | set(NOT_RUNNABLE)) - names == set(), "these are not corpus cases"


def test_module_argument_of_wrapped_helper_cannot_run_eagerly():
    """Keeps its NOT_RUNNABLE entry honest."""
    traced = trace_minifx(CASES_BY_NAME["ModuleAndParameterIntoWrappedHelper"])
    with pytest.raises(TypeError):
        traced.eager()(torch.randn(2, 2))


@pytest.mark.parametrize(
    "actual, expected",
    [
        ([torch.ones(2)], (torch.ones(2),)),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
        ((torch.ones(2), 3), (torch.ones(2), 4)),
        (torch.ones(2), torch.ones(2, dtype=torch.float64)),
        (torch.ones(2).sum().item, torch.zeros(2).sum().item),
    ],
    ids=["list-vs-tuple", "key-order", "int-leaf", "dtype", "bound-method"],
)
def test_output_comparison_is_strict(actual: Any, expected: Any):
    """The comparison the output tests rely on tells these apart."""
    with pytest.raises(AssertionError):
        assert_same(actual, expected)


@pytest.mark.parametrize("c", RUNNABLE, ids=ids(RUNNABLE))
def test_graph_module_runs_like_eager(c: Case):
    traced, gm = minifx_module(c)
    assert_runs_like_eager(gm, traced, c.name)


# -- 3. retracing the GraphModule ---------------------------------------------------------


@pytest.mark.parametrize("c", with_bug_marks(RUNNABLE, MINIFX_BUGS), ids=ids(RUNNABLE))
def test_retraced_graph_module_is_the_same(c: Case):
    traced, gm = minifx_module(c)
    retraced = retrace(c, gm)
    retraced.graph.lint()
    if c.name in RETRACE_FLATTENS_INPUTS:
        assert str(retraced.graph) == str(retrace_torch(c))
        assert str(retraced.graph) != str(gm.graph)
    else:
        assert str(retraced.graph) == str(gm.graph)
        assert retraced.code == gm.code
    assert_runs_like_eager(retraced, traced, c.name)


@pytest.mark.parametrize("c", with_bug_marks(RUNNABLE, MINIFX_BUGS), ids=ids(RUNNABLE))
def test_retraced_graph_is_torch_fx_retraced_graph(c: Case):
    if c.name in TORCH_FX_CANNOT_COMPILE:
        pytest.skip(f"torch.fx's code does not compile: {TORCH_FX_CANNOT_COMPILE[c.name]}")
    expected = retrace_torch(c)
    _, gm = minifx_module(c)
    retraced = retrace(c, gm)
    assert minifx_printout(c, retraced.graph) == str(expected)
    assert minifx_code(c, retraced.code, retraced=True) == torch_code(
        expected.python_code("self").src
    )


# -- 4. golden texts ------------------------------------------------------------------------

GOLDEN = {
    # call_module, get_attr, getitem with slices; values freed after their last use
    "EmbeddingWithPositions": """


        def forward(self, ids):
            emb = self.emb(ids)
            pos = self.pos
            size = ids.size(1);  ids = None
            getitem = pos[(slice(None, None, None), slice(None, size, None))];  pos = size = None
            add = emb + getitem;  emb = getitem = None
            return add
""",
    # torch functions and a method called with keywords; a tuple returned
    "keyword_arguments": """


        def forward(self, x):
            sum_1 = torch.sum(x, dim = 0, keepdim = True)
            clamp = x.clamp(min = 0.0, max = 1.0)
            topk = torch.topk(x, k = 2, largest = False);  x = None
            return (sum_1, clamp, topk)
""",
    "dtype_and_device_constants": """


        def forward(self, x):
            to = x.to(torch.float64)
            to_1 = x.to(dtype = torch.int32)
            to_2 = x.to(device = device(type='cpu'))
            ones_like = torch.ones_like(x, dtype = torch.float16)
            getattr_1 = x.dtype
            getattr_2 = x.device;  x = None
            return (to, to_1, to_2, ones_like, getattr_1, getattr_2)
""",
    # a dict of a namedtuple (a global named after its class) and nested list/tuple
    "ModuleReturnsNamedTupleAndDict": """


        def forward(self, x):
            lin = self.lin(x)
            relu = lin.relu()
            sum_1 = lin.sum()
            pair = tests_graph_corpus_Pair(lin, x);  lin = x = None
            return {'pair': pair, 'list': [relu, (sum_1,)]}
""",
    # placeholder defaults and annotations, a return annotation
    "defaults_and_annotations": """


        def forward(self, x : torch.Tensor, scale : float = 2.0, n : int = 3) -> torch.Tensor:
            mul = x * scale;  x = scale = None
            add = mul + n;  mul = n = None
            return add
""",
    # structured concrete_args: flattened on the way in, rebuilt on the way out
    "concrete_ph_in_structure": """


        def forward(self, x, pair):
            x, pair_1, pair_2, = fx_pytree.tree_flatten_spec([x, pair], self._in_spec)
            eq = pair_2 == 3;  pair_2 = None
            _assert = torch._assert(eq, 'pair has been specialized to have value 3 but got another value');  eq = _assert = None
            mul = pair_1 * 3;  pair_1 = None
            add = x + mul;  x = mul = None
            return pytree.tree_unflatten([add], self._out_spec)
""",
}


@pytest.mark.parametrize("name", GOLDEN)
def test_golden_code_minifx(name: str):
    _, gm = minifx_module(CASES_BY_NAME[name])
    assert gm.code == code_text(GOLDEN[name])


@pytest.mark.parametrize("name", GOLDEN)
def test_golden_code_torch_fx(name: str):
    """So that a change in torch.fx's code generation is noticed here."""
    assert torch_module(CASES_BY_NAME[name]).code == code_text(GOLDEN[name])
