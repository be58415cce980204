"""minifx.passes.quantize: prepare, convert, against torch.ao's FX graph-mode PTQ.

The oracle for numbers is PyTorch itself: `prepare_fx` / `convert_fx` with the same
per-tensor min/max qconfig for whole models (same scales, the same int8 outputs). The
observers are tested in test_observers.py, the int8 kernels in test_int8.py, and convert's
graph rewriting also in test_quantize_convert.py (the tests of build task 8.2).
"""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

from examples.ch8_quantization import MLP, AutoEncoder, SmallCNN, quantize, relative_error
from minifx.codegen import symbolic_trace
from minifx.passes.quantize import (
    MinMaxObserver,
    QuantizedConv2d,
    QuantizedLinear,
    convert,
    prepare,
)
from tests.passes.quantization_oracle import CONVERTED_FOUR_LINEARS, run_torch_ao, torch_ao

pytestmark = pytest.mark.ch8

CASES = {
    "mlp": (MLP, (32, 16)),
    "cnn": (SmallCNN, (4, 3, 12, 12)),
    "autoencoder": (lambda: AutoEncoder(256), (16, 256)),
}
# Bounds on ||int8 - float|| / ||float||, about twice what these seeds give
# (0.042, 0.0064 and 0.059): int8 keeps 7 bits of each activation.
MAX_RELATIVE_ERROR = {"mlp": 0.08, "cnn": 0.015, "autoencoder": 0.12}


def _model_and_data(case: str, device: str = "cpu"):
    build, shape = CASES[case]
    torch.manual_seed(0)
    model = build().eval().to(device)
    return (
        model,
        [torch.randn(shape, device=device) for _ in range(4)],
        torch.randn(shape, device=device),
    )


# --- prepare ------------------------------------------------------------------------


PREPARED_MLP = """\
graph():
    %x : 'torch.Tensor' [num_users=1] = placeholder[target=x]
    %x_observer : [num_users=1] = call_module[target=x_observer](args = (%x,), kwargs = {})
    %fc1 : [num_users=1] = call_module[target=fc1](args = (%x_observer,), kwargs = {})
    %relu : [num_users=1] = call_module[target=relu](args = (%fc1,), kwargs = {})
    %relu_observer : [num_users=1] = call_module[target=relu_observer](args = (%relu,), kwargs = {})
    %fc2 : [num_users=1] = call_module[target=fc2](args = (%relu_observer,), kwargs = {})
    %fc2_observer : [num_users=1] = call_module[target=fc2_observer](args = (%fc2,), kwargs = {})
    %fc3 : [num_users=1] = call_module[target=fc3](args = (%fc2_observer,), kwargs = {})
    %fc3_observer : [num_users=1] = call_module[target=fc3_observer](args = (%fc3,), kwargs = {})
    %selu : [num_users=1] = call_function[target=torch.selu](args = (%fc3_observer,), kwargs = {})
    %selu_observer : [num_users=1] = call_module[target=selu_observer](args = (%selu,), kwargs = {})
    %fc4 : [num_users=1] = call_module[target=fc4](args = (%selu_observer,), kwargs = {})
    %fc4_observer : [num_users=1] = call_module[target=fc4_observer](args = (%fc4,), kwargs = {})
    return fc4_observer"""


def test_prepare_puts_one_observer_after_each_value_around_a_linear():
    model, _, _ = _model_and_data("mlp")
    prepared = prepare(model)
    assert str(prepared.graph) == PREPARED_MLP
    observers = {
        name for name, module in prepared.named_modules() if isinstance(module, MinMaxObserver)
    }
    assert observers == {
        "x_observer",
        "relu_observer",
        "fc2_observer",
        "fc3_observer",
        "selu_observer",
        "fc4_observer",
    }
    prepared.graph.lint()


@pytest.mark.parametrize("case", CASES)
def test_prepared_model_computes_what_the_float_model_computes(case, device):
    model, calibration, x = _model_and_data(case, device)
    prepared = prepare(model)
    with torch.no_grad():
        assert torch.equal(prepared(x), model(x))


@pytest.mark.parametrize("case", CASES)
def test_calibration_records_the_true_range_of_each_observed_value(case, device):
    model, calibration, _ = _model_and_data(case, device)
    prepared = prepare(model)
    seen: dict[str, list[torch.Tensor]] = {}
    hooks = [
        module.register_forward_hook(
            lambda m, args, out, name=name: seen.setdefault(name, []).append(args[0])
        )
        for name, module in prepared.named_modules()
        if isinstance(module, MinMaxObserver)
    ]
    with torch.no_grad():
        for batch in calibration:
            prepared(batch)
    for hook in hooks:
        hook.remove()
    for name, values in seen.items():
        observer = prepared.get_submodule(name)
        assert observer.min_val.device.type == torch.device(device).type
        assert observer.min_val.item() == min(v.min().item() for v in values), name
        assert observer.max_val.item() == max(v.max().item() for v in values), name


