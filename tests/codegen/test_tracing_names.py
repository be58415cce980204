"""`minifx.codegen.tracing_names`: `minifx._symbolic_trace`, torch.fx's module of that name,
for code written for torch.fx (PyTorch's test_fx imports `PHBase` and `PHWithMeta` from it,
and its test_getitem appends to `_wrapped_methods_to_patch`)."""

from __future__ import annotations

import pytest
import torch
import torch.fx
import torch.fx._symbolic_trace

import minifx
import minifx._symbolic_trace
from minifx.codegen import tracing_names
from tests.graph.support import getitem_listed_in, tensor_left_as_torch_fx_found_it

pytestmark = pytest.mark.ch3


def test_it_is_minifx_s_symbolic_trace_module_with_torch_fx_s_names():
    assert minifx._symbolic_trace is tracing_names
    for name in tracing_names.__all__:
        assert hasattr(torch.fx._symbolic_trace, name), name
        home = minifx.graph.wrapping if name.startswith("_") else minifx
        assert getattr(tracing_names, name) is getattr(home, name), name
    assert tracing_names.symbolic_trace is minifx.symbolic_trace
    assert tracing_names.PHWithMeta is minifx.PHWithMeta


class PositionalEncoding(torch.nn.Module):
    """The shape of BERT's positional embedding, which torch.fx's `_wrapped_methods_to_patch`
    comment names: a buffer sliced by the input's size."""

    def __init__(self):
        super().__init__()
        self.pe = torch.nn.Buffer(torch.arange(40.0).reshape(5, 8))

    def forward(self, x):
        return x + self.pe[: x.size(0)]


def traced_with_getitem_patched(library) -> torch.nn.Module:
    with getitem_listed_in(library._symbolic_trace._wrapped_methods_to_patch):
        return library.symbolic_trace(PositionalEncoding())


def test_a_method_appended_to_wrapped_methods_to_patch_traces_and_runs_as_in_torch_fx():
    ours = traced_with_getitem_patched(minifx)
    assert "__getitem__" not in torch.Tensor.__dict__  # minifx put it back as it was
    with tensor_left_as_torch_fx_found_it():
        theirs = traced_with_getitem_patched(torch.fx)
    assert ours.code == theirs.code
    assert "pe.__getitem__(" in ours.code
    x = torch.ones(3, 8)
    assert torch.equal(ours(x), theirs(x))
    assert torch.equal(ours(torch.ones(2, 8)), PositionalEncoding()(torch.ones(2, 8)))
