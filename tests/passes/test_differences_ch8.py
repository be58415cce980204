"""Every claim of chapter 8's "Differences from torch.fx" box, checked against PyTorch.

torch.fx has no quantization of its own; the box compares minifx with PyTorch's FX
graph-mode quantization, `torch.ao.quantization.quantize_fx`, built on torch.fx. Each
test runs it as well as minifx, so that a claim that stops being true (a new torch, a
changed minifx) fails here instead of misleading the reader. One test per claim, in the
box's order; each docstring quotes its claim.

The chapter's other claims about PyTorch are pinned in tests/passes/test_observers.py,
test_int8.py and test_quantize.py:

- "`calculate_qparams` computes in float32 as PyTorch's `MinMaxObserver` does ... both give
  the same scale and zero point for every scheme": test_qparams_equal_torch_ao_observers
- the int8 kernels write the integers PyTorch's quantized kernels write:
  test_linear_writes_the_integers_quantized_linear_writes,
  test_conv2d_writes_the_integers_quantized_conv2d_writes
- "compare the whole pipeline with PyTorch's `prepare_fx` / `convert_fx` under the same
  scheme: the same scales and zero points, and the same outputs":
  test_same_scales_and_close_outputs_as_torch_ao
- minifx's refusals, each with its message: test_prepare_refuses_a_training_mode_model,
  test_prepare_refuses_a_linear_called_twice, test_convert_before_calibration_says_to_calibrate,
  test_convert_off_the_cpu_says_int8_kernels_are_cpu_only,
  test_convert_refuses_a_graph_edited_after_prepare; a Conv2d with `padding="same"` or another
  padding mode stays float: test_convs_the_int8_kernels_cannot_run_stay_float
"""

from __future__ import annotations

import copy
import inspect
import pathlib
import re
import warnings

import pytest
import torch
import torch.ao.nn.quantized as nnq
import torch.ao.quantization as ao
import torch.fx
import torch.nn.functional as F
from torch import nn
from torch.ao.quantization import quantize_fx

import minifx.passes.quantize as minifx_quantize
from examples.ch8_quantization import MLP
from minifx.codegen import symbolic_trace
from minifx.passes.quantize import (
    ACTIVATION,
    MinMaxObserver,
    QuantizedConv2d,
    QuantizedLinear,
    convert,
    prepare,
)
from tests.passes.quantization_oracle import torch_ao

pytestmark = [
    pytest.mark.ch8,
    pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning"),
    pytest.mark.filterwarnings("ignore:torch.ao.quantization is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:Please use quant_min and quant_max:UserWarning"),
    pytest.mark.filterwarnings("ignore:must run observer before calling calculate_qparams"),
]


def calibrated(model: nn.Module, batches: list[torch.Tensor]):
    """minifx's prepare and convert of `model`, calibrated on `batches`."""
    prepared = prepare(model)
    with torch.no_grad():
        for batch in batches:
            prepared(batch)
    return prepared, convert(prepared)


