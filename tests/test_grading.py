"""Checks of the grading machinery, on the real manifest and on a throwaway course.

The project's own run already proves that every grader passes on `solutions/` (it
collects `tests/graders` with the default `--impl solutions`). These tests add the other
half of the contract: the manifest is complete, every graded test fails on the untouched
stubs, and `python -m tests.grading` reports 0 points on the stubs and full points on the
solutions without crashing, whatever state a grader is in. Attacks by student code are in
tests/test_grading_attacks.py.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.graders.support import explain
from tests.grading import GradingError, Limits, grade, judge, load_manifest, main
from tests.grading.judge import submitted_modules

pytestmark = [pytest.mark.meta, pytest.mark.needs_solutions]

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = load_manifest()


def _python(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )


def _test_names(source: str) -> list[str]:
    tree = ast.parse(source)
    return [
        n.name
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef) and n.name.startswith("test")
    ]


# --- the real manifest ------------------------------------------------------------


def test_manifest_lists_exercises():
    assert EXERCISES, (
        "tests/graders/points.toml lists no exercise; add one table per exercise (see its header)"
    )


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.id)
def test_manifest_entry_has_stub_solution_and_grader(exercise):
    paths = [f"exercises/{exercise.module}.py", f"solutions/{exercise.module}.py", exercise.grader]
    missing = [p for p in paths if not (ROOT / p).is_file()]
    assert not missing, (
        f"exercise {exercise.id} in tests/graders/points.toml names files that do not exist: {missing}"
    )
    source = (ROOT / exercise.grader).read_text(encoding="utf-8")
    assert _test_names(source), (
        f"{exercise.grader} has no test_ function; exercise {exercise.id} cannot score"
    )
    marker = f"pytest.mark.ch{exercise.chapter}"
    assert marker in source, (
        f"{exercise.grader}: add `pytestmark = {marker}` (exercise {exercise.id} is in chapter {exercise.chapter})"
    )


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.id)
def test_exercise_index_of_the_book_lists_the_manifest(exercise):
    index = (ROOT / "chapters" / "exercises.md").read_text(encoding="utf-8")
    row = f"| {exercise.title} | `exercises/{exercise.module}.py` | {exercise.points:g} |"
    assert f"[{exercise.id}](" in index and row in index, (
        f"chapters/exercises.md is out of date for exercise {exercise.id}: add or fix its row, "
        f"`| [{exercise.id}](<chapter page>#<anchor>) {row}`"
    )


def _junit_outcomes(path: Path) -> dict[str, str]:
    outcomes = {}
    for case in ET.parse(path).iter("testcase"):
        kinds = {child.tag for child in case}
        outcome = (
            "failed"
            if kinds & {"failure", "error"}
            else "skipped"
            if "skipped" in kinds
            else "passed"
        )
        outcomes[f"{case.get('classname')}::{case.get('name')}"] = outcome
    return outcomes


def test_every_graded_test_fails_on_the_untouched_stubs(tmp_path):
    graders = [e.grader for e in EXERCISES if (ROOT / e.grader).is_file()]
    assert graders, "no grader file of tests/graders/points.toml exists yet"
    junit = tmp_path / "stubs.xml"
    run = _python(
        "-m",
        "pytest",
        "-q",
        "--tb=no",
        "-p",
        "no:cacheprovider",
        "--impl=exercises",
        f"--junitxml={junit}",
        *graders,
    )
    assert run.returncode in (0, 1) and junit.exists(), (
        f"pytest could not run the graders on the stubs:\n{run.stdout}{run.stderr}"
    )
    outcomes = _junit_outcomes(junit)
    ran = [name for name, outcome in outcomes.items() if outcome != "skipped"]
    assert ran, f"no graded test ran on the stubs:\n{run.stdout}"
    passed = [name for name, outcome in outcomes.items() if outcome == "passed"]
    assert not passed, (
        f"these graded tests pass on the untouched stubs in exercises/; a grader that passes on a stub is a bug: {passed}"
    )


@pytest.mark.parametrize("impl", ["exercises", "solutions"])
def test_grading_tool_scores_stubs_zero_and_solutions_full(impl, tmp_path):
    results = tmp_path / "results.json"
    run = _python("-m", "tests.grading", f"--impl={impl}", f"--results={results}")
    assert run.returncode == 0, (
        f"python -m tests.grading --impl {impl} failed:\n{run.stdout}{run.stderr}"
    )
    assert "total" in run.stdout, run.stdout
    report = json.loads(results.read_text(encoding="utf-8"))
    assert report["max_score"] == sum(e.points for e in EXERCISES)
    expected = 0 if impl == "exercises" else report["max_score"]
    assert report["score"] == pytest.approx(expected), run.stdout
    assert sum(t["max_score"] for t in report["tests"]) == pytest.approx(report["max_score"])
    assert all(
        t["status"] == ("failed" if impl == "exercises" else "passed") for t in report["tests"]
    ), run.stdout


def test_grading_a_chapter_without_exercises_says_so(capsys):
    assert main(["--chapter", "99"]) == 0
    assert "No exercises in chapter 99" in capsys.readouterr().out


# --- a throwaway course: every way a grader can be broken --------------------------

MACHINERY = [
    "pyproject.toml", "conftest.py", "tests/__init__.py", "tests/conftest.py", "tests/tasks.py",
    "tests/task_markers.py",
    *[f"tests/grading/{p.name}" for p in (ROOT / "tests" / "grading").glob("*.py")],
    "tests/graders/__init__.py", "tests/graders/support.py", "exercises/__init__.py", "solutions/__init__.py",
]  # fmt: skip

TOY = {
    "tests/graders/points.toml": """
        [exercises."9.1"]
        title = "Double"
        chapter = 9
        module = "ch9_double"
        grader = "tests/graders/test_ex9_1_double.py"
        points = 10
        [exercises."9.2"]
        title = "Grader missing"
        chapter = 9
        module = "ch9_double"
        grader = "tests/graders/test_ex9_2_missing.py"
        points = 10
        [exercises."9.3"]
        title = "Stub raising on import"
        chapter = 9
        module = "ch9_on_import"
        grader = "tests/graders/test_ex9_3_on_import.py"
        points = 10
        [exercises."9.4"]
        title = "No tests"
        chapter = 9
        module = "ch9_double"
        grader = "tests/graders/test_ex9_4_empty.py"
        points = 10
        [exercises."9.5"]
        title = "Grader that cannot be collected"
        chapter = 9
        module = "ch9_double"
        grader = "tests/graders/test_ex9_5_uncollectable.py"
        points = 10
        """,
    "exercises/ch9_double.py": """
        def double(x):
            return x + 1  # a wrong attempt, not a stub: the grader's message must show
        """,
    "solutions/ch9_double.py": "def double(x):\n    return 2 * x\n",
    "exercises/ch9_on_import.py": 'raise NotImplementedError("Exercise 9.3: write me, see chapters/09.md#on-import")\n',
    "solutions/ch9_on_import.py": "VALUE = 3\n",
    "tests/graders/test_ex9_1_double.py": """
        import pytest
        from tests.graders.support import explain
        pytestmark = pytest.mark.ch9

        def test_double(impl):
            got = impl.load("ch9_double").double(2)
            assert got == 4, explain("double(2) == 4", repr(got), "multiply by two", "chapters/09.md#double")

        def test_double_on_device(impl, device):
            import torch
            x = torch.arange(3.0, device=device)
            assert torch.equal(impl.load("ch9_double").double(x), 2 * x)
        """,
    "tests/graders/test_ex9_3_on_import.py": """
        import pytest
        pytestmark = pytest.mark.ch9

        def test_value(impl):
            assert impl.load("ch9_on_import").VALUE == 3
        """,
    "tests/graders/test_ex9_4_empty.py": '"""A grader without tests."""\n',
    "tests/graders/test_ex9_5_uncollectable.py": 'raise RuntimeError("boom while importing the grader")\n',
}


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("toy")
    for path in MACHINERY:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, root / path)
    for path, text in TOY.items():
        (root / path).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return root


def test_grading_copes_with_every_broken_grader(toy):
    run = _python("-m", "tests.grading", "--results=out/results.json", cwd=toy)
    assert run.returncode == 0, run.stdout + run.stderr
    for expected in [
        "Expected: double(2) == 4\n    Got: 3\n    Hint: multiply by two\n    See: chapters/09.md#double",
        "9.3 Stub raising on import: not started; the stub still raises\n"
        "    NotImplementedError: Exercise 9.3: write me, see chapters/09.md#on-import",
        "grader missing: tests/graders/test_ex9_2_missing.py does not exist",
        "no tests collected from tests/graders/test_ex9_4_empty.py",
        "could not collect tests/graders/test_ex9_5_uncollectable.py",
        "RuntimeError: boom while importing the grader",
        # A bare assert: its line, and the command that shows pytest's report of it.
        "assertion failed (the test gave no message)\n"
        "      checked at tests/graders/test_ex9_1_double.py:",
        "run it alone:\n      .venv/bin/python -m pytest "
        "'tests/graders/test_ex9_1_double.py::test_double_on_device[cpu]' --impl exercises",
    ]:
        assert expected in run.stdout, f"missing {expected!r} in:\n{run.stdout}"
    assert "assert 3 == 4" not in run.stdout, (
        "pytest's assertion rewrite should not follow the grader's message"
    )
    report = json.loads((toy / "out/results.json").read_text(encoding="utf-8"))
    assert (report["score"], report["max_score"]) == (0, 50)


def test_grading_splits_points_over_the_tests_that_ran(toy):
    run = _python("-m", "tests.grading", "--impl=solutions", "--chapter=9", cwd=toy)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = {line.split()[0]: line for line in run.stdout.splitlines() if line.startswith("  9.")}
    assert rows["9.1"].endswith("10/10") and rows["9.3"].endswith("10/10"), run.stdout
    assert rows["9.2"].endswith("0/10") and rows["9.4"].endswith("0/10"), run.stdout
    assert "20/50" in run.stdout, run.stdout


def test_broken_manifest_is_reported_with_where_and_how(tmp_path):
    manifest = tmp_path / "points.toml"
    manifest.write_text('[exercises."1.1"]\ntitle = "x"\nchapter = 1\nmodule = "m"\npoints = 10\n')
    with pytest.raises(GradingError, match=r'\[exercises."1.1"\]: needs `grader` \(a str\)'):
        load_manifest(manifest)


def test_manifest_that_is_not_tables_is_reported(tmp_path):
    manifest = tmp_path / "points.toml"
    manifest.write_text('exercises = ["1.1"]\n')
    with pytest.raises(GradingError, match="one table per exercise"):
        load_manifest(manifest)


def test_explain_orders_expected_got_hint_see():
    message = explain("4", "3", "multiply by two", "chapters/01-proxy.md#operators")
    assert message.splitlines() == [
        "Expected: 4",
        "Got: 3",
        "Hint: multiply by two",
        "See: chapters/01-proxy.md#operators",
    ]
    with pytest.raises(ValueError, match="chapters/<page>.md#<anchor>"):
        explain("4", "3", "hint", "the book")


def test_a_check_without_a_message_names_its_line_and_how_to_see_more():
    """A bare `assert` or an unmet `pytest.raises`, which the stage tests that grade build
    tasks use, reach the report with no message: it names the test's line and the command
    that runs that test alone (the worker has no assertion rewriting)."""
    from tests.grading import worker

    def check_without_message():
        raise AssertionError()

    with pytest.raises(AssertionError) as bare:
        check_without_message()
    with pytest.raises(pytest.fail.Exception) as unmet:
        with pytest.raises(ValueError):
            pass
    rerun = ".venv/bin/python -m pytest 'tests/proxy/test_tape.py::test_x'"
    for excinfo, head, line in [
        (bare, "assertion failed (the test gave no message)", "raise AssertionError()"),
        (unmet, "DID NOT RAISE", "with pytest.raises(ValueError):"),
    ]:
        outcome, message = worker._outcome(excinfo, "call", rerun)
        assert outcome == "failed" and message.startswith(head), message
        assert "checked at tests/test_grading.py:" in message and line in message, message
        assert message.endswith(f"run it alone:\n  {rerun}"), message


def test_an_error_in_the_grader_s_own_code_says_it_is_not_the_student_s():
    """A grader that crashes on an answer it did not foresee (exercise 3.1's once passed
    a dict where its printer wanted a graph's text) must not read as the student's error."""
    from tests.graders.support import explain_texts
    from tests.grading import worker

    with pytest.raises(AttributeError) as crashed:
        explain_texts("the graph", "%x = ...", {"x": True}, "a hint", "chapters/x.md", "graph")
    outcome, message = worker._outcome(crashed, "call")
    assert outcome == "failed"
    assert message.startswith(
        "AttributeError: 'dict' object has no attribute 'splitlines'\n"
        "  raised in the grader, not in your code, at tests/graders/support.py:"
    ), message
    assert message.endswith("if it looks right to you, tell your course staff"), message


def test_messages_name_files_as_in_the_repository_not_as_staged():
    """minifx's trace errors quote the user's file; in a worker that is a staged copy, a
    folder the student does not have."""
    from tests.grading import worker

    staged = worker.ROOT / "tests" / "graders" / "test_ex2_1_leaf_modules.py"
    with pytest.raises(RuntimeError) as raised:
        raise RuntimeError(f'File "{staged}", line 46, in forward')
    _, message = worker._outcome(raised, "call")
    assert message.startswith(
        'RuntimeError: File "tests/graders/test_ex2_1_leaf_modules.py", line 46, in forward'
    ), message


def test_a_worker_stopped_before_collection_says_how_it_stopped():
    """A worker stopped at the time limit while the grader's imports ran (torch._dynamo
    on a loaded machine, say) reported nothing; its score says it timed out, rather than
    "could not collect" followed by nothing."""
    from tests.grading.judge import Limits, Run, judge

    exercise = _exercise("9.1")
    timed_out = judge(exercise, Run(ended="timeout"), {}, Limits(timeout=30), set())
    assert timed_out.problem == (
        f"could not collect {exercise.grader}:\ntimed out after 30 s: look for a loop "
        "that never ends (or code far slower than it should be)"
    ), timed_out.problem
    crashed = Run(ended="exit", returncode=-11, output="Fatal Python error: Segmentation fault")
    problem = judge(exercise, crashed, {}, Limits(), set()).problem
    assert "killed by signal 11" in problem and problem.endswith("Segmentation fault"), problem
    failed = Run(records=[{"kind": "collect_error", "message": "ImportError: no module x"}])
    assert judge(exercise, failed, {}, Limits(), set()).problem.endswith("no module x")


def test_tests_that_fail_with_the_same_message_share_one_block():
    """One mistake met by every case (an exception in the replacement, say) is shown
    once, with how many tests and which, not once per test; other messages keep theirs."""
    from tests.grading.judge import Score, TestResult
    from tests.grading.report import render

    crash = "Expected: f(x) runs\nGot: AttributeError: no silu\nSee: chapters/07.md#a"
    tests = [TestResult(f"g.py::test_count[{case}]", "failed", crash) for case in "abcdef"]
    tests.insert(1, TestResult("g.py::test_trace", "failed", "Expected: one node\nGot: two"))
    tests.append(TestResult("g.py::test_ok", "passed"))
    text = render([Score(_exercise("7.1"), tests)], "exercises/", "exercise 7.1")
    assert text.count("AttributeError: no silu") == 1, text
    assert (
        "7.1 FAILED 6 tests with the same message: test_count[a], test_count[b], "
        "test_count[c], test_count[d] and 2 more\n    Expected: f(x) runs"
    ) in text, text
    assert "7.1 FAILED test_trace\n    Expected: one node" in text, text
    assert "1/8" in text, "the table still counts every test"


def test_the_report_shows_control_characters_as_escapes_instead_of_obeying_them():
    """Graded code's message can hold a terminal's escape sequences (which could draw a fake
    table of full marks over the report) and Unicode's bidirectional controls; the report
    prints them as escapes, in the terminal and in Gradescope's results.json."""
    from tests.grading.judge import Score, TestResult
    from tests.grading.report import gradescope, render

    forged = "boom\x1b[8A\x1b[2K  3.1  Method relu  16/16  10/10\u202e\r\tend"
    score = Score(_exercise("3.1"), [TestResult("g.py::test_one", "failed", forged)])
    text = render([score], "exercises/", "exercise 3.1", verbose=True)
    shown = "boom\\x1b[8A\\x1b[2K  3.1  Method relu  16/16  10/10\\u202e"
    assert shown in text, text  # (the terminal report breaks the line at the \r)
    assert not any(c in text for c in "\x1b\u202e\r"), text
    (entry,) = gradescope([score])["tests"]
    assert entry["output"] == shown + "\\r\tend"


