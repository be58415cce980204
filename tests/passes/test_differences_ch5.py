"""Every claim of chapter 5's "Differences from torch.fx" box, checked on both libraries.

Each test runs torch.fx as well as minifx, so that a claim about torch.fx that stops
being true (a new torch, a changed minifx) fails here instead of misleading the
reader. One test per claim, in the box's order; each docstring quotes its claim.

The chapter's other claims about torch.fx are pinned in tests/passes/test_shape_prop.py,
each by a test that runs torch.fx's ShapeProp on the same graph:

- "`TensorMetadata` ... torch.fx's fields, in torch.fx's order": test_fields_mirror_torch_fx
- "minifx records what torch.fx.passes.shape_prop.ShapeProp records" on ResNet-18, a
  ResNet-50, a MobileNet-like network, an MLP, a Transformer block: test_models_match_torch_fx
- "The first line is torch.fx's, word for word": test_failing_node_is_named_like_torch_fx
- "A sparse tensor has no strides ... as in torch.fx": test_sparse_tensors_have_no_strides
- only a value that holds a tensor gets a `tensor_meta`, every node a `type`:
  test_values_without_tensors_get_a_type_but_no_tensor_meta
- quantized tensors' `qparams`: test_quantized_per_tensor, test_quantized_per_channel
- `memory_format_of` against torch's rule on 72 generated layouts:
  test_memory_format_agrees_with_torch_on_many_layouts
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys
import types

import pytest
import torch
import torch.fx
from torch import nn
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv
from torch.fx.passes import graph_drawer as fx_graph_drawer
from torch.fx.passes import shape_prop as fx_shape_prop

import minifx
from minifx.passes.draw import describe_node, to_mermaid
from minifx.passes.shape_prop import ShapeProp, extract_tensor_metadata

pytestmark = pytest.mark.ch5


def both(root):
    """The same `root` traced by torch.fx and by minifx."""
    return torch.fx.symbolic_trace(root), minifx.symbolic_trace(root)


# --- fake tensors ------------------------------------------------------------------------


def test_a_fake_mode_raises_where_torch_fx_propagates_fake_tensors():
    """`ShapeProp(gm, fake_mode=...)` accepts the argument, but anything but `None` raises
    `NotImplementedError` (torch.fx propagates fake tensors)."""
    theirs, ours = both(nn.Linear(4, 2))
    out = fx_shape_prop.ShapeProp(theirs, fake_mode=FakeTensorMode()).propagate(torch.randn(3, 4))
    assert isinstance(out, FakeTensor)
    assert theirs.graph.find_nodes(op="output")[0].meta["tensor_meta"].shape == (3, 2)
    with pytest.raises(NotImplementedError):
        ShapeProp(ours, fake_mode=FakeTensorMode())
    assert ShapeProp(ours, fake_mode=None).fake_mode is None


def test_torch_fx_picks_up_an_active_fake_mode_and_minifx_does_not():
    """torch.fx also picks up an active fake mode by itself (`detect_fake_mode`); minifx does not."""
    theirs, ours = both(lambda x: x + 1)
    with FakeTensorMode() as mode:
        fx_prop, mini_prop = fx_shape_prop.ShapeProp(theirs), ShapeProp(ours)
    assert fx_prop.fake_mode is mode
    assert mini_prop.fake_mode is None


def test_torch_fx_records_unbacked_bindings_and_minifx_does_not():
    """torch.fx records `unbacked_bindings` for symbolic shapes; minifx does not."""
    theirs, ours = both(lambda x: x.nonzero() + 1)
    mode = FakeTensorMode(shape_env=ShapeEnv())
    fx_shape_prop.ShapeProp(theirs, fake_mode=mode).propagate(torch.randn(5))
    ShapeProp(ours).propagate(torch.randn(5))
    assert [n.name for n in theirs.graph.nodes if "unbacked_bindings" in n.meta] == ["nonzero"]
    assert [n.name for n in ours.graph.nodes if "unbacked_bindings" in n.meta] == []
    assert ours.graph.find_nodes(op="output")[0].meta["tensor_meta"].shape == (5, 1)


# --- a node that fails -------------------------------------------------------------------


def test_a_failing_node_prints_nothing_where_torch_fx_prints_the_traceback(capsys):
    """When a node fails, the `RuntimeError`'s first line is torch.fx's; minifx then adds the
    original error's type and message and a hint, and prints nothing. torch.fx prints the
    traceback to stderr (`traceback.print_exc()`) before raising, and its Interpreter appends
    "While executing ..." to the message (minifx adds a note instead)."""
    theirs, ours = both(nn.Linear(4, 2))
    with pytest.raises(RuntimeError) as fx_info:
        fx_shape_prop.ShapeProp(theirs).propagate(torch.randn(3, 5))
    fx_stderr = capsys.readouterr().err
    with pytest.raises(RuntimeError) as info:
        ShapeProp(ours).propagate(torch.randn(3, 5))
    assert capsys.readouterr().err == ""
    assert fx_stderr.startswith("Traceback (most recent call last):")
    assert "mat1 and mat2 shapes cannot be multiplied" in fx_stderr

    first_line = str(info.value).split("\n")[0]
    assert first_line == str(fx_info.value).split("\n")[0]
    assert str(info.value).split("\n")[1] == f"    RuntimeError: {info.value.__cause__}"
    assert "mat1 and mat2" not in str(fx_info.value)  # torch.fx leaves the cause to the traceback
    node_line = next(n for n in theirs.graph.nodes if n.name == "linear").format_node()
    assert f"\n\nWhile executing {node_line}" in str(fx_info.value)
    assert "While executing" not in str(info.value)
    assert info.value.__notes__[0].startswith("While running node %linear (call_function ")


# --- memory format -----------------------------------------------------------------------

LAYOUTS = {
    "contiguous": lambda: torch.randn(2, 3, 4, 5),
    "channels_last": lambda: torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last),
    "channels_last_3d": lambda: torch.randn(2, 3, 2, 4, 5).to(memory_format=torch.channels_last_3d),
    "transposed": lambda: torch.randn(3, 4).t(),
    "sliced": lambda: torch.randn(4, 6)[:, ::2],
    "size_1_dims": lambda: torch.randn(1, 3, 1, 1).to(memory_format=torch.channels_last),
    "expanded": lambda: torch.randn(3, 1).expand(3, 4),
    "empty": lambda: torch.randn(0, 4),
    "scalar": lambda: torch.tensor(1.0),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_memory_format_is_torch_fxs_for_concrete_sizes(layout):
    """The memory format is computed by minifx's own `is_dense_in_order`, which gives what
    torch's `is_contiguous_for_memory_format_or_false` gives for the concrete sizes ShapeProp
    sees."""
    tensor = LAYOUTS[layout]()
    assert extract_tensor_metadata(tensor) == fx_shape_prop._extract_tensor_metadata(tensor)


def test_torch_fx_asks_torch_for_the_memory_format_which_handles_symbolic_sizes(monkeypatch):
    """torch's [`is_contiguous_for_memory_format_or_false`, which torch.fx calls] also handles
    symbolic sizes."""
    asked = []
    torch_rule = fx_shape_prop.is_contiguous_for_memory_format_or_false

    def spy(tensor, memory_format):
        asked.append(memory_format)
        return torch_rule(tensor, memory_format=memory_format)

    monkeypatch.setattr(fx_shape_prop, "is_contiguous_for_memory_format_or_false", spy)
    gm = torch.fx.symbolic_trace(nn.Conv2d(3, 4, 3))
    x = torch.randn(2, 3, 8, 8).to(memory_format=torch.channels_last)
    fx_shape_prop.ShapeProp(gm, fake_mode=FakeTensorMode(shape_env=ShapeEnv())).propagate(x)
    meta = gm.graph.find_nodes(op="output")[0].meta["tensor_meta"]
    assert any(isinstance(size, torch.SymInt) for size in meta.shape)
    assert meta.memory_format is torch.channels_last
    assert torch.channels_last in asked


# --- drawing -----------------------------------------------------------------------------


def _recording_pydot() -> types.ModuleType:
    """A stand-in for the `pydot` package that keeps the labels torch.fx gives its nodes."""
    pydot = types.ModuleType("pydot")

    class Dot:
        def __init__(self, *args, **kwargs):
            self.nodes, self.edges = [], []

        def add_node(self, node):
            self.nodes.append(node)

        def add_edge(self, edge):
            self.edges.append(edge)

        add_subgraph = add_edge

    class Node:
        def __init__(self, name, **attributes):
            self.name, self.label = name, attributes.get("label")

    pydot.Dot, pydot.Cluster, pydot.Node = Dot, Dot, Node
    pydot.Edge = lambda *args, **kwargs: args
    return pydot


def _torch_fx_graph_drawer_with(pydot: types.ModuleType, monkeypatch) -> types.ModuleType:
    """torch.fx's graph_drawer module, loaded afresh with `pydot` importable."""
    monkeypatch.setitem(sys.modules, "pydot", pydot)
    spec = importlib.util.spec_from_file_location(
        "_fx_graph_drawer_with_pydot", fx_graph_drawer.__file__
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_torch_fx_draws_with_graphviz_labels_of_args_and_tensor_meta(monkeypatch):
    """torch.fx draws graphs with Graphviz (`FxGraphDrawer`, which needs `pydot`, and Graphviz's
    `dot` to render; it labels each node with its args and `tensor_meta`); minifx's `to_mermaid`
    writes Mermaid text with no dependency, labels a node with its name, opcode and target only.

    pydot is not a dependency of minifx, so a stand-in records the labels torch.fx's own
    drawer code gives the nodes (`dot` renders them, and plays no part in the labels)."""
    if not fx_graph_drawer.HAS_PYDOT:  # as installed here: torch.fx cannot draw at all
        with pytest.raises(RuntimeError, match="FXGraphDrawer requires the pydot package"):
            fx_graph_drawer.FxGraphDrawer(torch.fx.symbolic_trace(lambda x: x + 1), "g")
    drawer_module = _torch_fx_graph_drawer_with(_recording_pydot(), monkeypatch)

    theirs, ours = both(lambda x: torch.relu(x) * 3)
    fx_shape_prop.ShapeProp(theirs).propagate(torch.randn(2, 5))
    ShapeProp(ours).propagate(torch.randn(2, 5))
    dot = drawer_module.FxGraphDrawer(theirs, "g").get_dot_graph()
    fx_label = next(node.label for node in dot.nodes if node.name == "mul")
    assert "|args=(3,)|" in fx_label and "|shape=(2, 5)" in fx_label

    mul = next(node for node in ours.graph.nodes if node.name == "mul")
    assert describe_node(mul) == "mul\ncall_function operator.mul"
    assert '    n2["mul<br/>call_function operator.mul"]\n' in to_mermaid(ours)


def test_torch_fx_has_no_mermaid_output():
    """torch.fx has no Mermaid output."""
    fx_root = pathlib.Path(torch.fx.__file__).parent
    mentions = [path for path in fx_root.rglob("*.py") if "mermaid" in path.read_text().lower()]
    assert mentions == []
    assert "flowchart TD" in to_mermaid(minifx.symbolic_trace(lambda x: x + 1))


def test_a_list_or_dict_value_gets_the_plain_type_where_torch_fx_records_an_immutable_one():
    """A node whose value is a list or a dict gets `type` `list` or `dict`; torch.fx records
    `immutable_list` or `immutable_dict`, since its Interpreter passes and returns its
    immutable containers (chapter 4)."""
    for program, kind in [
        (lambda x: {"out": x.relu(), "aux": [x, x * 2]}, "dict"),
        (lambda x: [x.relu(), x * 2], "list"),
    ]:
        theirs, ours = both(program)
        fx_shape_prop.ShapeProp(theirs).propagate(torch.randn(2, 3))
        ShapeProp(ours).propagate(torch.randn(2, 3))
        fx_output, output = theirs.graph.output_node(), list(ours.graph.nodes)[-1]
        assert fx_output.meta["type"].__name__ == f"immutable_{kind}"
        assert output.meta["type"].__name__ == kind
        assert repr(output.meta["tensor_meta"]) == repr(fx_output.meta["tensor_meta"])
