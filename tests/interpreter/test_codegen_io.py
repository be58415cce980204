"""The Interpreter and the Transformer with a graph's custom `CodeGen`, against torch.fx.

`Interpreter.run` takes its arguments and returns its result as the generated
`forward` does, through the graph's `process_inputs` and `process_outputs`
(test_fx's test_interpreter_with_codegen); a Transformer's new graph keeps the
old graph's CodeGen, so the new module takes the same arguments
(test_custom_codegen_with_transformer).
"""

from __future__ import annotations

import pytest
import torch
import torch.fx

from minifx.codegen import CodeGen, symbolic_trace
from minifx.interpreter import Interpreter, Transformer
from tests.codegen.support import add, list_codegen, returns_a_list, two_sums

pytestmark = pytest.mark.ch4

LIBRARIES = {
    "torch.fx": (
        torch.fx.symbolic_trace,
        torch.fx.CodeGen,
        torch.fx.Interpreter,
        torch.fx.Transformer,
    ),
    "minifx": (symbolic_trace, CodeGen, Interpreter, Transformer),
}


@pytest.mark.parametrize("lib", LIBRARIES)
def test_the_interpreter_takes_and_returns_what_forward_does(lib):
    trace, base, interpreter, _ = LIBRARIES[lib]
    vals = [torch.randn(3), torch.randn(3)]
    nf = trace(two_sums)
    nf.graph.set_codegen(returns_a_list(base)())
    nf.recompile()
    result = interpreter(nf).run(vals)
    assert isinstance(result, list) and all(torch.equal(r, e) for r, e in zip(result, nf(vals)))
    flat = interpreter(nf).run(*vals, enable_io_processing=False)
    assert isinstance(flat, tuple) and all(torch.equal(r, e) for r, e in zip(flat, result))


def test_the_transformer_keeps_the_codegen():
    vals = [torch.randn(3), torch.randn(3)]
    codes = {}
    for lib, (trace, base, _, transformer) in LIBRARIES.items():
        nf = trace(add)
        nf.graph.set_codegen(list_codegen(base)())
        nf.recompile()
        transformed = transformer(nf).transform()
        assert torch.equal(transformed(vals), nf(vals))
        codes[lib] = transformed.code
    assert codes["minifx"] == codes["torch.fx"]
    assert "args_list" in codes["minifx"]