def test_a_report_record_nested_too_deeply_is_a_forged_one():
    deep = b"[" * 100_000 + b"]" * 100_000  # json.loads raises RecursionError
    assert judge.verify([deep], b"key") == (
        [],
        "record 0 of the report is not one the grading worker wrote",
    )


def test_a_task_file_too_deep_for_the_task_checks_costs_that_task_not_the_report(monkeypatch):
    """Python compiles some files a few levels too deep for `ast.parse` called from a deeper
    stack (by how much depends on the stack): the checks that read the syntax tree raised
    RecursionError, and the whole grading stopped with no report."""
    from tests.grading import build

    def too_deep(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded during ast construction")

    trusted = judge.snapshot()
    path = sorted(build.task_files(trusted))[0]
    monkeypatch.setattr(build.ast, "parse", too_deep)  # the checks' view of such a file
    assert build.file_problem(path, trusted[path], trusted, "1.1") == (
        f"{path} cannot be read as Python (RecursionError); task 1.1 imports it, "
        "so its tests did not run"
    )


def test_only_plain_values_pass_for_plain():
    from collections import namedtuple
    from unittest.mock import ANY

    import torch

    from tests.graders.support import not_plain, plain, plain_tensors, text

    see = "chapters/01-proxy.md#operators"
    value = {"a": [1, 2.5, (None, True)], "b": "x"}
    assert not_plain(value) is None and plain(value, "a dict", "it", see) is value
    pair = namedtuple("Pair", "a b")
    always = type("Always", (str,), {"__eq__": lambda self, other: True, "__hash__": str.__hash__})
    assert not_plain([1, {"k": ANY}]) == "a _ANY in a dict in a list"
    assert not_plain(pair(1, 2)) == "a Pair"
    assert not_plain(always("x")) == "a Always"
    assert not_plain(["x", 1], (str,)) == "a int in a list"
    with pytest.raises(pytest.fail.Exception, match="Got: a _ANY: <ANY>"):
        plain(ANY, "a dict", "it", see)
    tensor = type("Sub", (torch.Tensor,), {})
    with pytest.raises(pytest.fail.Exception, match="a Sub, a subclass of torch.Tensor"):
        plain_tensors((torch.zeros(1), torch.zeros(1).as_subclass(tensor)), "it", see)
    assert type(text(type("P", (), {"__str__": lambda self: always("x")})())) is str


def test_tensor_comparisons_refuse_subclasses_other_shapes_and_a_swapped_torch(monkeypatch):
    import torch

    from tests.graders.support import tensors_close, tensors_equal

    assert tensors_equal(torch.ones(2), torch.ones(2))
    assert not tensors_equal(torch.ones(2), torch.ones(3))
    assert not tensors_close(torch.ones(2), torch.ones(1))  # torch.allclose would broadcast
    assert tensors_close(torch.ones(2), torch.ones(2) + 1e-9)
    sub = torch.ones(2).as_subclass(type("Sub", (torch.Tensor,), {}))
    assert not tensors_equal(sub, torch.ones(2)) and not tensors_close(torch.ones(2), sub)
    # A name of torch swapped for a while (a grader works out what it expects with it).
    monkeypatch.setattr(torch, "round", lambda *args, **kwargs: None)
    with pytest.raises(pytest.fail.Exception, match="replaced torch.round while this test ran"):
        tensors_equal(torch.ones(2), torch.ones(2))
    monkeypatch.undo()
    # A method added to torch.Tensor that hides the one torch._C.TensorBase defines.
    monkeypatch.setattr(torch.Tensor, "abs", lambda self: self, raising=False)
    with pytest.raises(pytest.fail.Exception, match="replaced torch.Tensor.abs while"):
        tensors_close(torch.ones(2), torch.ones(2))


def test_graders_compare_tensors_through_the_support_module():
    """torch.equal and torch.allclose are looked up when called: graded code could have
    swapped them for the length of a test (support.py, "comparisons graded code cannot
    swap"). Graders call support.tensors_equal and tensors_close instead."""
    found = []
    for grader in sorted((ROOT / "tests" / "graders").glob("test_ex*.py")):
        for node in ast.walk(ast.parse(grader.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in ("equal", "allclose", "isclose", "assert_close")
                and isinstance(node.value, (ast.Name, ast.Attribute))
            ):
                found.append(f"{grader.name}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "use tensors_equal / tensors_close from support:\n" + "\n".join(found)


# --- bad submissions and hangs, through the judge -------------------------------------


def _exercise(id_: str):
    return next(e for e in EXERCISES if e.id == id_)


def test_bad_submissions_cost_their_exercise_only_with_one_sentence(tmp_path):
    files = {
        "ch1_proxy_failure.py": "def capture_trace_error(:\n",
        "ch1_no_inplace.py": "",
        "ch2_leaf_modules_v2.py": (ROOT / "solutions" / "ch2_leaf_modules.py").read_text(),
        "ch2_remove_noops.py": "import numpyy\n",
        "ch3_method_relu.py": (ROOT / "solutions" / "ch3_method_relu.py").read_text(),
        "ch3_lower_linear.py": "x = " + "-" * 100_000 + "1\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    chosen = [_exercise(i) for i in ("1.1", "1.2", "2.1", "2.2", "3.1", "3.2")]
    scores = {
        s.exercise.id: s
        for s in grade(chosen, submitted_modules(chosen, tmp_path), Limits(timeout=30))
    }
    assert scores["1.1"].problem.startswith(
        "exercises/ch1_proxy_failure.py is not valid Python at line 1: "
    )
    assert scores["1.2"].problem.startswith("exercises/ch1_no_inplace.py is empty")
    assert scores["2.1"].problem == (
        "exercises/ch2_leaf_modules.py is not in the submission: submit it under that name"
    )
    missing = {t.message for t in scores["2.2"].tests}
    assert scores["2.2"].earned == 0 and len(missing) == 1, missing
    assert missing.pop().startswith(
        "ModuleNotFoundError: No module named 'numpyy'\n  raised at "
        "exercises/ch2_remove_noops.py:1: import numpyy"
    )
    assert scores["3.1"].full, [t.message for t in scores["3.1"].tests if t.outcome != "passed"]
    assert (
        scores["3.2"].problem
        == "exercises/ch3_lower_linear.py is nested too deeply for Python to read: "
        "write it as ordinary code"
    )


def test_a_submitted_file_too_large_is_refused_before_the_judge_reads_it_as_python(tmp_path):
    """The judge compiles and scans submitted files itself, with no limit of time or memory
    (a module of 10 MB took it 136 s and 4.9 GB): past 1 MB, a file is not read as Python."""
    from tests.grading import build

    exercise = _exercise("3.1")
    huge = b"x = 1\n" + b"# padding\n" * 200_000  # 2 MB
    (tmp_path / f"{exercise.module}.py").write_bytes(huge)
    modules = submitted_modules([exercise], tmp_path)
    assert len(modules[exercise.module]) == build.MAX_SUBMITTED_BYTES + 1  # read no further
    problem = (
        "exercises/ch3_method_relu.py is larger than 1 MB, the most a submitted file may "
        "hold: submit the file you wrote, without data"
    )
    trusted = judge.snapshot()
    assert judge.precheck(exercise, modules, trusted) == problem
    path = sorted(build.task_files(trusted))[0]
    assert build.file_problem(path, huge, trusted, "1.1").startswith(f"{path} is larger than 1 MB")


def test_a_stopped_exercise_counts_the_tests_that_a_full_run_counts():
    """The `[cuda]` cases that a machine without CUDA skips are left out of a stopped run's
    count too: its table row said 0/20 where a full run says 16/16."""
    exercise = _exercise("3.1")
    stub = (ROOT / "exercises" / f"{exercise.module}.py").read_bytes()
    refused = stub + b'\nimport tempfile\nopen(tempfile.gettempdir() + "/x", "w")\n'
    solved = (ROOT / "solutions" / f"{exercise.module}.py").read_bytes()
    stopped, full = [
        grade([exercise], {exercise.module: code}, Limits(timeout=60))[0]
        for code in (refused, solved)
    ]
    assert "graded code tried to write files" in stopped.tests[0].message
    assert stopped.earned == 0 and len(stopped.ran) == len(full.ran) == full.passed


@pytest.mark.parametrize("character", ["\x0c", "\x1c", "\x85", "\u2028"])
def test_a_task_file_with_a_line_break_python_does_not_count_is_refused(character):
    """Task regions are found by lines, functions by the compiler's line numbers: with a
    character that only one of them counts as a line break (18 of U+001C in a comment, in
    round eleven), a later region's functions passed for the reference's own code."""
    from tests.grading import build

    trusted = judge.snapshot()
    path = "minifx/proxy/proxy.py"
    lines = trusted[path].decode().splitlines(keepends=True)
    lines[2] = f"# notes{character}\n"
    assert build.file_problem(path, "".join(lines).encode(), trusted, "1.2") == (
        f"{path} holds {character!r} at line 3, a character that some tools count as a line "
        "break and Python does not: remove it; task 1.2 imports it"
    )


def test_a_submission_a_thousand_folders_deep_is_still_graded(tmp_path):
    """pathlib's `rglob` recursed through such a folder until Python's stack ran out: the
    grading stopped with a RecursionError and wrote no report (round eleven)."""
    from tests.grading import build

    exercise = _exercise("3.1")
    deep = [tmp_path / "d"]
    for _ in range(1200):  # one by one: os.makedirs and shutil.rmtree recurse too
        deep[-1].mkdir()
        deep.append(deep[-1] / "d")
    nested = tmp_path / "upload" / "my-repo" / "exercises"
    nested.mkdir(parents=True)
    (nested / f"{exercise.module}.py").write_text("x = 1\n")
    try:
        assert submitted_modules([exercise], tmp_path) == {exercise.module: b"x = 1\n"}
        assert build.submitted_package(["minifx/proxy/tape.py"], tmp_path) == {}
    finally:
        for folder in reversed(deep[:-1]):
            folder.rmdir()


def test_graded_code_runs_on_the_cpu_on_every_machine():
    # The same grade with or without a GPU: the `[cuda]` cases are left out everywhere.
    assert judge.worker_environment("token", jobs=1)["CUDA_VISIBLE_DEVICES"] == ""


def test_a_hang_costs_its_time_limit_and_nothing_more():
    hang, other = _exercise("3.1"), _exercise("1.1")
    stub = (ROOT / "exercises" / f"{hang.module}.py").read_bytes()
    modules = {
        hang.module: stub + b"\nwhile True:\n    pass\n",
        other.module: (ROOT / "solutions" / f"{other.module}.py").read_bytes(),
    }
    started = time.monotonic()
    scores = grade([hang, other], modules, Limits(timeout=5, jobs=2))
    took = time.monotonic() - started
    assert took < 5 + 6, f"grading took {took:.1f} s with a 5 s limit"
    assert scores[0].problem.startswith("timed out after 5 s while running test_"), scores[
        0
    ].problem
    assert scores[1].full, [t.message for t in scores[1].tests if t.outcome != "passed"]


def test_without_the_fork_server_each_worker_starts_afresh(monkeypatch):
    monkeypatch.setenv("MINIFX_GRADING_NO_FORK", "1")
    solved, stub = _exercise("1.1"), _exercise("2.2")
    modules = {
        solved.module: (ROOT / "solutions" / f"{solved.module}.py").read_bytes(),
        stub.module: (ROOT / "exercises" / f"{stub.module}.py").read_bytes(),
    }
    scores = grade([solved, stub], modules, Limits(timeout=60))
    assert scores[0].full, [t.message for t in scores[0].tests if t.outcome != "passed"]
    assert scores[1].earned == 0 and scores[1].tests and not scores[1].problem


def test_a_fork_server_is_kept_for_the_next_grading_and_replaced_once_it_ended():
    solved = _exercise("1.1")
    modules = {solved.module: (ROOT / "solutions" / f"{solved.module}.py").read_bytes()}

    def graded_by() -> subprocess.Popen:
        (score,) = grade([solved], modules, Limits(timeout=60))
        assert score.full, [t.message for t in score.tests if t.outcome != "passed"]
        return list(judge._KEPT.values())[-1].server.process  # the last one used

    first = graded_by()
    assert graded_by() is first
    os.killpg(first.pid, signal.SIGKILL)  # a server that ended (the judge never kills one)
    first.wait(timeout=30)
    assert graded_by() is not first


# --- stopping a grading ------------------------------------------------------------


def _processes_tagged(tag: str) -> dict[int, int]:
    """The live processes whose environment holds `MINIFX_TEST_TAG=tag`: pid -> parent's pid."""
    needle = f"MINIFX_TEST_TAG={tag}".encode()
    found = {}
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if needle in environ.read_bytes().split(b"\0"):
                parent = judge._stat_fields(environ.parent / "stat")[1]
                found[int(environ.parent.name)] = int(parent)
        except (OSError, IndexError, ValueError):
            continue  # ended meanwhile
    return found


def _worker_in_its_loop(tag: str, judge: int) -> bool:
    """Whether the worker (the fork server's child, so the judge's grandchild) sleeps in
    `time.sleep`: only then has it done all it says to the judge, so that nothing but
    being killed can end it (a worker that writes to a dead judge's pipe dies of it)."""
    family = _processes_tagged(tag)
    for pid, parent in family.items():
        if parent in family and parent != judge:
            with contextlib.suppress(OSError):
                return Path(f"/proc/{pid}/wchan").read_text() == "hrtimer_nanosleep"
    return False


def _until(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


# `python -m tests.grading --exercise 3.1`, where exercise 3.1 is the stub and a loop that
# never ends (a sleeping one: a spinning one would take a core from the rest of the suite).
HANGING_GRADING = """
import sys
from tests.grading import cli, judge
stub = open("exercises/ch3_method_relu.py", "rb").read()
hang = b"\\nimport time\\nwhile True:\\n    time.sleep(0.2)\\n"
judge.submitted_modules = lambda exercises, folder: {"ch3_method_relu": stub + hang}
sys.exit(cli.main(["--exercise", "3.1", "--timeout", "300"]))
"""


@pytest.fixture
def hanging_grading(tmp_path):
    """A grading in a process of its own, once its worker is in the endless loop; the tag in
    its environment (and so in its fork server's and worker's) and its temporary folder."""
    tag = os.urandom(8).hex()
    env = {**os.environ, "MINIFX_TEST_TAG": tag, "TMPDIR": str(tmp_path)}
    process = subprocess.Popen(
        [sys.executable, "-c", HANGING_GRADING],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        if not _until(lambda: _worker_in_its_loop(tag, process.pid), 120):
            pytest.fail("the grading's worker never reached its endless loop")
        yield process, tag, tmp_path
    finally:
        for pid in _processes_tagged(tag):  # if a check failed, leave no loop running
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        process.communicate()


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc; the fork server is Linux's")
def test_sigterm_stops_a_grading_at_once_and_leaves_nothing_behind(hanging_grading):
    process, tag, temporary = hanging_grading
    process.send_signal(signal.SIGTERM)  # as `kill` or a cancelled CI job does
    _, err = process.communicate(timeout=20)  # not the 300 s limit of the exercise
    assert process.returncode == 128 + signal.SIGTERM, err
    assert "grading stopped before the end: no report" in err
    assert _until(lambda: not _processes_tagged(tag), 10), "a worker outlived the grading"
    assert not list(temporary.glob("minifx-*")), "the grading left its folders behind"


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc; the fork server is Linux's")
def test_a_killed_judge_s_workers_end_with_it(hanging_grading):
    process, tag, _ = hanging_grading
    process.kill()  # SIGKILL: the judge cannot clean up, the kernel ends the rest
    process.communicate(timeout=20)
    assert _until(lambda: not _processes_tagged(tag), 10), "a worker outlived its judge"


def test_the_instructor_guide_s_chapter_command_works_as_written():
    # `--impl solutions` (a space, not `=`) only works if the option is registered in the
    # root conftest.py; `-m ch3` must select chapter 3's stage tests and its graders.
    run = _python(
        "-m",
        "pytest",
        "-m",
        "ch3",
        "--impl",
        "solutions",
        "--collect-only",
        "-q",
        "-p",
        "no:cacheprovider",
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert (
        "tests/graders/test_ex3_1_method_relu.py::" in run.stdout and "tests/codegen/" in run.stdout
    )
    assert "tests/graders/test_ex2_1" not in run.stdout
