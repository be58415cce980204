"""Grader for exercise 5.2: draw the shapes.

Two oracles: golden drawings of small models, written out; and, on real models,
labels built here from the values an Interpreter computes (not from the
metadata), which the drawing made from ShapeProp's metadata must show.
"""

from __future__ import annotations

import operator

import pytest
import torch
from torch import nn

from minifx.codegen import symbolic_trace
from minifx.interpreter import Interpreter
from minifx.passes.draw import describe_node, to_mermaid
from minifx.passes.shape_prop import ShapeProp, TensorMetadata
from tests.graders.support import explain, explain_texts
from tests.models import MLP, EncoderBlock, MobileNetish, ResNet18

pytestmark = pytest.mark.ch5

SEE = "chapters/05-shape-prop.md#exercise-52-draw-the-shapes"
HINT = ("draw_shapes is to_mermaid(gm, node_label=...) with a label of describe_node(node), a "
        "newline, then describe_value(node): '[4, 32] float32' for a tensor, the same structure "
        "for tuples/lists/dicts, the type's name (int) for a value without tensors.")


@pytest.fixture
def ex(impl):
    return impl.load("ch5_draw_shapes")


def meta(shape: tuple, dtype: torch.dtype) -> TensorMetadata:
    return TensorMetadata(torch.Size(shape), dtype, False, (), torch.contiguous_format, False, {})


@pytest.mark.parametrize("shape, dtype, want", [
    ((4, 32), torch.float32, "[4, 32] float32"),
    ((), torch.float16, "[] float16"),
    ((2, 0, 3), torch.bool, "[2, 0, 3] bool"),
    ((1, 8, 4, 4), torch.quint8, "[1, 8, 4, 4] quint8"),
])
def test_describe_tensor(ex, shape, dtype, want):
    got = ex.describe_tensor(meta(shape, dtype))
    assert got == want, explain(repr(want), repr(got),
                                "f'{list(meta.shape)} {dtype}', the dtype without 'torch.'", SEE)


def test_describe_meta_of_structures(ex):
    a, b = meta((3, 5), torch.float32), meta((2,), torch.int64)
    cases = [((a, b), "([3, 5] float32, [2] int64)"),
             ([a, {"rows": 6, "mask": b}], "[[3, 5] float32, {'rows': 6, 'mask': [2] int64}]"),
             ((a, None), "([3, 5] float32, None)")]
    got = [ex.describe_meta(value) for value, _ in cases]
    want = [text for _, text in cases]
    assert got == want, explain(repr(want), repr(got),
                                "recurse into tuples (), lists [] and dicts {key!r: ...}; other "
                                "leaves by repr. A TensorMetadata is a tuple too: test it first.", SEE)


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, stride=2, padding=1)

    def forward(self, x):
        y = self.conv(x)
        a, b = y.chunk(2, dim=1)
        return (a * b).flatten(1), y.size(0)


GOLDEN_BLOCK = """\
flowchart TD
    n0(["x<br/>placeholder<br/>[2, 3, 8, 8] float32"])
    n1["conv<br/>call_module conv<br/>[2, 4, 4, 4] float32"]
    n2["chunk<br/>call_method chunk<br/>([2, 2, 4, 4] float32, [2, 2, 4, 4] float32)"]
    n3["getitem<br/>call_function operator.getitem<br/>[2, 2, 4, 4] float32"]
    n4["getitem_1<br/>call_function operator.getitem<br/>[2, 2, 4, 4] float32"]
    n5["mul<br/>call_function operator.mul<br/>[2, 2, 4, 4] float32"]
    n6["flatten<br/>call_method flatten<br/>[2, 32] float32"]
    n7["size<br/>call_method size<br/>int"]
    n8[["output<br/>output<br/>([2, 32] float32, 2)"]]
    n0 --> n1
    n1 --> n2
    n2 --> n3
    n2 --> n4
    n3 --> n5
    n4 --> n5
    n5 --> n6
    n1 --> n7
    n6 --> n8
    n7 --> n8
"""


def test_golden_drawing(ex):
    gm = symbolic_trace(Block())
    ShapeProp(gm).propagate(torch.randn(2, 3, 8, 8))
    got = ex.draw_shapes(gm)
    assert got == GOLDEN_BLOCK, explain_texts("draw_shapes of a conv, chunk, mul block",
                                              GOLDEN_BLOCK, got, HINT, SEE, kind="drawing")


class ValueLabels(Interpreter):
    """The label each node's value should get, from the value itself."""

    def __init__(self, gm: nn.Module) -> None:
        super().__init__(gm)
        self.labels: dict[str, str] = {}

    def run_node(self, n):
        value = super().run_node(n)
        self.labels[n.name] = _label(value)
        return value


def _label(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"{list(value.shape)} {str(value.dtype)[len('torch.'):]}"
    if isinstance(value, (tuple, list)) and any(isinstance(v, torch.Tensor) for v in value):
        inner = ", ".join(_label(v) if isinstance(v, torch.Tensor) else repr(v) for v in value)
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    return type(value).__name__


MODELS = {
    "resnet18": (ResNet18, (2, 3, 32, 32)),
    "mobilenetish": (MobileNetish, (2, 3, 16, 16)),
    "encoder_block": (EncoderBlock, (2, 5, 32)),
    "mlp": (MLP, (4, 32)),
}


@pytest.mark.parametrize("name", MODELS)
def test_labels_on_real_models(ex, name, device):
    factory, shape = MODELS[name]
    torch.manual_seed(0)
    gm = symbolic_trace(factory().to(device).eval())
    x = torch.randn(shape, device=device)
    ShapeProp(gm).propagate(x)
    values = ValueLabels(gm)
    values.run(x)
    want = to_mermaid(gm, node_label=lambda n: f"{describe_node(n)}\n{values.labels[n.name]}")
    got = ex.draw_shapes(gm)
    assert got == want, explain_texts(f"draw_shapes of {name} on {device}", want, got, HINT, SEE,
                                      kind="drawing")


def test_drawing_without_shape_prop_is_a_clear_error(ex):
    gm = symbolic_trace(Block())
    with pytest.raises(ValueError) as info:
        ex.draw_shapes(gm)
    want = ("draw_shapes: node %x has no shape metadata (node.meta['type'] is missing): "
            "run ShapeProp(gm).propagate(*example_inputs) before drawing.")
    assert str(info.value) == want, explain(repr(want), repr(str(info.value)),
                                            "raise missing_metadata(node) when 'type' is not in "
                                            "node.meta.", SEE)


def test_a_node_added_after_shape_prop_is_named(ex):
    gm = symbolic_trace(Block())
    ShapeProp(gm).propagate(torch.randn(2, 3, 8, 8))
    mul = next(n for n in gm.graph.nodes if n.name == "mul")
    with gm.graph.inserting_after(mul):
        doubled = gm.graph.call_function(operator.add, (mul, mul))
    mul.replace_all_uses_with(doubled, delete_user_cb=lambda user: user is not doubled)
    with pytest.raises(ValueError) as info:
        ex.draw_shapes(gm)
    assert "node %add has no shape metadata" in str(info.value), explain(
        "a ValueError naming %add, the node inserted after ShapeProp ran", repr(str(info.value)),
        "check every node, not only the first one.", SEE)
