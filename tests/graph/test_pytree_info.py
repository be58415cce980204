"""Structured `concrete_args`: the graph returns a flat list and remembers both structures."""

import copy

import pytest
import torch.fx
from torch.utils import _pytree as pytree

from minifx.graph import PH, Tracer

pytestmark = pytest.mark.ch2


def scale_by(x, pair):
    return {"out": x * pair[0] * pair[1]}


def test_structured_concrete_args_flatten_the_output_like_torch_fx():
    ours = Tracer().trace(scale_by, concrete_args={"pair": (PH, 2)})
    theirs = torch.fx.Tracer().trace(scale_by, concrete_args={"pair": (torch.fx.PH, 2)})
    assert str(ours) == str(theirs)
    assert str(ours).endswith("return [mul_1]")


def test_the_graph_keeps_the_input_and_output_structures():
    graph = Tracer().trace(scale_by, concrete_args={"pair": (PH, 2)})
    info = graph.pytree_info
    assert info.arg_names == ["x", "pair"]
    # Putting the flat output back into its structure gives the function's dict.
    assert pytree.tree_unflatten(["leaf"], info.out_spec) == {"out": "leaf"}
    assert pytree.tree_unflatten(["x", "p0", 2], info.in_spec) == ("x", ("p0", 2))
    assert copy.deepcopy(graph).pytree_info is info


def test_flat_inputs_need_no_pytree_info():
    assert Tracer().trace(scale_by).pytree_info is None
    assert Tracer().trace(lambda x, n: x * n, concrete_args={"n": 3}).pytree_info is None
