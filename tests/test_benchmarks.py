"""The benchmarks measure the same work in minifx and torch.fx.

Smoke tests, not timings: they run `benchmarks.graph_scale` at tiny sizes and
check that both libraries end with the same graph, which passes `lint()`; and
`benchmarks.codegen`, checking that both generate the same code, whose outputs
match the eager module's.
Speed is measured by running the benchmark itself (see benchmarks/README.md),
never asserted here.
"""

from __future__ import annotations

import pytest
import torch
import torch.fx

import minifx.graph
from benchmarks import graph_scale
from tests.models import ResNet50

SIZES = [50, 201]  # an odd size too: the erase pass then ends on a kept node


@pytest.mark.parametrize("n", SIZES)
def test_both_libraries_end_with_the_same_graph(n: int) -> None:
    ours = graph_scale.run_pipeline(minifx.graph, n)
    theirs = graph_scale.run_pipeline(torch.fx, n)
    ours.lint()
    theirs.lint()
    assert str(ours) == str(theirs)


@pytest.mark.parametrize("n", SIZES)
def test_every_step_leaves_the_same_graph(n: int) -> None:
    """Compared after each operation, so a difference points at the step that made it."""
    printed: dict[str, list[tuple[str, str]]] = {}
    for library, fx in graph_scale.LIBRARIES.items():
        steps = printed.setdefault(library, [])
        graph = graph_scale.build_chain(fx, n)
        steps.append(("build", str(graph)))
        for name, operation in graph_scale.OPERATIONS:
            operation(fx, graph)
            steps.append((name, str(graph)))
    for (name, ours), (_, theirs) in zip(printed["minifx"], printed["torch.fx"]):
        assert ours == theirs, f"after {name!r}, minifx's graph differs from torch.fx's"


def test_the_pipeline_sizes_are_as_documented() -> None:
    n = 50
    graph = graph_scale.run_pipeline(minifx.graph, n)
    assert len(graph.nodes) == 2 * n + 5
    assert sum(node.op == "call_function" for node in graph.nodes) == 2 * n + 3


def test_main_reports_and_checks_without_asserting_speed(tmp_path, capsys) -> None:
    out = tmp_path / "results" / "scale.md"
    status = graph_scale.main(["--sizes", "20", "40", "--repeat", "1", "--out", str(out), "--note", "smoke"])
    assert status == 0  # without --check, the status never depends on timings
    printed = capsys.readouterr().out
    for operation in graph_scale.OPERATION_NAMES:
        assert operation in printed
    report = out.read_text()
    assert "| operation | nodes | minifx (ms) | torch.fx (ms) | minifx / torch.fx |" in report
    assert "- Note: smoke" in report


def test_not_linear_flags_growth_above_the_limit() -> None:
    results = graph_scale.Results([10, 100])
    for library in graph_scale.LIBRARIES:
        for op in graph_scale.OPERATION_NAMES:
            results.seconds[library, op, 10] = 1.0
            results.seconds[library, op, 100] = 10.0
    results.seconds["minifx", "erase", 100] = 100.0  # quadratic
    assert graph_scale.not_linear(results, slack=2.0) == ["erase"]
    assert graph_scale.not_linear(results, slack=2.0, library="torch.fx") == []


# --- benchmarks.codegen: the same generated code and outputs in both libraries ------

CODEGEN_SIZES = [20, 101]


@pytest.fixture
def codegen():
    """`benchmarks.codegen`, imported on use: it loads stage 3 (minifx.codegen), which
    the stage-2 tests above must not need."""
    from benchmarks import codegen

    return codegen


def _same_code(gm: torch.nn.Module) -> str:
    """gm.code, with torch.fx's spelling of a wrapped function's registration made minifx's."""
    return gm.code.replace("torch.fx._symbolic_trace.wrap(", "wrap(")


@pytest.mark.ch3
@pytest.mark.parametrize("n", CODEGEN_SIZES)
def test_codegen_chains_generate_the_same_code_and_outputs(codegen, n: int) -> None:
    x = torch.randn(3)
    expected = codegen.Chain(n)(x)
    made = {name: codegen.chain_pipeline(library, n) for name, library in codegen.LIBRARIES.items()}
    (ours, our_trace), (theirs, their_trace) = made["minifx"], made["torch.fx"]
    assert _same_code(ours) == _same_code(theirs)
    assert _same_code(our_trace) == _same_code(ours)  # tracing Chain(n) gives build_chain's graph
    assert _same_code(their_trace) == _same_code(theirs)
    for gm in (ours, our_trace, theirs, their_trace):
        assert torch.equal(gm(x), expected)


@pytest.mark.ch3
def test_codegen_resnet50_generates_the_same_code_and_outputs(codegen) -> None:
    torch.manual_seed(0)
    model = ResNet50(num_classes=5, width=4).eval()
    x = torch.randn(1, 3, 32, 32)
    gms = [codegen.model_pipeline(library, model) for library in codegen.LIBRARIES.values()]
    assert _same_code(gms[0]) == _same_code(gms[1])
    with torch.no_grad():
        for gm in gms:
            assert torch.equal(gm(x), model(x))


@pytest.mark.ch3
def test_codegen_main_reports_and_checks_without_asserting_speed(codegen, tmp_path, capsys) -> None:
    out = tmp_path / "results" / "codegen.md"
    status = codegen.main(["--sizes", "20", "40", "--repeat", "1", "--model-repeat", "1",
                           "--forward-repeat", "1", "--min-time", "0.0001", "--image-size", "32",
                           "--out", str(out), "--note", "smoke"])
    assert status == 0  # without --check, the status never depends on timings
    printed = capsys.readouterr().out
    for operation in (*codegen.MODEL_OPERATIONS, *codegen.CHAIN_OPERATIONS):
        assert f"| {operation} |" in printed
    report = out.read_text()
    assert "| operation | nodes | minifx (ms) | torch.fx (ms) | minifx / torch.fx |" in report
    assert "| tiny: Linear(4, 4) + relu | 1x4 |" in report
    assert "- Note: smoke" in report


@pytest.mark.ch3
def test_codegen_not_linear_flags_growth_above_the_limit(codegen) -> None:
    results = codegen.Results([10, 100])
    for library in codegen.LIBRARIES:
        for op in codegen.CHAIN_OPERATIONS:
            results.chain[library, op, 10] = 1.0
            results.chain[library, op, 100] = 10.0
    results.chain["minifx", "python_code", 100] = 100.0  # quadratic
    assert codegen.not_linear(results, slack=2.0) == ["python_code"]
    assert codegen.not_linear(results, slack=2.0, library="torch.fx") == []
