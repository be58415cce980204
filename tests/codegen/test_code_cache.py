"""`minifx.codegen.code_cache`: compiled code kept for reuse by `recompile`."""

from __future__ import annotations

import linecache

import pytest
import torch

from minifx.codegen import PythonCode, code_cache, symbolic_trace
from minifx.codegen.source import compile_forward

pytestmark = pytest.mark.ch3


def test_recompiling_the_same_source_reuses_its_code_but_makes_a_new_forward() -> None:
    gm = symbolic_trace(torch.nn.Linear(2, 2))
    first = type(gm).forward
    gm.recompile()
    assert type(gm).forward is not first  # a new function ...
    assert type(gm).forward.__code__ is first.__code__  # ... of the same compiled code
    code_cache.forget_compiled()
    gm.recompile()
    assert type(gm).forward.__code__ is not first.__code__  # compiled afresh


def test_an_edited_graph_is_compiled_afresh() -> None:
    gm = symbolic_trace(torch.nn.Sequential(torch.nn.ReLU()))
    before = type(gm).forward.__code__
    relu = next(n for n in gm.graph.nodes if n.op == "call_module")
    with gm.graph.inserting_after(relu):
        neg = gm.graph.call_function(torch.neg, (relu,))
    relu.replace_all_uses_with(neg, delete_user_cb=lambda user: user is not neg)
    gm.recompile()
    assert type(gm).forward.__code__ is not before
    assert torch.equal(gm(torch.tensor([-1.0, 2.0])), torch.tensor([-0.0, -2.0]))


def test_only_the_last_few_compiled_sources_are_kept() -> None:
    for index in range(code_cache._COMPILED_KEPT + 5):
        compile_forward(PythonCode(f"def forward(self):\n    return {index}\n", {}))
    assert len(code_cache._COMPILED) == code_cache._COMPILED_KEPT


def test_register_source_names_a_source_once_and_says_where_it_came_from() -> None:
    src = "def forward(self):\n    return 'register_source'\n"
    origin = {"co_filename": "model.py", "co_firstlineno": 12, "co_name": "forward"}
    name = code_cache.register_source(src, origin)
    assert name.startswith("<eval_with_key>.")
    assert name.endswith(" from model.py:12 in forward")
    assert code_cache.register_source(src, origin) == name  # the same source, the same name
    assert code_cache.register_source(src) != name  # another origin, another name
    assert linecache.getline(name, 2) == "    return 'register_source'\n"
