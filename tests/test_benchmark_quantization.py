"""benchmarks.quantization at a tiny size: both libraries' int8 models compute the same thing.

No timing is asserted (speed is measured by running the benchmark; see benchmarks/README.md):
the checks are that each runner is what the table says it is, that both int8 models stay
close to float and to each other, that a wrong int8 model is refused, and that the report
and the plot get written.
"""

from __future__ import annotations

import pytest
import torch

from benchmarks import quantization
from minifx.passes.quantize import QuantizedLinear

pytestmark = [
    pytest.mark.ch8,
    pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning"),
]

N = 64


def test_runners_are_float_minifx_int8_and_torch_ao_int8():
    model = quantization.make_model(N)
    functions = quantization.runners(model, quantization.calibration_data(N, batches=2))
    assert list(functions) == list(quantization.RUNNERS)
    assert functions["float"] is model
    assert sum(isinstance(m, QuantizedLinear) for m in functions["minifx int8"].modules()) == 6
    ao_linears = [
        m
        for m in functions["torch.ao int8"].modules()
        if type(m).__name__ == "Linear" and type(m).__module__.startswith("torch.ao.nn.quantized")
    ]
    assert len(ao_linears) == 6


def test_both_int8_models_are_close_to_float_and_to_each_other():
    model = quantization.make_model(N)
    functions = quantization.runners(model, quantization.calibration_data(N, batches=2))
    errors = quantization.check_outputs(functions, torch.randn(8, N))
    assert 0 < errors["minifx int8"] < quantization.MAX_RELATIVE_ERROR
    assert 0 < errors["torch.ao int8"] < quantization.MAX_RELATIVE_ERROR
    # Same scales, the same integer arithmetic in different kernels: the two int8 outputs
    # agree (here exactly), far more closely than either with float.
    assert errors["minifx vs torch.ao"] < errors["minifx int8"] / 100


def test_at_the_benchmarks_size_both_int8_models_give_the_same_output():
    # At n = 4096 a requantization that added the zero point before rounding, in float32,
    # once rounded a value 0.0000026 above a half step down where PyTorch rounds it up.
    model = quantization.make_model()
    functions = quantization.runners(model, quantization.calibration_data(4096))
    errors = quantization.check_outputs(
        functions, torch.randn(128, 4096, generator=torch.Generator().manual_seed(2))
    )
    assert errors["minifx vs torch.ao"] == 0.0


def test_an_int8_model_far_from_float_is_refused():
    model = quantization.make_model(N)
    functions = {"float": model, "minifx int8": lambda x: model(x) * 2, "torch.ao int8": model}
    with pytest.raises(RuntimeError, match=r"^minifx int8: relative error 1 from the float output"):
        quantization.check_outputs(functions, torch.randn(4, N))


def test_main_writes_the_report_and_the_plot(tmp_path, capsys):
    out, plot = tmp_path / "quantization.md", tmp_path / "quantization.png"
    status = quantization.main(
        [
            "--n",
            str(N),
            "--batch-sizes",
            "1",
            "4",
            "--repeat",
            "1",
            "--min-time",
            "0",
            "--out",
            str(out),
            "--plot",
            str(plot),
            "--note",
            "smoke",
        ]
    )
    assert status == 0
    report = out.read_text()
    assert "<!-- --8<-- [start:report] -->" in report and "- Note: smoke" in report
    rows = [
        line for line in report.splitlines() if line.startswith("| 1 |") or line.startswith("| 4 |")
    ]
    # Three tables (times, speedups, errors), a row per batch size in each.
    assert [len(row.split("|")) - 2 for row in rows] == [5, 5, 4, 4, 4, 4]
    assert plot.read_bytes().startswith(b"\x89PNG")
    assert "speedup minifx" in capsys.readouterr().out