def test_prepare_traces_a_plain_module_and_leaves_a_graph_module_unchanged():
    model, _, _ = _model_and_data("mlp")
    gm = symbolic_trace(model)
    before = str(gm.graph)
    assert str(prepare(gm).graph) == str(prepare(model).graph) == PREPARED_MLP
    assert str(gm.graph) == before and not hasattr(gm, "x_observer")


def test_prepare_picks_a_free_observer_name():
    class Clash(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc, self.x_observer = nn.Linear(4, 4), nn.Identity()

        def forward(self, x):
            return self.fc(x) + self.x_observer(x)

    prepared = prepare(Clash().eval())
    assert isinstance(prepared.get_submodule("x_observer_1"), MinMaxObserver)
    assert isinstance(prepared.x_observer, nn.Identity)


def test_a_model_without_quantizable_ops_gets_no_observer():
    model = nn.Sequential(nn.ReLU(), nn.Softmax(-1)).eval()
    prepared = prepare(model)
    assert str(prepared.graph) == str(symbolic_trace(model).graph)
    assert str(convert(prepared).graph) == str(prepared.graph)


def test_convs_the_int8_kernels_cannot_run_stay_float():
    model = nn.Sequential(
        nn.Conv2d(3, 4, 3, padding="same"),
        nn.Conv2d(4, 4, 3, padding_mode="reflect"),
        nn.Linear(2, 2),
    ).eval()
    prepared = prepare(model)
    assert [n.target for n in prepared.graph.nodes if n.op == "call_module"] == [
        "0",
        "1",
        "_1_observer",
        "2",
        "_2_observer",
    ]


def test_a_call_by_keyword_stays_float():
    class Odd(nn.Module):
        def __init__(self):
            super().__init__()
            self.by_keyword = nn.Linear(4, 4)

        def forward(self, x):
            return self.by_keyword(input=x)

    prepared = prepare(Odd().eval())
    assert not any(isinstance(m, MinMaxObserver) for m in prepared.modules())
    assert str(prepared.graph) == str(symbolic_trace(Odd()).graph)


def test_prepare_refuses_a_training_mode_model():
    with pytest.raises(ValueError) as info:
        prepare(MLP())
    assert str(info.value) == (
        "prepare: the MLP is in training mode; post-training quantization calibrates the model as "
        "it will run (dropout off, BatchNorm using its running statistics). Call model.eval() before "
        "prepare(model)."
    )


def test_prepare_refuses_a_linear_called_twice():
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(self.fc(x))

    with pytest.raises(ValueError) as info:
        prepare(Twice().eval())
    assert str(info.value) == (
        "prepare: the module 'fc' is called by 2 nodes (%fc, %fc_1); its int8 version has one output "
        "scale, so each call needs its own module. Give each call its own nn.Linear / nn.Conv2d "
        "(copy.deepcopy the shared one)."
    )


# --- convert ------------------------------------------------------------------------


def test_converted_graph_fuses_the_relu_and_keeps_int8_between_linears():
    model, calibration, _ = _model_and_data("mlp")
    converted = quantize(model, calibration)
    assert str(converted.graph) == CONVERTED_FOUR_LINEARS
    assert converted.fc1.relu and not converted.fc2.relu
    assert all(isinstance(getattr(converted, f"fc{i}"), QuantizedLinear) for i in range(1, 5))
    assert not any(isinstance(m, (MinMaxObserver, nn.ReLU)) for m in converted.modules())
    assert "relu=True" in repr(converted.fc1)


@pytest.mark.parametrize("case", CASES)
def test_converted_output_is_close_to_float(case):
    model, calibration, x = _model_and_data(case)
    converted = quantize(model, calibration)
    with torch.no_grad():
        error = relative_error(converted(x), model(x))
    assert error < MAX_RELATIVE_ERROR[case]


@pytest.mark.parametrize("case", CASES)
def test_minifx_quantization_warns_nothing(case):
    """No deprecation warning (torch 2.13 deprecates quantized tensors): plain uint8 / int8
    tensors, `torch._int_mm`, ordinary arithmetic, from prepare to the converted model's run."""
    from minifx.interpreter import Interpreter

    model, calibration, x = _model_and_data(case)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        converted = quantize(model, calibration)
        output = converted(x)
    # torch warns once per process, so a warning seen earlier would not show again: check
    # too that no value the converted model holds or computes is a quantized tensor.
    values = []

    class Recorder(Interpreter):
        def run_node(self, node):
            values.append(super().run_node(node))
            return values[-1]

    assert torch.equal(Recorder(converted).run(x), output) and output.dtype == torch.float32
    assert not any(t.is_quantized for t in (*values, *converted.buffers(), *converted.parameters()))
    assert not any("quantized" in str(node.target) for node in converted.graph.nodes)


def test_converted_graph_is_a_minifx_graph_that_lints_prints_and_runs_as_interpreted():
    from minifx.interpreter import Interpreter

    model, calibration, x = _model_and_data("cnn")
    converted = quantize(model, calibration)
    converted.graph.lint()
    assert "call_function[target=minifx.passes.int8.quantize]" in str(converted.graph)
    assert "minifx_passes_int8_dequantize(" in converted.code
    with torch.no_grad():
        assert torch.equal(Interpreter(converted).run(x), converted(x))


def test_cnn_convs_become_int8_convs_with_fused_relus():
    model, calibration, x = _model_and_data("cnn")
    converted = quantize(model, calibration)
    assert [type(converted.get_submodule(n)) for n in ("stem", "down", "grouped")] == [
        QuantizedConv2d
    ] * 3
    assert [converted.get_submodule(n).relu for n in ("stem", "down", "grouped")] == [
        True,
        False,
        True,
    ]
    assert "8, 16, scale=" in repr(converted.down)
    assert converted(x).dtype == torch.float32


@pytest.mark.parametrize("case", CASES)
def test_same_scales_and_close_outputs_as_torch_ao(case):
    model, calibration, x = _model_and_data(case)
    prepared = prepare(model)
    with torch.no_grad():
        for batch in calibration:
            prepared(batch)
    ours = convert(prepared)
    ao_prepared, theirs = torch_ao(model, calibration)
    ours_qparams = sorted(
        m.calculate_qparams() for m in prepared.modules() if isinstance(m, MinMaxObserver)
    )
    ao_qparams = [
        m.calculate_qparams()
        for n, m in ao_prepared.named_modules()
        if "activation_post_process" in n
    ]
    ao_qparams = {(s.item(), z.item()) for s, z in ao_qparams}
    # torch.ao fuses nn.ReLU into the Linear before it, not SmallCNN's x.relu() / torch.relu
    # after a Conv2d: there it observes the conv's output instead. It also runs the relu and
    # the mean on int8 tensors (they keep their input's scale); minifx runs them in float.
    # Every other range minifx records is one torch.ao records too.
    fused_here_only = (
        {"relu_observer", "relu_1_observer", "mean_observer"} if case == "cnn" else set()
    )
    compared = {
        n: m.calculate_qparams()
        for n, m in prepared.named_modules()
        if isinstance(m, MinMaxObserver) and n not in fused_here_only
    }
    assert len(compared) == len(ours_qparams) - len(fused_here_only)
    assert set(compared.values()) <= ao_qparams
    with torch.no_grad():
        ours_out, theirs_out, reference = ours(x), run_torch_ao(theirs, x), model(x)
    output_scale = max(scale for scale, _ in ours_qparams)
    assert (ours_out - theirs_out).abs().max() <= 4 * output_scale
    if case != "cnn":  # same graph of int8 ops, same integers: the very same output
        assert torch.equal(ours_out, theirs_out)
    assert relative_error(ours_out, reference) < 1.5 * relative_error(theirs_out, reference) + 0.01


def test_convert_leaves_the_prepared_module_as_it_was():
    model, calibration, x = _model_and_data("mlp")
    prepared = prepare(model)
    prepared(calibration[0])
    before = str(prepared.graph)
    convert(prepared)
    assert str(prepared.graph) == before
    assert torch.equal(prepared(x), model(x))


def test_convert_before_calibration_says_to_calibrate():
    model, _, _ = _model_and_data("mlp")
    with pytest.raises(RuntimeError) as info:
        convert(prepare(model))
    assert str(info.value) == (
        "convert: the observer 'x_observer' (after %x) has seen no data, so there is no range to "
        "quantize with. Calibrate first: run representative inputs through the prepared module "
        "(prepared(x) for a few batches), then convert."
    )


def _not_cpu_message(device: str) -> str:
    return (
        f"convert: the prepared module is on {device}, but minifx's int8 kernels run and are tested "
        "on the CPU only (torch._int_mm's CUDA kernel has rules of its own). Calibrate on "
        "any device, then convert a CPU copy: convert(prepared.cpu()), and run it on CPU inputs."
    )


def test_convert_off_the_cpu_says_int8_kernels_are_cpu_only(device):
    model, calibration, x = _model_and_data("mlp", device)
    prepared = prepare(model)
    with torch.no_grad():
        for batch in calibration:
            prepared(batch)
    away = prepared.to("meta") if device == "cpu" else prepared
    with pytest.raises(RuntimeError) as info:
        convert(away)
    assert str(info.value) == _not_cpu_message(
        "meta" if device == "cpu" else str(next(away.parameters()).device)
    )
    if device != "cpu":  # calibrated on the GPU, converted on the CPU
        converted = convert(prepared.cpu())
        assert relative_error(converted(x.cpu()), model.cpu()(x.cpu())) < MAX_RELATIVE_ERROR["mlp"]


def test_convert_refuses_a_graph_edited_after_prepare():
    model, calibration, _ = _model_and_data("mlp")
    prepared = prepare(model)
    prepared(calibration[0])
    observer = next(n for n in prepared.graph.nodes if n.name == "fc2_observer")
    observer.replace_all_uses_with(observer.args[0])
    prepared.graph.erase_node(observer)
    prepared.recompile()
    with pytest.raises(RuntimeError) as info:
        convert(prepared)
    assert str(info.value) == (
        "convert: %fc2 should be read by exactly one observer, the one prepare put after it, but its "
        "users are ['%fc3']. Run convert on what prepare returned, without editing its graph in between."
    )
