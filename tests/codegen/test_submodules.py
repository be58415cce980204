"""`minifx.codegen.submodules`: adding and deleting a GraphModule's submodules.

Differential cases against torch.fx are in test_graph_module.py; these pin
the mixin's own contract.
"""

from __future__ import annotations

import pytest
import torch

import minifx.codegen
import minifx.graph
from minifx.codegen.submodules import (
    SubmodulesMixin,
    find_attribute,
    install,
    install_from_dict,
    state_targets,
)

pytestmark = pytest.mark.ch3


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = torch.nn.Sequential(torch.nn.Linear(2, 2))
        self.scale = torch.nn.Parameter(torch.ones(2))

    def forward(self, x):
        return self.block(x) * self.scale


def test_graph_module_inherits_the_submodule_methods() -> None:
    assert issubclass(minifx.codegen.GraphModule, SubmodulesMixin)


def test_state_targets_are_the_get_attr_and_call_module_nodes() -> None:
    gm = minifx.codegen.symbolic_trace(Model())
    assert [(target, node.op) for target, node in state_targets(gm.graph)] == [
        ("block.0", "call_module"),
        ("scale", "get_attr"),
    ]


def test_state_targets_refuse_a_target_that_is_not_a_str() -> None:
    graph = minifx.graph.Graph()
    node = graph.get_attr("scale")
    graph.output(node)
    node.target = 3  # edited by hand after creation, where nothing checks it
    with pytest.raises(TypeError, match="must be a dotted attribute name"):
        state_targets(graph)


def test_add_then_delete_a_submodule_at_a_new_path() -> None:
    gm = minifx.codegen.symbolic_trace(Model())
    assert gm.add_submodule("extra.relu", torch.nn.ReLU())
    assert isinstance(gm.extra.relu, torch.nn.ReLU)
    assert gm.delete_submodule("extra.relu")
    assert not gm.delete_submodule("extra.relu")


def test_add_submodule_refuses_a_path_through_something_that_is_not_a_module() -> None:
    gm = minifx.codegen.symbolic_trace(Model())
    assert not gm.add_submodule("scale.inner", torch.nn.ReLU())


def test_delete_all_unused_submodules_keeps_what_the_graph_needs() -> None:
    gm = minifx.codegen.symbolic_trace(Model())
    gm.add_submodule("unused", torch.nn.ReLU())
    gm.delete_all_unused_submodules()
    assert [name for name, _ in gm.named_modules()] == ["", "block", "block.0"]


def test_install_makes_a_plain_tensor_a_buffer_and_keeps_a_parameter_one() -> None:
    module = torch.nn.Module()
    install(module, "table", torch.ones(2))
    install(module, "weight", torch.nn.Parameter(torch.ones(2)))
    assert [name for name, _ in module.named_buffers()] == ["table"]
    assert [name for name, _ in module.named_parameters()] == ["weight"]


def test_install_from_dict_installs_each_target_at_its_path() -> None:
    gm = minifx.codegen.symbolic_trace(Model())
    linear, scale = getattr(gm.block, "0"), gm.scale
    rebuilt = minifx.codegen.GraphModule({"block.0": linear, "scale": scale}, gm.graph)
    assert getattr(rebuilt.block, "0") is linear and rebuilt.scale is scale
    fresh = torch.nn.Module()
    install_from_dict(fresh, {"block.0": linear, "scale": scale}, state_targets(gm.graph))
    assert getattr(fresh.block, "0") is linear


def test_install_from_dict_names_the_missing_key() -> None:
    gm = minifx.codegen.symbolic_trace(Model())
    missing = "refers to 'scale', but the root dict has no such key"
    with pytest.raises(RuntimeError, match=missing):
        install_from_dict(
            torch.nn.Module(), {"block.0": getattr(gm.block, "0")}, state_targets(gm.graph)
        )


def test_find_attribute_answers_as_getattr_does() -> None:
    model = Model()
    model.register_buffer("running", torch.zeros(2))
    model.note = None
    missing = object()
    for name in ("block", "scale", "running", "note", "_version", "training", "nothing"):
        assert find_attribute(model, name, missing) is getattr(model, name, missing), name
    # Objects that are not modules (a path may pass through one) take plain getattr.
    assert find_attribute(torch.ones(2), "shape", None) == torch.Size([2])


def test_a_graph_module_shares_a_parent_that_a_target_installed_whole() -> None:
    root = Model()
    graph = minifx.graph.Graph()
    x = graph.placeholder("x")
    block = graph.call_module("block", (x,))
    graph.output(graph.call_module("block.0", (block,)))
    gm = minifx.codegen.GraphModule(root, graph)
    assert gm.block is root.block
    torch.testing.assert_close(gm(torch.ones(1, 2)), root.block(root.block(torch.ones(1, 2))))
