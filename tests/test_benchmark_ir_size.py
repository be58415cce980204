"""`benchmarks.ir_size` counts the same graphs in minifx and torch.fx, and says so when not.

Smoke tests on small models: nothing is timed. The counts are compared with
torch.fx's own `symbolic_trace` and with each other, the decomposed graphs
must hold no `call_module` node, and the report and the plot are written.
"""

from __future__ import annotations

import collections
import re

import pytest
import torch
import torch.fx
from torch import nn

import minifx
from benchmarks import ir_size
from tests.models import MobileNetish, ResNet50

# ch0: the benchmark backs chapter 0's IR-design argument (the paper's Figure 5); ch3: what
# it measures is the Tracer's graphs, wrapped in GraphModules and run (stages 2 and 3).
pytestmark = [pytest.mark.ch0, pytest.mark.ch3]


def small_resnet() -> nn.Module:
    torch.manual_seed(0)
    return ResNet50(num_classes=3, width=4)


def test_default_counts_are_torch_fx_symbolic_traces_counts() -> None:
    model = MobileNetish().eval()
    results = ir_size.measure(model, torch.randn(1, 3, 16, 16))
    expected = collections.Counter(node.op for node in torch.fx.symbolic_trace(model).graph.nodes)
    for library in ir_size.LIBRARY_NAMES:
        assert results.counts["default", library] == {op: expected[op] for op in ir_size.OPCODES}
    assert results.disagreements() == []
    assert results.same_text == {"default": True, "decomposed": True}


def test_the_decomposed_tracer_leaves_no_module_calls_and_reads_parameters() -> None:
    model = small_resnet().eval()
    for library in ir_size.LIBRARY_NAMES:
        gm = ir_size.trace(model, "decomposed", library)
        ops = collections.Counter(node.op for node in gm.graph.nodes)
        assert ops["call_module"] == 0
        # 53 convolutions (weight), 53 BatchNorms (weight, bias, running mean and var), fc (2).
        assert ops["get_attr"] == 53 + 4 * 53 + 2
        targets = collections.Counter(
            node.target for node in gm.graph.nodes if node.op == "call_function"
        )
        assert targets[torch.conv2d] == 53
        assert targets[torch.nn.functional.batch_norm] == 53


def test_measure_checks_outputs_and_leaves_the_model_as_it_was() -> None:
    model = small_resnet()
    before = {name: t.clone() for name, t in model.state_dict().items()}
    results = ir_size.measure(model, torch.randn(1, 3, 32, 32), "small")
    assert results.skipped_checks == 53
    assert results.total("decomposed", "minifx") == results.total("decomposed", "torch.fx") == 444
    assert all(torch.equal(before[name], t) for name, t in model.state_dict().items())
    assert not any("_check_input_dim" in vars(m) for m in model.modules())


def test_check_output_names_a_graph_that_computes_something_else() -> None:
    model = nn.Linear(2, 2).eval()
    gm = minifx.symbolic_trace(nn.Sequential(nn.Linear(2, 2)))
    with pytest.raises(
        RuntimeError,
        match=r"^decomposed minifx: the traced GraphModule's output differs "
        r"from the eager model's; the graph does not compute the model$",
    ):
        ir_size.check_output("decomposed minifx", gm, model, torch.ones(1, 2))


def test_undecomposable_names_batchnorm_and_the_line_each_library_stops_at() -> None:
    model = small_resnet().eval()
    for library, message in [
        ("minifx", "TraceError: %ne was used as a Python bool"),
        (
            "torch.fx",
            "TraceError: symbolically traced variables cannot be used as inputs to control flow",
        ),
    ]:
        failures = ir_size.undecomposable(model, library)
        assert list(failures) == ["BatchNorm2d"]
        assert failures["BatchNorm2d"].startswith(message)
        # The line number is torch's, so it is matched as any number.
        assert re.search(
            r" \(at batchnorm\.py:\d+ in _check_input_dim: if input\.dim\(\) != 4:\)$",
            failures["BatchNorm2d"],
        )


def test_main_writes_the_report_and_the_plot(tmp_path, capsys) -> None:
    out, plot = tmp_path / "results" / "ir_size.md", tmp_path / "figures" / "ir_size.png"
    status = ir_size.main(
        [
            "--width",
            "4",
            "--image-size",
            "32",
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
    for row in (
        "| default | minifx | 1 | 0 | 17 | 158 | 0 | 1 | 177 | yes |",
        "| default | torch.fx | 1 | 0 | 17 | 158 | 0 | 1 | 177 | yes |",
        "| decomposed | minifx | 1 | 267 | 175 | 0 | 0 | 1 | 444 | yes |",
        "| decomposed | torch.fx | 1 | 267 | 175 | 0 | 0 | 1 | 444 | yes |",
        f"| paper | {ir_size.PAPER_FIGURE} | - | - | - | - | - | - | 445 | - |",
        "| `symbolic_trace` | torch.fx, minifx | 177 | 177 | - |",
        "| decomposed | torch.fx, minifx | 444 | 444 | 445 |",
        "| `torch.jit.trace` | TorchScript | 858 | 860 | 860 |",
        "| `torch.jit.script` | TorchScript | 1813 | 2565 | 2614 |",
        "| `torch.jit.trace` | 417 | 49 | 217 | 0 | 0 | 175 | 0 | 858 |",
    ):
        assert row in report
    assert "- Both libraries print the same graph: default: yes, decomposed: yes." in report
    assert "- Note: smoke" in report
    assert "- minifx cannot trace through `BatchNorm2d`: ``TraceError:" in report
    assert plot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_main_says_so_and_fails_when_the_libraries_count_differently(
    tmp_path, capsys, monkeypatch
) -> None:
    class EveryModuleALeaf(minifx.Tracer):  # stands for a minifx bug: layer1..4 become call_module
        def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
            return True

    monkeypatch.setitem(ir_size.TRACER_CLASSES, ("default", "minifx"), EveryModuleALeaf)
    out = tmp_path / "ir_size.md"
    assert ir_size.main(["--width", "4", "--image-size", "32", "--out", str(out)]) == 1
    report = out.read_text()
    assert "| default | minifx | 1 | 0 | 1 | 10 | 0 | 1 | 13 | **NO: counts differ** |" in report
    assert "| decomposed | minifx | 1 | 267 | 175 | 0 | 0 | 1 | 444 | yes |" in report
    assert "- Both libraries print the same graph: default: NO, decomposed: yes." in report
    assert "minifx and torch.fx count different nodes under: default" in capsys.readouterr().err
