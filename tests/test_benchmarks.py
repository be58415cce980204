"""The scale benchmark measures the same work in minifx and torch.fx.

A smoke test, not a timing: it runs `benchmarks.graph_scale` at tiny sizes and
checks that both libraries end with the same graph, which passes `lint()`.
Speed is measured by running the benchmark itself (see benchmarks/README.md),
never asserted here.
"""

from __future__ import annotations

import pytest
import torch.fx

import minifx.graph
from benchmarks import graph_scale

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