def test_torch_fx_has_no_quantization_and_torch_aos_is_built_on_it_and_deprecated():
    """torch.fx itself has no quantization; PyTorch's is `torch.ao.quantization.quantize_fx`
    (`prepare_fx`, `convert_fx`), built on torch.fx, which torch 2.13 marks deprecated."""
    fx_root = pathlib.Path(torch.fx.__file__).parent
    assert [p for p in fx_root.rglob("*") if "quant" in p.name.lower()] == []
    x = torch.randn(4, 16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prepared = quantize_fx.prepare_fx(MLP().eval(), _mapping(), example_inputs=(x,))
    prepared(x)
    assert isinstance(prepared, torch.fx.GraphModule)
    assert isinstance(quantize_fx.convert_fx(prepared), torch.fx.GraphModule)
    assert any(
        issubclass(w.category, DeprecationWarning)
        and str(w.message).startswith("torch.ao.quantization is deprecated")
        for w in caught
    )


def test_one_scheme_where_torch_aos_x86_default_uses_histograms_and_per_channel_weights():
    """**One scheme.** minifx always uses per-tensor min/max observers (activations quint8
    affine in 0..127, weights qint8 symmetric). `prepare_fx` takes a `QConfigMapping` and a
    `BackendConfig`; its x86 default uses a histogram observer for activations and per-channel
    weights."""
    assert MinMaxObserver(**ACTIVATION).quant_range == (0, 127)
    assert ACTIVATION["dtype"] is torch.quint8 and minifx_quantize.WEIGHT["dtype"] is torch.qint8
    assert minifx_quantize.WEIGHT["qscheme"] is torch.per_tensor_symmetric
    parameters = list(inspect.signature(quantize_fx.prepare_fx).parameters)
    assert {"qconfig_mapping", "backend_config"} <= set(parameters)
    default = ao.get_default_qconfig_mapping("x86").global_qconfig
    activation, weight = default.activation(), default.weight()
    assert isinstance(activation, ao.HistogramObserver) and isinstance(
        weight, ao.PerChannelMinMaxObserver
    )
    # The chapter: "minifx's choice is the one PyTorch's x86 backend expects" (dtypes and ranges).
    assert (activation.dtype, activation.quant_min, activation.quant_max) == (torch.quint8, 0, 127)
    assert (weight.dtype, weight.qscheme) == (torch.qint8, torch.per_channel_symmetric)


class Functional(nn.Module):
    """A convolution and a Linear written as functions, between ops with no weights."""

    def __init__(self) -> None:
        super().__init__()
        self.conv_weight, self.conv_bias = (
            nn.Parameter(torch.randn(4, 3, 3, 3)),
            nn.Parameter(torch.randn(4)),
        )
        self.fc_weight, self.fc_bias = (
            nn.Parameter(torch.randn(5, 32)),
            nn.Parameter(torch.randn(5)),
        )

    def forward(self, x):
        # torch.ao's prepacked int8 conv needs stride, padding and dilation spelled as lists.
        y = F.conv2d(x, self.conv_weight, self.conv_bias, [1, 1], [0, 0], [1, 1], 1)
        y = F.max_pool2d(y.relu(), 2)
        a, b = torch.flatten(y, 1), y.flatten(1)
        h = F.linear(torch.cat([a, a], 1), self.fc_weight, self.fc_bias)
        return h + 1, torch.relu(b.mean(1))


def torch_fx_values(gm: nn.Module, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """Each node's value, by node name, for one run of `gm` (a torch.fx GraphModule)."""
    values = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, node):
            values[node.name] = super().run_node(node)
            return values[node.name]

    Recorder(gm).run(x)
    return values


def minifx_values(gm: nn.Module, x: torch.Tensor) -> list[torch.Tensor]:
    """Every tensor a minifx GraphModule computes for `x`."""
    from minifx.interpreter import Interpreter

    values = []

    class Recorder(Interpreter):
        def run_node(self, node):
            value = super().run_node(node)
            values.extend(
                v
                for v in (value if isinstance(value, tuple) else (value,))
                if isinstance(v, torch.Tensor)
            )
            return value

    Recorder(gm).run(x)
    return values


def test_only_linear_and_conv2d_modules_run_in_int8_where_torch_ao_quantizes_more():
    """**Only `nn.Linear` and `nn.Conv2d` modules run in int8.** Everything else runs in float
    between a dequantize and a quantize. torch.ao also quantizes `F.linear`, `F.conv2d`, `add`,
    `cat`, ..., and runs some ops directly on int8 tensors, keeping their input's scale:
    `x.relu()`, `torch.flatten`, `mean` and max-pooling among them (not `torch.relu` or
    `x.flatten()`)."""
    torch.manual_seed(0)
    model, x = Functional().eval(), torch.randn(2, 3, 6, 6)
    _, theirs = torch_ao(model, [x])
    targets = {n.name: n.target for n in theirs.graph.nodes}
    assert (targets["conv2d"], targets["linear"], targets["add_1"]) == (
        torch.ops.quantized.conv2d,
        torch.ops.quantized.linear,
        torch.ops.quantized.add,
    )
    values = torch_fx_values(theirs, x)
    assert values["cat"].is_quantized
    kept_scale = {
        "relu": "conv2d",
        "max_pool2d": "relu",
        "flatten": "max_pool2d",
        "mean": "quantize_per_tensor_6",
    }
    for op, source in kept_scale.items():
        assert values[op].is_quantized and values[op].q_scale() == values[source].q_scale(), op
    assert (
        not values["relu_1"].is_quantized and not values["flatten_1"].is_quantized
    )  # torch.relu, x.flatten()

    ours_prepared, ours = calibrated(model, [x])
    assert str(ours_prepared.graph) == str(ours.graph) == str(symbolic_trace(model).graph)
    assert not any(value.is_quantized for value in minifx_values(ours, x))


SPELLINGS = {
    "nn.ReLU": lambda m, y: m.relu(y),
    "F.relu": lambda m, y: F.relu(y),
    "torch.relu": lambda m, y: torch.relu(y),
    "x.relu()": lambda m, y: y.relu(),
}


class LayerThenRelu(nn.Module):
    def __init__(self, layer: nn.Module, spelling: str) -> None:
        super().__init__()
        self.layer, self.relu, self.spelling = layer, nn.ReLU(), spelling

    def forward(self, x):
        return SPELLINGS[self.spelling](self, self.layer(x))


@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("layer", ["linear", "conv2d"])
def test_minifx_fuses_every_relu_spelling_torch_ao_only_nn_relu_and_f_relu(layer, spelling):
    """**Fusion** of a Linear or Conv2d with a relu that is its only user, in any spelling
    (`nn.ReLU`, `torch.relu`, `F.relu`, `x.relu()`). torch.ao fuses by pattern before observing
    (`LinearReLU`, `ConvReLU2d` modules), and only `nn.ReLU` and `F.relu`: after `torch.relu` or
    `x.relu()` its layer writes its output in the scale of the values before the relu, so the two
    differ there by one scale."""
    torch.manual_seed(0)
    make, shape = {
        "linear": (lambda: nn.Linear(4, 4), (2, 4)),
        "conv2d": (lambda: nn.Conv2d(4, 4, 1), (2, 4, 3, 3)),
    }[layer]
    model, x = LayerThenRelu(make(), spelling).eval(), torch.randn(shape)
    _, theirs = torch_ao(model, [x])
    _, ours = calibrated(model, [x])
    assert isinstance(ours.layer, (QuantizedLinear, QuantizedConv2d)) and ours.layer.relu
    fused_by_torch_ao = spelling in ("nn.ReLU", "F.relu")
    fused_type = {"linear": "LinearReLU", "conv2d": "ConvReLU2d"}[layer]
    assert (type(theirs.layer).__name__ == fused_type) == fused_by_torch_ao
    # Unfused, torch.ao's layer writes its output in the scale of the values before the relu.
    assert (float(theirs.layer.scale) == ours.layer.scale) == fused_by_torch_ao


def test_observer_and_parameter_names_and_module_types_differ_from_torch_aos():
    """**Names.** Observers are `<value>_observer`, and the scale and zero point of a value where
    float meets int8 are `<value>_scale` / `<value>_zero_point`; torch.ao names them `activation_post_process_<n>` and `_scale_<n>` /
    `<module>_input_scale_<n>`. Its converted modules are `torch.nnq.Linear` and
    friends; minifx's are `QuantizedLinear` / `QuantizedConv2d` with a `relu` flag."""
    torch.manual_seed(0)
    model, batches = MLP().eval(), [torch.randn(4, 16)]
    ao_prepared, theirs = torch_ao(model, batches)
    ours_prepared, ours = calibrated(model, batches)
    ao_observers = [n for n, m in ao_prepared.named_children() if isinstance(m, ao.ObserverBase)]
    assert ao_observers and all(
        re.fullmatch(r"activation_post_process_\d+", n) for n in ao_observers
    )
    assert all(
        n.endswith("_observer")
        for n, m in ours_prepared.named_children()
        if isinstance(m, MinMaxObserver)
    )
    ao_scales = [n.target for n in theirs.graph.nodes if n.op == "get_attr" and "scale" in n.target]
    assert {"fc1_input_scale_0", "_scale_0"} <= set(ao_scales)
    assert all(re.fullmatch(r"(\w+_input)?_scale_\d+", name) for name in ao_scales)
    assert [n.target for n in ours.graph.nodes if n.op == "get_attr" and "scale" in n.target] == [
        "x_scale",
        "fc3_scale",
        "selu_scale",
        "fc4_scale",
    ]
    assert isinstance(theirs.fc2, nnq.Linear)
    assert isinstance(ours.fc2, QuantizedLinear) and not ours.fc2.relu and ours.fc1.relu


def test_torch_ao_runs_deprecated_quantized_tensors_where_minifx_runs_plain_integers():
    """**Kernels.** torch.ao's converted model holds quantized tensors (`torch.quint8`,
    `torch.qint8`), whose creation torch 2.13 deprecates, and calls `quantized::linear` /
    `quantized::conv2d`; minifx's holds plain `torch.uint8` / `torch.int8` tensors, calls
    `torch._int_mm` and does the requantization in tensor arithmetic. On the same scales
    both compute the same integers."""
    torch.manual_seed(0)
    model, batches, x = MLP().eval(), [torch.randn(32, 16)], torch.randn(8, 16)
    _, theirs = torch_ao(model, batches)
    _, ours = calibrated(model, batches)
    theirs_values = torch_fx_values(
        theirs, x
    )  # torch warns once per process that these are deprecated
    assert any(node.target is torch.quantize_per_tensor for node in theirs.graph.nodes)
    assert theirs.fc2.weight().dtype == torch.qint8 and theirs_values["fc2"].dtype == torch.quint8
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours_values = minifx_values(ours, x)
    assert ours.fc2.weight.dtype == torch.int8 and not ours.fc2.weight.is_quantized
    assert {v.dtype for v in ours_values} == {
        torch.float32,
        torch.uint8,
    }  # zero points: whole float32s
    assert any(
        v.dtype == torch.uint8 and torch.equal(v, theirs_values["fc2"].int_repr())
        for v in ours_values
    )
    assert torch.equal(ours(x), theirs(x))


def test_torch_ao_accepts_what_minifx_refuses():
    """**Refusals with a message**: a model in training mode, a Linear or Conv2d called from two
    nodes, `convert` before calibration, [...]. torch.ao prepares a model in training mode, gives a
    Linear called twice one int8 module, and converts an uncalibrated model with a warning and
    default scales."""
    torch.manual_seed(0)
    x = torch.randn(4, 16)
    training = MLP()
    assert isinstance(
        quantize_fx.prepare_fx(copy.deepcopy(training), _mapping(), example_inputs=(x,)),
        torch.fx.GraphModule,
    )
    with pytest.raises(ValueError, match="training mode"):
        prepare(training)

    _, theirs = torch_ao(Twice().eval(), [torch.randn(2, 4)])
    assert [n.target for n in theirs.graph.nodes if n.op == "call_module"] == ["fc", "fc"]
    assert isinstance(theirs.fc, nnq.Linear)
    with pytest.raises(ValueError, match="called by 2 nodes"):
        prepare(Twice().eval())

    uncalibrated = quantize_fx.prepare_fx(MLP().eval(), _mapping(), example_inputs=(x,))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quantize_fx.convert_fx(uncalibrated)
    assert any(
        "must run observer before calling calculate_qparams" in str(w.message) for w in caught
    )
    with pytest.raises(RuntimeError, match="has seen no data"):
        convert(prepare(MLP().eval()))


def _mapping() -> ao.QConfigMapping:
    """minifx's scheme as a torch.ao QConfigMapping."""
    observer = ao.MinMaxObserver
    return ao.QConfigMapping().set_global(
        ao.QConfig(
            activation=observer.with_args(**ACTIVATION),
            weight=observer.with_args(**minifx_quantize.WEIGHT),
        )
    )


class Twice(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(self.fc(x))


def test_prepare_and_convert_return_copies_where_torch_aos_convert_rewrites_its_input():
    """`prepare` and `convert` both return copies (torch.ao's `convert_fx` rewrites the graph of the
    prepared module it is given)."""
    torch.manual_seed(0)
    model, batches = MLP().eval(), [torch.randn(4, 16)]
    ao_prepared = quantize_fx.prepare_fx(
        copy.deepcopy(model), _mapping(), example_inputs=(batches[0],)
    )
    ao_prepared(batches[0])
    before = str(ao_prepared.graph)
    quantize_fx.convert_fx(ao_prepared)
    assert str(ao_prepared.graph) != before and "activation_post_process" not in str(
        ao_prepared.graph
    )

    ours_prepared = prepare(model)
    ours_prepared(batches[0])
    before = str(ours_prepared.graph)
    assert convert(ours_prepared) is not ours_prepared and str(ours_prepared.graph) == before


def test_prepare_needs_no_example_inputs_where_prepare_fx_does():
    """`prepare` takes a GraphModule or traces an `nn.Module` itself, and needs no example
    inputs (`prepare_fx` does)."""
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'example_inputs'"):
        quantize_fx.prepare_fx(MLP().eval(), _mapping())
    model = MLP().eval()
    assert str(prepare(model).graph) == str(prepare(symbolic_trace(model)).graph)


def test_no_qat_dynamic_per_channel_or_reference_lowering_which_torch_ao_has():
    """No quantization-aware training, dynamic quantization, per-channel weights or
    reference-model lowering."""
    assert callable(quantize_fx.prepare_qat_fx) and callable(quantize_fx.convert_to_reference_fx)
    assert callable(ao.quantize_dynamic) and callable(ao.PerChannelMinMaxObserver)
    names = [name.lower() for name in dir(minifx_quantize)]
    assert not [
        n
        for n in names
        if any(word in n for word in ("qat", "dynamic", "per_channel", "reference"))
    ]
