"""minifx.passes.quantize's convert, graded as build task 8.2: the graph it writes, and its
numbers against torch's own int8 modules (torch.ao.nn.quantized) put together in the same
order with the same scales (tests/passes/quantization_oracle.py says why not `convert_fx`).

The models are defined here: a task's tests import helpers only, never examples/ nor other
test files (the grading harness stages a task's test files with the helpers beside them).
prepare, the observers (task 8.1) and the int8 kernels are the reference's.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from minifx.codegen import GraphModule, symbolic_trace
from minifx.interpreter import Interpreter
from minifx.passes.quantize import (
    MinMaxObserver,
    QuantizedConv2d,
    QuantizedLinear,
    convert,
    prepare,
)
from tests.passes.quantization_oracle import CONVERTED_FOUR_LINEARS, int8_layer, quantize_per_tensor

pytestmark = [pytest.mark.ch8, pytest.mark.task("8.2")]


class Chain(nn.Module):
    """fc1 and an nn.ReLU (one int8 op), fc2 and fc3 (int8 to int8), a float SELU, fc4."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.relu = nn.Linear(12, 24), nn.ReLU()
        self.fc2, self.fc3, self.fc4 = nn.Linear(24, 24), nn.Linear(24, 24), nn.Linear(24, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc4(torch.selu(self.fc3(self.fc2(self.relu(self.fc1(x))))))


class Convs(nn.Module):
    """A conv and its relu (fused), a strided conv, a grouped dilated one, a float mean."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 6, 3, padding=1)
        self.down = nn.Conv2d(6, 8, 3, stride=2, padding=1, bias=False)
        self.grouped = nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=2)
        self.head = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.stem(x))
        x = self.grouped(self.down(x)).relu()
        return self.head(x.mean((2, 3)))


class Branches(nn.Module):
    """fc1's int8 value is read by fc2 (int8) and by a SELU (float); x by fc1 and an add."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x)
        return self.fc2(h) + torch.selu(h) + x


def calibrated(model: nn.Module, shape: tuple[int, ...]) -> tuple[GraphModule, list[torch.Tensor]]:
    """`prepare(model)` after four calibration batches of `shape`, and the batches."""
    torch.manual_seed(0)
    batches = [torch.randn(shape) for _ in range(4)]
    prepared = prepare(model)
    with torch.no_grad():
        for batch in batches:
            prepared(batch)
    return prepared, batches


def relative_error(output: torch.Tensor, reference: torch.Tensor) -> float:
    return ((output - reference).norm() / reference.norm()).item()


def test_int8_ops_get_a_quantize_before_them_and_a_dequantize_before_float_users():
    prepared, _ = calibrated(Chain().eval(), (16, 12))
    converted = convert(prepared)
    assert str(converted.graph) == CONVERTED_FOUR_LINEARS
    assert all(isinstance(getattr(converted, f"fc{i}"), QuantizedLinear) for i in range(1, 5))
    assert [getattr(converted, f"fc{i}").relu for i in range(1, 5)] == [True, False, False, False]
    assert not any(isinstance(m, (MinMaxObserver, nn.ReLU)) for m in converted.modules())
    # Each quantize and dequantize uses the scale and zero point its value was observed with.
    observed = dict(prepared.named_modules())
    for name in ("x", "selu"):
        scale, zero_point = observed[f"{name}_observer"].calculate_qparams()
        assert getattr(converted, f"{name}_scale").item() == pytest.approx(scale, rel=1e-7)
        assert getattr(converted, f"{name}_zero_point").item() == zero_point
    for name in ("fc3", "fc4"):
        layer = getattr(converted, name)
        assert getattr(converted, f"{name}_scale").item() == pytest.approx(layer.scale, rel=1e-7)
        assert getattr(converted, f"{name}_zero_point").item() == layer.zero_point


def observed(prepared: GraphModule) -> dict[str, tuple[float, int]]:
    """`{value name: (scale, zero point)}` from each observer of `prepared`."""
    return {
        name.removesuffix("_observer"): module.calculate_qparams()
        for name, module in prepared.named_children()
        if isinstance(module, MinMaxObserver)
    }


def test_linears_compute_what_torch_s_int8_modules_compute_bit_for_bit():
    model = Chain().eval()
    prepared, _ = calibrated(model, (16, 12))
    ours, qparams = convert(prepared), observed(prepared)
    # The same int8 path out of torch.ao's modules, in the scales the observers give.
    fc1 = int8_layer(model.fc1, True, qparams["relu"])
    fc2, fc3, fc4 = (
        int8_layer(getattr(model, f"fc{i}"), False, qparams[f"fc{i}"]) for i in (2, 3, 4)
    )
    x = torch.randn(8, 12)
    with torch.no_grad():
        h = fc3(fc2(fc1(quantize_per_tensor(x, qparams["x"]))))
        h = quantize_per_tensor(torch.selu(h.dequantize()), qparams["selu"])
        assert torch.equal(ours(x), fc4(h).dequantize())
        assert relative_error(ours(x), model(x)) < 0.1


def test_convs_become_int8_convs_that_compute_what_torch_s_compute():
    model = Convs().eval()
    prepared, _ = calibrated(model, (2, 3, 10, 10))
    ours, qparams = convert(prepared), observed(prepared)
    assert [type(ours.get_submodule(n)) for n in ("stem", "down", "grouped")] == [
        QuantizedConv2d
    ] * 3
    assert [ours.get_submodule(n).relu for n in ("stem", "down", "grouped")] == [True, False, True]
    stem = int8_layer(model.stem, True, qparams["relu"])
    down = int8_layer(model.down, False, qparams["down"])
    grouped = int8_layer(model.grouped, True, qparams["relu_1"])
    head = int8_layer(model.head, False, qparams["head"])
    x = torch.randn(2, 3, 10, 10)
    with torch.no_grad():
        h = grouped(down(stem(quantize_per_tensor(x, qparams["x"]))))
        h = quantize_per_tensor(h.dequantize().mean((2, 3)), qparams["mean"])
        assert torch.equal(ours(x), head(h).dequantize())
        assert relative_error(ours(x), model(x)) < 0.05


def test_a_value_read_by_float_and_int8_ops_reaches_each_in_its_form():
    model = Branches().eval()
    prepared, _ = calibrated(model, (16, 8))
    converted = convert(prepared)
    assert (
        str(converted.graph)
        == """\
graph():
    %x : 'torch.Tensor' [num_users=2] = placeholder[target=x]
    %x_scale : [num_users=1] = get_attr[target=x_scale]
    %x_zero_point : [num_users=1] = get_attr[target=x_zero_point]
    %quantize : [num_users=1] = call_function[target=minifx.passes.int8.quantize](args = (%x, %x_scale, %x_zero_point), kwargs = {})
    %fc1 : [num_users=2] = call_module[target=fc1](args = (%quantize,), kwargs = {})
    %fc1_scale : [num_users=1] = get_attr[target=fc1_scale]
    %fc1_zero_point : [num_users=1] = get_attr[target=fc1_zero_point]
    %dequantize : [num_users=1] = call_function[target=minifx.passes.int8.dequantize](args = (%fc1, %fc1_scale, %fc1_zero_point), kwargs = {})
    %fc2 : [num_users=1] = call_module[target=fc2](args = (%fc1,), kwargs = {})
    %fc2_scale : [num_users=1] = get_attr[target=fc2_scale]
    %fc2_zero_point : [num_users=1] = get_attr[target=fc2_zero_point]
    %dequantize_1 : [num_users=1] = call_function[target=minifx.passes.int8.dequantize](args = (%fc2, %fc2_scale, %fc2_zero_point), kwargs = {})
    %selu : [num_users=1] = call_function[target=torch.selu](args = (%dequantize,), kwargs = {})
    %add : [num_users=1] = call_function[target=operator.add](args = (%dequantize_1, %selu), kwargs = {})
    %add_1 : [num_users=1] = call_function[target=operator.add](args = (%add, %x), kwargs = {})
    return add_1"""
    )
    x = torch.randn(4, 8)
    assert relative_error(converted(x), model(x)) < 0.05


def test_the_converted_graph_lints_and_runs_the_same_interpreted():
    prepared, _ = calibrated(Convs().eval(), (2, 3, 10, 10))
    converted = convert(prepared)
    converted.graph.lint()
    x = torch.randn(2, 3, 10, 10)
    with torch.no_grad():
        assert torch.equal(Interpreter(converted).run(x), converted(x))


def test_convert_leaves_the_prepared_module_as_it_was():
    model = Chain().eval()
    prepared, _ = calibrated(model, (16, 12))
    before = str(prepared.graph)
    convert(prepared)
    assert str(prepared.graph) == before
    x = torch.randn(4, 12)
    with torch.no_grad():
        assert torch.equal(prepared(x), model(x))


def test_a_model_with_nothing_to_quantize_keeps_its_graph():
    model = nn.Sequential(nn.ReLU(), nn.Softmax(-1)).eval()
    prepared, _ = calibrated(model, (2, 5))
    assert str(convert(prepared).graph) == str(symbolic_trace(model).graph)
