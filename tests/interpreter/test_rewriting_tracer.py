"""A Transformer over a GraphModule that `RewritingTracer` made, against torch.fx
(test_fx's `test_ast_rewriter_wrapped_via_decorator_and_transformed`).

The wrapped call stays one call in the transformed module, the recorded assert
stays too, and the wrapped function is left unpatched afterwards.
"""

from __future__ import annotations

import pytest
import torch
import torch.fx

import minifx
from tests.codegen.support import torch_code
from tests.codegen.test_rewriting_tracer import graph_module
from tests.graph import rewriter_cases as programs

pytestmark = pytest.mark.ch4

TRANSFORMERS = {"torch.fx": torch.fx.Transformer, "minifx": minifx.Transformer}


@pytest.mark.parametrize(
    "make",
    [programs.CallsWrappedViaDecorator, programs.ChecksAndCallsWrappedViaDecorator],
    ids=lambda make: make.__name__,
)
def test_a_transformed_rewritten_module_keeps_the_wrapped_call(make):
    codes = {}
    for lib, transformer in TRANSFORMERS.items():
        transformed = transformer(graph_module(lib, make())).transform()
        codes[lib] = transformed.code
        assert "wrapped_via_decorator(" in transformed.code
        assert transformed(0) == 1
        assert programs.wrapped_via_decorator is programs.WRAPPED["wrapped_via_decorator"]
        assert not hasattr(programs.wrapped_via_decorator, "__fx_already_patched")
    assert codes["minifx"] == torch_code(codes["torch.fx"])
    if make is programs.ChecksAndCallsWrappedViaDecorator:
        assert "torch._assert(ge, '')" in codes["minifx"]
