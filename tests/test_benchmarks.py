"""The benchmarks measure the same work in minifx and torch.fx.

Smoke tests, not timings: they run `benchmarks.graph_scale` at tiny sizes and
check that both libraries end with the same graph, which passes `lint()`; and
`benchmarks.codegen`, checking that both generate the same code, whose outputs
match the eager module's; and `benchmarks.interpreter`, checking that it times each
library's own Interpreter on that library's graph, and refuses runners that differ.
Speed is measured by running the benchmark itself (see benchmarks/README.md),
never asserted here.
"""

from __future__ import annotations

import importlib

import pytest
import torch
import torch.fx

import minifx.graph
from benchmarks import graph_scale
from tests.models import ResNet50

SIZES = [50, 201]  # an odd size too: the erase pass then ends on a kept node


@pytest.mark.ch2
@pytest.mark.parametrize("n", SIZES)
def test_both_libraries_end_with_the_same_graph(n: int) -> None:
    ours = graph_scale.run_pipeline(minifx.graph, n)
    theirs = graph_scale.run_pipeline(torch.fx, n)
    ours.lint()
    theirs.lint()
    assert str(ours) == str(theirs)


@pytest.mark.ch2
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


@pytest.mark.ch2
@pytest.mark.parametrize("n", SIZES)
def test_dead_code_elimination_agrees_with_torch_fx(n: int) -> None:
    ours = graph_scale.eliminate_dead_chains(minifx.graph, n)
    theirs = graph_scale.eliminate_dead_chains(torch.fx, n)
    assert ours.keys() == theirs.keys() == {"dce_dead", "dce_live"}
    for name, (our_changed, our_graph) in ours.items():
        their_changed, their_graph = theirs[name]
        assert our_changed == their_changed, name
        assert str(our_graph) == str(their_graph), name
    assert ours["dce_dead"][0] and len(ours["dce_dead"][1].nodes) == 2  # placeholder, output
    assert not ours["dce_live"][0] and len(ours["dce_live"][1].nodes) == n + 2


@pytest.mark.ch2
def test_the_pipeline_sizes_are_as_documented() -> None:
    n = 50
    graph = graph_scale.run_pipeline(minifx.graph, n)
    assert len(graph.nodes) == 2 * n + 5
    assert sum(node.op == "call_function" for node in graph.nodes) == 2 * n + 3


@pytest.mark.ch2
def test_main_reports_and_checks_without_asserting_speed(tmp_path, capsys) -> None:
    out = tmp_path / "results" / "scale.md"
    status = graph_scale.main(
        ["--sizes", "20", "40", "--repeat", "1", "--out", str(out), "--note", "smoke"]
    )
    assert status == 0  # without --check, the status never depends on timings
    printed = capsys.readouterr().out
    for operation in graph_scale.OPERATION_NAMES:
        assert operation in printed
    report = out.read_text()
    assert "| operation | nodes | minifx (ms) | torch.fx (ms) | minifx / torch.fx |" in report
    assert "- Note: smoke" in report


@pytest.mark.parametrize(
    "script",
    [
        pytest.param("graph_scale", marks=pytest.mark.ch2),
        # Imported in the test: it loads stage 3, which the stage-2 tests must not need.
        pytest.param("codegen", marks=pytest.mark.ch3),
    ],
)
def test_check_with_one_size_is_refused_before_anything_is_timed(script, capsys) -> None:
    """Growth needs two sizes: said at once, not after the run (graph_scale said it last)."""
    main = importlib.import_module(f"benchmarks.{script}").main
    assert main(["--sizes", "20", "--repeat", "1", "--check"]) == 2
    printed = capsys.readouterr()
    assert printed.err.strip() == "--check needs at least two sizes"
    assert printed.out == ""


@pytest.mark.ch2
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
    status = codegen.main(
        [
            "--sizes",
            "20",
            "40",
            "--repeat",
            "1",
            "--model-repeat",
            "1",
            "--forward-repeat",
            "1",
            "--min-time",
            "0.0001",
            "--image-size",
            "32",
            "--out",
            str(out),
            "--note",
            "smoke",
        ]
    )
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


# --- benchmarks.interpreter: every runner does the same work, on the right interpreter -


@pytest.fixture
def interpreter_bench():
    """`benchmarks.interpreter`, imported on use: it loads stage 4 (minifx.interpreter)."""
    from benchmarks import interpreter

    return interpreter


@pytest.mark.ch4
def test_interpreter_runners_are_each_librarys_interpreter_on_its_own_graph(
    interpreter_bench,
) -> None:
    import minifx

    torch.manual_seed(0)
    model = interpreter_bench.Tiny().eval()
    functions, gms = interpreter_bench.runners(model)
    assert list(functions) == [
        "eager",
        "minifx gm",
        "torch.fx gm",
        "minifx interpreter",
        "torch.fx interpreter",
        "minifx interpreter, keep values",
        "torch.fx interpreter, keep values",
    ]
    assert isinstance(gms["minifx"], minifx.GraphModule)
    assert isinstance(gms["torch.fx"], torch.fx.GraphModule)
    expected = {"minifx": minifx.Interpreter, "torch.fx": torch.fx.Interpreter}
    for library, cls in expected.items():
        assert functions[f"{library} gm"] is gms[library]
        for variant, collects in [("interpreter", True), ("interpreter, keep values", False)]:
            bound = functions[f"{library} {variant}"]
            assert type(bound.__self__) is cls and bound.__func__ is cls.run
            assert bound.__self__.module is gms[library]
            assert bound.__self__.garbage_collect_values is collects
    assert str(gms["minifx"].graph) == str(gms["torch.fx"].graph)


