"""torch.ao's post-training quantization, the oracle of chapter 8's numbers.

Two oracles. `torch_ao` runs torch.ao's whole FX pipeline, `prepare_fx` / `convert_fx`.
`int8_layer` builds torch.ao's int8 module for one layer, for tests that put a model's
int8 path together by hand: the tests of build task 8.2 do, because the grading worker's
guard would take what torch.ao's FX pipeline does to torch on first use (it loads
torch._dynamo, which patches `torch.manual_seed`; it registers hooks) for graded code
patching torch. A helper, not a test file: the grading harness stages a task's helpers
with its tests (never other test files).
"""

from __future__ import annotations

import copy
import warnings

import torch
from torch import nn
from torch.ao.quantization import MinMaxObserver as AoObserver

from minifx.passes.observers import ACTIVATION, WEIGHT


def torch_ao(model: nn.Module, calibration: list[torch.Tensor]):
    """torch.ao's prepare_fx / convert_fx with the qconfig minifx uses, warnings silenced:
    the calibrated prepared model and the converted one.

    Its converted model calls `torch.quantize_per_tensor`, which torch 2.13 calls deprecated:
    run it through `run_torch_ao`.
    """
    from torch.ao.quantization import QConfig, QConfigMapping
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

    qconfig = QConfig(
        activation=AoObserver.with_args(**ACTIVATION), weight=AoObserver.with_args(**WEIGHT)
    )
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "torch.ao.quantization is deprecated", DeprecationWarning)
        warnings.filterwarnings("ignore", "Please use quant_min and quant_max", UserWarning)
        warnings.filterwarnings("ignore", "torch.quantize_per_tensor", UserWarning)
        prepared = prepare_fx(
            copy.deepcopy(model),
            QConfigMapping().set_global(qconfig),
            example_inputs=(calibration[0],),
        )
        with torch.no_grad():
            for batch in calibration:
                prepared(batch)
        return prepared, convert_fx(prepared)


def run_torch_ao(converted: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """`converted(x)` for a model torch_ao converted, its deprecation warning silenced."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "torch.quantize_per_tensor", UserWarning)
        return converted(x)


def int8_layer(layer: nn.Linear | nn.Conv2d, relu: bool, output_qparams: tuple[float, int]):
    """torch.ao's int8 module for `layer` (`relu`: fused with the relu after it), which
    writes its output in `output_qparams`; the weight quantized as torch.ao's own
    `MinMaxObserver` says under the `WEIGHT` scheme."""
    import torch.ao.nn.intrinsic.quantized as nniq
    import torch.ao.nn.quantized as nnq

    weight = layer.weight.detach()
    observer = AoObserver(**WEIGHT)
    observer(weight)
    scale, _ = observer.calculate_qparams()
    bias = None if layer.bias is None else layer.bias.detach()
    with warnings.catch_warnings():  # quantized tensors, which torch 2.13 deprecates
        warnings.filterwarnings("ignore", "torch.quantize_per_tensor", UserWarning)
        if isinstance(layer, nn.Linear):
            kind = nniq.LinearReLU if relu else nnq.Linear
            module = kind(layer.in_features, layer.out_features, bias is not None)
        else:
            kind = nniq.ConvReLU2d if relu else nnq.Conv2d
            options = ("stride", "padding", "dilation", "groups")
            module = kind(
                layer.in_channels,
                layer.out_channels,
                layer.kernel_size,
                bias=bias is not None,
                **{name: getattr(layer, name) for name in options},
            )
        module.set_weight_bias(
            torch.quantize_per_tensor(weight, float(scale), 0, torch.qint8), bias
        )
    module.scale, module.zero_point = float(output_qparams[0]), int(output_qparams[1])
    return module


def quantize_per_tensor(x: torch.Tensor, qparams: tuple[float, int]) -> torch.Tensor:
    """`x` as torch's quint8 tensor in `qparams`, its deprecation warning silenced."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "torch.quantize_per_tensor", UserWarning)
        return torch.quantize_per_tensor(x, float(qparams[0]), int(qparams[1]), torch.quint8)


# What `convert` makes of a model of four Linears with a SELU after the third (the layout
# of the MLP of the quantization tests and of the task 8.2 tests' chain): int8 from fc1
# to fc3, float around the SELU, int8 again for fc4.
CONVERTED_FOUR_LINEARS = """\
graph():
    %x : 'torch.Tensor' [num_users=1] = placeholder[target=x]
    %x_scale : [num_users=1] = get_attr[target=x_scale]
    %x_zero_point : [num_users=1] = get_attr[target=x_zero_point]
    %quantize : [num_users=1] = call_function[target=minifx.passes.int8.quantize](args = (%x, %x_scale, %x_zero_point), kwargs = {})
    %fc1 : [num_users=1] = call_module[target=fc1](args = (%quantize,), kwargs = {})
    %fc2 : [num_users=1] = call_module[target=fc2](args = (%fc1,), kwargs = {})
    %fc3 : [num_users=1] = call_module[target=fc3](args = (%fc2,), kwargs = {})
    %fc3_scale : [num_users=1] = get_attr[target=fc3_scale]
    %fc3_zero_point : [num_users=1] = get_attr[target=fc3_zero_point]
    %dequantize : [num_users=1] = call_function[target=minifx.passes.int8.dequantize](args = (%fc3, %fc3_scale, %fc3_zero_point), kwargs = {})
    %selu : [num_users=1] = call_function[target=torch.selu](args = (%dequantize,), kwargs = {})
    %selu_scale : [num_users=1] = get_attr[target=selu_scale]
    %selu_zero_point : [num_users=1] = get_attr[target=selu_zero_point]
    %quantize_1 : [num_users=1] = call_function[target=minifx.passes.int8.quantize](args = (%selu, %selu_scale, %selu_zero_point), kwargs = {})
    %fc4 : [num_users=1] = call_module[target=fc4](args = (%quantize_1,), kwargs = {})
    %fc4_scale : [num_users=1] = get_attr[target=fc4_scale]
    %fc4_zero_point : [num_users=1] = get_attr[target=fc4_zero_point]
    %dequantize_1 : [num_users=1] = call_function[target=minifx.passes.int8.dequantize](args = (%fc4, %fc4_scale, %fc4_zero_point), kwargs = {})
    return dequantize_1"""
