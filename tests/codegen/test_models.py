"""Whole models through stage 3: code like torch.fx's, outputs like eager mode.

Each model of `tests/models.py` is traced with `minifx.symbolic_trace`. The
generated code must be torch.fx's byte for byte; the GraphModule, and the
GraphModule traced again, must return what the model returns, on CPU and on
CUDA where there is one; in training mode too, where dropout draws random
numbers (the same ones, given the same seed).
"""

from __future__ import annotations

from typing import Callable

import pytest
import torch
import torch.fx

import minifx.codegen
from tests.models import MLP, EncoderBlock, MobileNetish, ResNet18, ResNet50, WithTransformerEncoder
from tests.oracle import SEED, model_and_input

pytestmark = pytest.mark.ch3

# name -> (a fresh model, the shape of its input)
MODELS: dict[str, tuple[Callable[[], torch.nn.Module], tuple[int, ...]]] = {
    "resnet50_width16": (lambda: ResNet50(num_classes=10, width=16), (2, 3, 32, 32)),
    "resnet18": (ResNet18, (2, 3, 32, 32)),
    "mlp": (MLP, (4, 32)),
    "encoder_block": (EncoderBlock, (2, 5, 32)),
    "mobilenetish": (MobileNetish, (2, 3, 16, 16)),
    "transformer_encoder_leaf": (WithTransformerEncoder, (2, 5, 32)),
}
WITH_DROPOUT = ["mlp", "encoder_block", "transformer_encoder_leaf"]


def seeded(fn: Callable, x: torch.Tensor) -> torch.Tensor:
    """`fn(x)` right after seeding torch's generators, so dropout draws the same numbers."""
    torch.manual_seed(SEED)
    with torch.no_grad():
        return fn(x)


@pytest.mark.parametrize("name", MODELS)
def test_code_is_torch_fx_code(name: str):
    factory, _ = MODELS[name]
    assert minifx.codegen.symbolic_trace(factory()).code == torch.fx.symbolic_trace(factory()).code


@pytest.mark.parametrize("name", MODELS)
def test_eval_outputs_equal_eager(name: str, device: str):
    model, x = model_and_input(MODELS, name, device)
    gm = minifx.codegen.symbolic_trace(model)
    torch.testing.assert_close(seeded(gm, x), seeded(model, x))


@pytest.mark.parametrize("name", MODELS)
def test_retraced_graph_module_equals_graph_module_and_eager(name: str, device: str):
    model, x = model_and_input(MODELS, name, device)
    gm = minifx.codegen.symbolic_trace(model)
    retraced = minifx.codegen.symbolic_trace(gm)
    retraced.graph.lint()
    assert str(retraced.graph) == str(gm.graph)
    assert retraced.code == gm.code
    expected = seeded(model, x)
    torch.testing.assert_close(seeded(gm, x), expected)
    torch.testing.assert_close(seeded(retraced, x), expected)


@pytest.mark.parametrize("name", WITH_DROPOUT)
def test_training_outputs_with_dropout_equal_eager_under_one_seed(name: str, device: str):
    model, x = model_and_input(MODELS, name, device, training=True)
    gm = minifx.codegen.symbolic_trace(model)
    assert gm.training
    torch.testing.assert_close(seeded(gm, x), seeded(model, x))
    # Dropout really is active: without reseeding, two calls differ.
    with torch.no_grad():
        assert not torch.equal(gm(x), gm(x))


def test_full_width_resnet50_runs_like_eager(device: str):
    """torchvision's width (64 channels after the stem) on a small image; a few seconds."""
    torch.manual_seed(SEED)
    model = ResNet50(num_classes=10).to(device).eval()
    x = torch.randn(1, 3, 32, 32, device=device)
    gm = minifx.codegen.symbolic_trace(model)
    assert gm.code == torch.fx.symbolic_trace(model).code
    torch.testing.assert_close(seeded(gm, x), seeded(model, x))
