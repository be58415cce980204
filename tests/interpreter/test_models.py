"""Whole models through stage 4, on CPU and on CUDA where there is one.

For each model of `tests/models.py` (eval mode): `Interpreter(gm).run(x)`
returns what the model and its GraphModule return; the Transformer's copy has
torch.fx's Transformer's code and runs like the model; torch.fx's Interpreter
agrees. Shapes are small, so the whole file takes a few seconds.
"""

from __future__ import annotations

from typing import Callable

import pytest
import torch
import torch.fx

import minifx
from minifx.interpreter import Interpreter, Transformer
from tests.models import MLP, EncoderBlock, MobileNetish, ResNet18, ResNet50
from tests.oracle import model_and_input

pytestmark = pytest.mark.ch4

# name -> (a fresh model, the shape of its input)
MODELS: dict[str, tuple[Callable[[], torch.nn.Module], tuple[int, ...]]] = {
    "resnet50_width8": (lambda: ResNet50(num_classes=10, width=8), (1, 3, 32, 32)),
    "resnet18": (ResNet18, (2, 3, 32, 32)),
    "mlp": (MLP, (4, 32)),
    "encoder_block": (EncoderBlock, (2, 5, 32)),
    "mobilenetish": (MobileNetish, (2, 3, 16, 16)),
}


@pytest.mark.parametrize("name", MODELS)
def test_interpreter_equals_eager_and_graph_module(name: str, device: str):
    model, x = model_and_input(MODELS, name, device)
    gm = minifx.symbolic_trace(model)
    with torch.no_grad():
        expected = model(x)
        from_code = gm(x)
        interpreted = Interpreter(gm).run(x)
        kept = Interpreter(gm, garbage_collect_values=False).run(x)
    assert interpreted.device == x.device
    torch.testing.assert_close(interpreted, from_code)
    torch.testing.assert_close(interpreted, expected)
    torch.testing.assert_close(kept, expected)


@pytest.mark.parametrize("name", MODELS)
def test_interpreter_equals_torch_fx_interpreter(name: str, device: str):
    model, x = model_and_input(MODELS, name, device)
    with torch.no_grad():
        ours = Interpreter(minifx.symbolic_trace(model)).run(x)
        theirs = torch.fx.Interpreter(torch.fx.symbolic_trace(model)).run(x)
    torch.testing.assert_close(ours, theirs)


@pytest.mark.parametrize("name", MODELS)
def test_transformer_copy_is_torch_fx_copy_and_runs_like_eager(name: str, device: str):
    model, x = model_and_input(MODELS, name, device)
    gm = minifx.symbolic_trace(model)
    new = Transformer(gm).transform()
    theirs = torch.fx.Transformer(torch.fx.symbolic_trace(model)).transform()
    new.graph.lint()
    assert str(new.graph) == str(theirs.graph)
    assert new.code == theirs.code
    assert new.code == gm.code
    with torch.no_grad():
        torch.testing.assert_close(new(x), model(x))
        torch.testing.assert_close(new(x), theirs(x))
        torch.testing.assert_close(Interpreter(new).run(x), model(x))