@pytest.mark.ch4
def test_interpreter_runners_without_keep_values_leave_those_out(interpreter_bench) -> None:
    functions, _ = interpreter_bench.runners(interpreter_bench.Tiny().eval(), keep_values=False)
    assert list(functions) == [
        "eager",
        "minifx gm",
        "torch.fx gm",
        "minifx interpreter",
        "torch.fx interpreter",
    ]


@pytest.mark.ch4
def test_interpreter_check_outputs_accepts_the_same_work_and_names_a_runner_that_differs(
    interpreter_bench,
) -> None:
    torch.manual_seed(0)
    model = interpreter_bench.Tiny().eval()
    x = torch.randn(1, 4)
    functions, _ = interpreter_bench.runners(model)
    interpreter_bench.check_outputs("tiny", functions, x)  # all equal: no error
    functions["torch.fx interpreter"] = lambda x: model(x) + 1e-6
    with pytest.raises(
        RuntimeError,
        match=r"^tiny: torch.fx interpreter returns something else "
        r"than eager's Tensor; the runners must do the same work$",
    ):
        interpreter_bench.check_outputs("tiny", functions, x)
    functions["torch.fx interpreter"] = lambda x: [model(x)]  # same numbers, another type
    with pytest.raises(RuntimeError, match="torch.fx interpreter returns something else"):
        interpreter_bench.check_outputs("tiny", functions, x)


@pytest.mark.ch4
def test_interpreter_quiet_progress_disables_the_bar_and_restores_the_config(
    interpreter_bench,
) -> None:
    saved = torch.fx.config.disable_progress, torch.fx.config.verbose_progress
    try:
        torch.fx.config.disable_progress, torch.fx.config.verbose_progress = False, True
        with interpreter_bench.quiet_torch_fx_progress():
            assert (torch.fx.config.disable_progress, torch.fx.config.verbose_progress) == (
                True,
                False,
            )
        assert (torch.fx.config.disable_progress, torch.fx.config.verbose_progress) == (False, True)
    finally:
        torch.fx.config.disable_progress, torch.fx.config.verbose_progress = saved


@pytest.mark.ch4
def test_interpreter_timing_takes_turns_forwards_then_backwards(interpreter_bench) -> None:
    calls: list[str] = []
    functions = {name: (lambda x, name=name: calls.append(name)) for name in "abc"}
    best, rounds = interpreter_bench.time_runners(functions, torch.zeros(1), repeat=3, min_time=0.0)
    assert rounds == 3
    assert set(best) == {"a", "b", "c"}
    # One calibration call each (min_time 0), then the rounds: forwards, backwards, forwards.
    assert calls == [*"abc", *"abc", *"cba", *"abc"]


@pytest.mark.ch4
def test_interpreter_per_node_overhead_is_the_difference_over_the_nodes(interpreter_bench) -> None:
    results = interpreter_bench.Results(nodes={"m": 10})
    results.seconds.update({("m", "minifx gm"): 1e-4, ("m", "minifx interpreter"): 3e-4})
    assert results.per_node("m", "minifx") == pytest.approx(2e-5)


@pytest.mark.ch4
def test_interpreter_main_writes_both_libraries_rows_without_asserting_speed(
    interpreter_bench, tmp_path, capsys
) -> None:
    out = tmp_path / "results" / "interpreter.md"
    status = interpreter_bench.main(
        [
            "--repeat",
            "1",
            "--min-time",
            "0.0001",
            "--image-size",
            "32",
            "--chain-size",
            "10",
            "--construct-repeat",
            "1",
            "--out",
            str(out),
            "--note",
            "smoke",
        ]
    )
    assert status == 0
    printed = capsys.readouterr().out
    report = out.read_text()
    assert (
        "| model | input | nodes | rounds | eager (us) | minifx gm (us) | torch.fx gm (us) "
        "| minifx interpreter (us) | torch.fx interpreter (us) "
        "| minifx interpreter, keep values (us) | torch.fx interpreter, keep values (us) |"
    ) in report
    assert (
        "| model | interpreter | minifx / torch.fx | minifx / minifx gm | torch.fx / torch.fx gm "
        "| minifx per node (us) | torch.fx per node (us) |"
    ) in report
    assert "| model | nodes | minifx (us) | torch.fx (us) | minifx / torch.fx |" in report
    # Node counts are torch.fx's graph sizes: x, linear, relu, output; x, 10 ops, output.
    for row in (
        "| tiny: Linear(4, 4) + relu | 1x4 | 4 | 1 |",
        "| chain of 10 add/relu | 1x4 | 12 | 1 |",
        "| ResNet-50 | 1x3x32x32 | 177 | 1 |",
        "| tiny: Linear(4, 4) + relu | keep values |",
        "| ResNet-50 | default |",
    ):
        assert row in report
        assert row in printed
    assert "Every runner's output equals eager's (`torch.equal`)" in report
    assert "`torch.fx.config.disable_progress = True`" in report
    assert "- Note: smoke" in report
