"""Whole models, written the way torchvision and common Transformer code write them.

Each is traced with minifx's and torch.fx's default Tracer; the printed graphs
must be identical, and minifx's graph must pass `lint()`.
"""

import pytest
import torch
import torch.fx

import minifx.graph
from tests.models import EncoderBlock, MobileNetish, ResNet18, WithTransformerEncoder

pytestmark = pytest.mark.ch2

MODELS = {
    "resnet18": ResNet18,
    "encoder_block": EncoderBlock,
    "mobilenetish": MobileNetish,
    "transformer_encoder_leaf": WithTransformerEncoder,
}


@pytest.mark.parametrize("name", MODELS)
def test_model_prints_like_torch_fx(name):
    ours = minifx.graph.Tracer().trace(MODELS[name]())
    theirs = torch.fx.Tracer().trace(MODELS[name]())
    assert str(ours) == str(theirs)
    ours.lint()


def test_resnet18_has_the_expected_shape_of_graph():
    graph = minifx.graph.Tracer().trace(ResNet18())
    ops = [node.op for node in graph.nodes]
    # 20 convolutions, 20 batch norms, 4 downsample paths folded in, one fc.
    modules = [node.target for node in graph.nodes if node.op == "call_module"]
    assert sum(".conv" in m or m == "conv1" or m.endswith("downsample.0") for m in modules) == 20
    assert ops.count("placeholder") == 1 and ops[-1] == "output"
    assert "layer4_1_relu_1" in [node.name for node in graph.nodes]
