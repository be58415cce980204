"""Differential tests: stage 2's `Tracer` against `torch.fx.Tracer` on the corpus.

Every case of `tests/graph/corpus.py` is traced twice, on two fresh roots, by
`torch.fx.Tracer` (the oracle) and by `minifx.graph.Tracer`. The printed
graphs must be equal byte for byte, and the nodes must have the same names
and opcodes in the same order. A few golden strings pin the printouts that
the book shows, so a change in torch.fx cannot silently change them.
"""

from __future__ import annotations

import re
import warnings

import pytest
import torch
import torch.fx

import minifx
import minifx.graph
from minifx.proxy.ir import NODE_LINE
from tests.graph.corpus import CASES, CASES_BY_NAME, Case
from tests.graph.support import diff
from tests.oracle import trace_minifx, trace_torch

pytestmark = pytest.mark.ch2


# -- tracing one case with each library --------------------------------------------


def minifx_printout(c: Case, graph: minifx.graph.Graph) -> str:
    """minifx's printout, with the case's documented target-name differences mapped back."""
    text = str(graph)
    for mini_text, torch_text in c.mini_aliases:
        assert mini_text in text, f"alias {mini_text!r} no longer occurs; remove it from the case"
        text = text.replace(mini_text, torch_text)
    return text


# -- the differential tests ---------------------------------------------------------


def test_corpus_is_large_enough():
    assert len(CASES) >= 50, f"the corpus has only {len(CASES)} cases"


def test_case_names_are_unique():
    assert len(CASES_BY_NAME) == len(CASES)


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_graph_prints_like_torch_fx(c: Case):
    expected = str(trace_torch(c).graph)
    actual = minifx_printout(c, trace_minifx(c).graph)
    assert actual == expected, f"printouts differ:\n{diff(expected, actual)}"


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_node_names_and_opcodes_match(c: Case):
    expected = [(n.name, n.op) for n in trace_torch(c).graph.nodes]
    actual = [(n.name, n.op) for n in trace_minifx(c).graph.nodes]
    assert actual == expected, "nodes differ:\n" + diff(
        "\n".join(map(str, expected)), "\n".join(map(str, actual))
    )


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_traced_graph_lints(c: Case):
    trace_minifx(c).graph.lint()


# -- the printed grammar, and constants on the root ------------------------------------


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_every_printed_line_follows_the_grammar(c: Case):
    """The grammar in `minifx/proxy/ir.py` describes torch.fx's printout and minifx's."""
    for graph in (trace_torch(c).graph, trace_minifx(c).graph):
        header, *lines = str(graph).split("\n")
        assert header == "graph():"
        for line in lines:
            assert line.startswith("    "), line
            line = line[4:]
            if line.startswith("return "):
                continue
            match = NODE_LINE.fullmatch(line)
            assert match and match["num_users"] is not None, f"{type(graph)}: {line!r}"
            tail = match["tail"] or ""
            expected = {"get_attr": ("",), "placeholder": ("", "(default=")}.get(
                match["op"], ("(args = (",)
            )
            assert any(tail.startswith(t) if t else tail == "" for t in expected), line


def test_tensor_constants_are_stored_on_the_root():
    """`_tensor_constant0` is set on the root the tracer used, as torch.fx does."""
    c = CASES_BY_NAME["TwoTensorConstants"]
    root, _ = c.make()
    minifx.graph.Tracer().trace(root)
    assert torch.equal(root._tensor_constant0, torch.tensor([2.0]))
    assert torch.equal(root._tensor_constant1, torch.zeros(3))


# -- golden strings: the printouts the book shows ------------------------------------

MLP_GRAPH = """\
graph():
    %x : [num_users=1] = placeholder[target=x]
    %fc1 : [num_users=1] = call_module[target=fc1](args = (%x,), kwargs = {})
    %relu : [num_users=1] = call_function[target=torch.nn.functional.relu](args = (%fc1,), kwargs = {inplace: False})
    %fc2 : [num_users=1] = call_module[target=fc2](args = (%relu,), kwargs = {})
    return fc2"""


INDEXING_GRAPH = """\
graph():
    %x : [num_users=1] = placeholder[target=x]
    %getitem : [num_users=1] = call_function[target=operator.getitem](args = (%x, (0, slice(1, None, None))), kwargs = {})
    return getitem"""


BASIC_BLOCK_GRAPH = """\
graph():
    %x : [num_users=2] = placeholder[target=x]
    %conv1 : [num_users=1] = call_module[target=conv1](args = (%x,), kwargs = {})
    %bn1 : [num_users=1] = call_module[target=bn1](args = (%conv1,), kwargs = {})
    %relu : [num_users=1] = call_module[target=relu](args = (%bn1,), kwargs = {})
    %conv2 : [num_users=1] = call_module[target=conv2](args = (%relu,), kwargs = {})
    %bn2 : [num_users=1] = call_module[target=bn2](args = (%conv2,), kwargs = {})
    %add : [num_users=1] = call_function[target=operator.add](args = (%bn2, %x), kwargs = {})
    %relu_1 : [num_users=1] = call_module[target=relu](args = (%add,), kwargs = {})
    return relu_1"""


MINIFX_WRAP_GRAPH = """\
graph():
    %x : [num_users=1] = placeholder[target=x]
    %mini_rows_prefix : [num_users=1] = call_function[target=tests.graph.wrapped_helpers.mini_rows_prefix](args = (%x, 2), kwargs = {})
    %relu : [num_users=1] = call_method[target=relu](args = (%mini_rows_prefix,), kwargs = {})
    return relu"""


@pytest.mark.parametrize(
    "name, golden",
    [
        ("MLP", MLP_GRAPH),
        ("index_tuple_with_slice", INDEXING_GRAPH),
        ("resnet_basic_block", BASIC_BLOCK_GRAPH),
        ("minifx_wrapped_by_name", MINIFX_WRAP_GRAPH),
    ],
    ids=["mlp", "indexing", "resnet_basic_block", "minifx_wrap"],
)
def test_golden_printout(name: str, golden: str):
    actual = str(trace_minifx(CASES_BY_NAME[name]).graph)
    assert actual == golden, f"printout changed:\n{diff(golden, actual)}"


# -- warnings of get_attr -----------------------------------------------------------


def owning_module() -> torch.nn.Module:
    root = torch.nn.Module()
    root.lin = torch.nn.Linear(2, 2)
    root.register_buffer("buf", torch.ones(2))
    root.plain = torch.ones(2)
    root.number = 3
    return root


def get_attr_warnings(fx, path: str) -> list[tuple[type, str]]:
    """Category and first words of each warning of `fx.Graph(...).get_attr(path)`."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fx.Graph(owning_module=owning_module()).get_attr(path)
    return [(w.category, re.split("[!:]", str(w.message))[0]) for w in caught]


@pytest.mark.parametrize(
    "path",
    [
        "lin.weight",
        "buf",
        "lin",
        "missing",
        "lin.missing",
        "plain",
        "number",
        "a.b",
        "a.b.c",
        "lin.weight.data",
        "plain.T",
    ],
)
def test_get_attr_warns_as_torch_fx_does(path: str):
    # Same count, categories and openings; minifx's messages go on to say what to do.
    assert get_attr_warnings(minifx, path) == get_attr_warnings(torch.fx, path)
