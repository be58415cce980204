"""`minifx/graph/tracer_constants.py`: where the tracer puts the constants `get_attr` reads."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from minifx.graph import Tracer

pytestmark = pytest.mark.ch2


class UsesConstants(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.ones(2)  # a plain tensor attribute, not a buffer
        self._tensor_constant0 = "taken"

    def forward(self, x):
        return x * self.scale + torch.tensor([1.0, 2.0])


def test_a_tensor_attribute_is_read_by_its_path_and_a_new_constant_gets_a_fresh_name():
    root = UsesConstants()
    graph = Tracer().trace(root)
    assert [n.target for n in graph.nodes if n.op == "get_attr"] == ["scale", "_tensor_constant1"]
    assert torch.equal(root._tensor_constant1, torch.tensor([1.0, 2.0]))


def test_get_fresh_qualname_skips_names_the_root_has():
    tracer = Tracer()
    tracer.root = UsesConstants()
    assert tracer.get_fresh_qualname("_tensor_constant") == "_tensor_constant1"
    assert tracer.get_fresh_qualname("_other") == "_other0"
