"""`benchmarks.fusion` times the same fused ResNet-50 in minifx and torch.fx, and checks it first.

Smoke tests at a tiny size: no timing is asserted. The runners must be the
eager model and both libraries' fused GraphModules, the checks must refuse a
wrong fusion, and the report and the plot must be written.
"""

from __future__ import annotations

import argparse
import re

import pytest
import torch
import torch.fx
from torch import nn

from benchmarks import fusion

pytestmark = pytest.mark.ch6


def tiny_runners() -> dict:
    return fusion.runners(fusion.make_model(width=4))


def test_the_model_has_batchnorm_statistics_away_from_the_identity() -> None:
    bns = [m for m in fusion.make_model(width=4).modules() if isinstance(m, nn.BatchNorm2d)]
    assert len(bns) == 53 and not any(m.training for m in bns)
    assert all(not torch.equal(bn.running_var, torch.ones_like(bn.running_var)) for bn in bns)


def test_runners_are_eager_and_both_fused_models() -> None:
    functions = tiny_runners()
    assert list(functions) == list(fusion.RUNNERS)
    assert type(functions["minifx fused"]).__module__.startswith("minifx")
    assert type(functions["torch.fx fused"]).__module__.startswith("torch.fx")
    difference = fusion.check_outputs(functions, torch.randn(1, 3, 32, 32))
    assert 0 < difference < fusion.ATOL  # fused: the arithmetic differs, a little


def test_check_outputs_refuses_a_fused_model_that_computes_something_else() -> None:
    functions = tiny_runners()
    functions["minifx fused"].conv1.weight.data.mul_(2)
    with pytest.raises(
        RuntimeError, match=r"^minifx fused: the output differs from eager's by up to "
    ):
        fusion.check_outputs(functions, torch.randn(1, 3, 32, 32))


def test_check_outputs_refuses_different_graphs() -> None:
    functions = tiny_runners()
    functions["torch.fx fused"] = torch.fx.symbolic_trace(functions["eager"])  # not fused
    with pytest.raises(
        RuntimeError, match="^minifx and torch.fx fused the model into different graphs$"
    ):
        fusion.check_outputs(functions, torch.randn(1, 3, 32, 32))


def test_main_writes_the_report_and_the_plot(tmp_path, capsys) -> None:
    out, plot = tmp_path / "results" / "fusion.md", tmp_path / "figures" / "fusion.png"
    status = fusion.main(
        [
            "--batch-sizes",
            "1",
            "2",
            "--image-size",
            "32",
            "--width",
            "4",
            "--repeat",
            "1",
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
    assert report in capsys.readouterr().out
    assert "- Note: smoke" in report
    assert "Graph: 177 nodes traced, 124 after fusion (torch.fx: 124)" in report
    assert "| batch | rounds | eager (ms) | minifx fused (ms) | torch.fx fused (ms) |" in report
    rows = re.findall(r"^\| ([12]) \| 1 \|(?: [\d.,e+-]+ \|){7}$", report, re.MULTILINE)
    assert rows == ["1", "2"]
    assert plot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_results_ratios() -> None:
    results = fusion.Results(
        seconds={(1, "eager"): 3.0, (1, "minifx fused"): 2.0, (1, "torch.fx fused"): 2.5}
    )
    assert results.speedup(1, "minifx fused") == 1.5
    assert results.minifx_over_torch_fx(1) == 0.8


def test_cuda_is_refused_where_there_is_none(capsys) -> None:
    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    assert fusion.main(["--device", "cuda"]) == 2
    assert "CUDA is not available" in capsys.readouterr().err


def test_the_report_names_the_settings() -> None:
    results = fusion.Results(
        seconds={(8, name): 1.0 for name in fusion.RUNNERS},
        rounds={8: 3},
        differences={8: 1e-6},
        nodes={name: 1 for name in fusion.RUNNERS},
    )
    args = argparse.Namespace(
        device="cpu", threads=1, note="", width=64, image_size=224, repeat=10, budget=60.0
    )
    report = fusion.markdown_report(results, args)
    assert "| 8 | 3 | 1,000.0 | 1,000.0 | 1,000.0 | 1.00 | 1.00 | 1.00 | 1.0e-06 |" in report
    assert "input Nx3x224x224" in report and "with 1 torch thread(s)" in report
