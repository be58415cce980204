"""`minifx.codegen.to_folder`: a GraphModule written out as a package of its own.

More cases (moving the folder, a fresh interpreter, structured inputs, what
cannot be saved) are in test_graph_module.py and test_differences.py.
"""

from __future__ import annotations

import importlib
import sys

import pytest
import torch

import minifx.codegen
from minifx.codegen.to_folder import module_source, write_folder

pytestmark = pytest.mark.ch3


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(3, 2)
        self.register_buffer("offset", torch.arange(2.0))

    def forward(self, x):
        return torch.relu(self.linear(x)) + self.offset


def test_write_folder_makes_a_package_that_computes_what_the_module_computes(tmp_path) -> None:
    gm = minifx.codegen.symbolic_trace(Model())
    write_folder(gm, tmp_path / "saved_model", "Saved")
    sys.path.insert(0, str(tmp_path))
    try:
        package = importlib.import_module("saved_model")
        x = torch.randn(4, 3)
        torch.testing.assert_close(package.Saved()(x), gm(x))
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("saved_model", None)
        sys.modules.pop("saved_model.module", None)


def test_the_module_source_rebuilds_a_linear_from_its_repr(tmp_path) -> None:
    gm = minifx.codegen.symbolic_trace(Model())
    code = minifx.codegen.python_code(gm.graph)
    source = module_source(gm, code, tmp_path, "Saved")
    assert (
        "setattr(self, 'linear', torch.nn.Linear(in_features=3, out_features=2, bias=True))"
        in source
    )
    assert "self.register_buffer('offset', torch.empty([2], dtype=torch.float32))" in source
    assert "    def forward(self, x):" in source


class WithEmbedding(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(5, 3)

    def forward(self, x):
        return self.emb(x)


def test_a_pickled_submodule_is_commented_and_warned_about_as_torch_fx_does(tmp_path) -> None:
    written = {}
    for library in (torch.fx, minifx.codegen):
        folder = tmp_path / library.__name__.replace(".", "_")
        with pytest.warns(UserWarning, match=r"saved as pickled files instead: \['emb'\]"):
            library.symbolic_trace(WithEmbedding()).to_folder(folder, "Saved")
        line = next(s for s in (folder / "module.py").read_text().split("\n") if "'emb'" in s)
        written[library] = ((folder / "__init__.py").read_text(), line.rpartition(" # ")[2])
    assert (
        written[minifx.codegen] == written[torch.fx] == ("from .module import *", "Embedding(5, 3)")
    )
