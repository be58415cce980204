"""The build track through the isolated grading harness (tests/grading/build.py): the
reference earns full marks, a fully carved release earns 0 with each task's message, and
a broken or looping task costs only the tasks that need it, with a message naming it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from tests import classroom, release
from tests import tasks as build_tasks
from tests.grading import build, judge, report
from tests.grading.gradescope import build as build_autograder
from tests.grading.manifest import ROOT, Exercise

pytestmark = [pytest.mark.meta, pytest.mark.needs_solutions]


def _grade(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tests.grading", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def trusted() -> dict[str, bytes]:
    return judge.snapshot()


def test_every_task_is_an_entry_with_its_files_and_tests(trusted):
    entries = build.load_tasks(trusted)
    assert [e.key for e in entries][:2] == ["T1.1", "T1.2"] and all(
        e.kind == "task" for e in entries
    )
    tape = entries[0]
    assert (tape.module, tape.grader) == ("minifx/proxy/tape.py", "tests/proxy/test_tape.py")
    assert build.expected_tests(tape, trusted) == {
        "test_tape_rejects_an_unknown_opcode",
        "test_tape_names_records_uniquely_like_torch_fx",
        "test_tape_prints_tensor_arguments_compactly",
    }
    assert "minifx/passes/int8.py" not in build.task_files(trusted)  # it holds no task


def test_the_reference_earns_full_marks_through_make_grade(tmp_path):
    run = _grade(
        "--track",
        "build",
        "--results",
        str(tmp_path / "results.json"),
        "--verdicts",
        str(tmp_path / "verdicts.txt"),
    )
    assert run.returncode == 0, run.stderr
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["score"] == results["max_score"] > 0, run.stdout
    verdicts = (tmp_path / "verdicts.txt").read_text().splitlines()
    assert verdicts and all(re.fullmatch(r"T\d+\.\d+ pass", line) for line in verdicts), verdicts


def test_a_fully_carved_release_grades_0_with_each_task_s_message(tmp_path):
    out = tmp_path / "student"
    carved = release.release(out, tasks="all")
    run = _grade("--track", "build", "--results", str(tmp_path / "results.json"), cwd=out)
    assert run.returncode == 0, run.stderr
    assert json.loads((tmp_path / "results.json").read_text())["score"] == 0, run.stdout
    first = carved[0]
    assert f"T{first.id} {first.title}: not started; its carved body still raises" in run.stdout
    assert f"NotImplementedError: {first.message()}" in run.stdout
    # A later task that stops in an unfinished earlier one says whose failure it is.
    # (ShapeProp's tests stop in the first stage they reach that is carved: stage 1 or 2.)
    assert re.search(r"T5\.2 .*waits for task [12]\.\d", run.stdout), run.stdout
    assert re.search(r"stop in task [12]\.", run.stdout) and "Traceback" not in run.stdout


def test_one_task_is_graded_alone_with_make_grade_task():
    run = _grade("--task", "6.1")
    assert run.returncode == 0, run.stderr
    assert re.search(r"T6\.1\s+Fold a BatchNorm into conv weights\s+1/1\s+5/5", run.stdout), (
        run.stdout
    )
    assert "T6.2" not in run.stdout and "T1.1" not in run.stdout
    assert "no build task 9.9" in _grade("--task", "9.9").stderr


def _package(trusted, edit) -> dict[str, bytes]:
    package = {path: trusted[path] for path in build.task_files(trusted)}
    for path, (old, new) in edit.items():
        text = package[path].decode()
        assert old in text
        package[path] = text.replace(old, new, 1).encode()
    return package


def test_bad_input_costs_only_the_tasks_that_need_it(trusted):
    entries = {e.id: e for e in build.load_tasks(trusted)}
    loops = _package(
        trusted,
        {
            "minifx/proxy/tape.py": (
                "        if op not in OPCODES:\n",
                "        while True:\n            pass\n        if op not in OPCODES:\n",
            )
        },
    )
    # A limit short enough that the spinning loop costs little, long enough for task 5.1.
    scores = judge.grade(
        [entries["1.1"], entries["5.1"]], {}, judge.Limits(timeout=10), trusted, loops
    )
    assert "timed out after 10 s while running test_tape" in scores[0].problem
    assert scores[1].full, (
        "a task of a later stage that does not run the loop still earns its points"
    )

    broken = _package(
        trusted,
        {
            "minifx/passes/matcher.py": (
                "    def _match_nodes(self",
                "    def _match_nodes(self pn",
            ),
            "minifx/passes/shape_prop.py": (
                "    strided = tensor.layout == torch.strided\n",
                "    return 42\n",
            ),
        },
    )
    scores = judge.grade(
        [entries["1.1"], entries["5.1"], entries["6.1"]],
        {},
        judge.Limits(timeout=60),
        trusted,
        broken,
    )
    assert scores[0].full, "stage 1 does not import the broken stage-5 file"
    for score in scores[1:]:
        assert score.problem.startswith("minifx/passes/matcher.py is not valid Python at line"), (
            score.problem
        )
        assert f"Task {score.exercise.id} imports it" in score.problem

    raises = _package(
        trusted,
        {
            "minifx/passes/shape_prop.py": (
                "    strided = tensor.layout == torch.strided\n",
                "    raise KeyError('half done')\n",
            )
        },
    )
    (score,) = judge.grade([entries["5.1"]], {}, judge.Limits(timeout=60), trusted, raises)
    (test,) = score.tests
    assert test.outcome == "failed" and test.message.startswith("KeyError: 'half done'")
    assert "raised at minifx/passes/shape_prop.py:" in test.message
    text = report.render([score], "minifx/", "task 5.1")
    assert "T5.1 FAILED test_extract_tensor_metadata_of_a_plain_tensor" in text


def test_an_exercise_whose_tests_stop_in_a_carved_task_is_told_to_wait_for_it():
    """In a release with chapter 1 carved, the exercises' tests stop in its tasks: the
    report says those failures are the task's, as for a later task, instead of giving
    each test the exercise's "the stub still raises" hint. Exercise 1.2 shares its id
    with task 1.2 and is still an exercise waiting for it, not the task not started."""
    carved = (
        "NotImplementedError: Task 1.2 (create_proxy and create_arg) is yours to write: read "
        "chapters/01-proxy.md#the-tracer-interface, then check with: make grade TASK=1.2"
    )
    scores = []
    for id_, title in [("1.2", "No in-place"), ("2.1", "Leaf modules")]:
        stub = f"NotImplementedError: Exercise {id_}: f is not written yet; see chapters/x.md#y"
        exercise = Exercise(id_, title, int(id_[0]), "m", "tests/graders/test_m.py", 10)
        tests = [
            judge.TestResult("t.py::test_a", "failed", f"Expected: a trace\nGot: {carved}"),
            judge.TestResult("t.py::test_b", "failed", f"Expected: a trace\nGot: {stub}"),
        ]
        scores.append(judge.Score(exercise, tests))
    text = report.render(scores, "exercises/", "chapters 1 and 2")
    for id_, title in [("1.2", "No in-place"), ("2.1", "Leaf modules")]:
        assert re.search(rf"  {id_} .*0/10  \(waits for task 1\.2\)", text), text
        assert f"{id_} {title}: 1 test(s) stop in task 1.2, which is not written yet" in text
        assert f"{id_} {title}: not started; the stub still raises" in text
    assert "FAILED" not in text and "carved body" not in text, text


def test_task_code_may_not_reach_into_the_grading(trusted):
    entries = {e.id: e for e in build.load_tasks(trusted)}
    sneaky = _package(
        trusted,
        {
            "minifx/passes/fuse_conv_bn.py": (
                "    gamma = bn_weight",
                "    import sys\n    sys._getframe(1)\n    gamma = bn_weight",
            )
        },
    )
    (score,) = judge.grade([entries["6.1"]], {}, judge.Limits(timeout=60), trusted, sneaky)
    assert not score.passed and "inspect the running interpreter" in score.tests[0].message
    assert "minifx/passes/fuse_conv_bn.py:" in score.tests[0].message


def test_without_the_fork_server_a_task_s_worker_starts_afresh(trusted, monkeypatch):
    """Where the judge cannot fork (not Linux), a task's worker starts afresh in its folder
    and grades the submission's minifx: the reference earns full marks, a carved task
    nothing, and the sandbox still refuses what task code may not do. (The tests above
    grade through the fork server.)"""
    monkeypatch.setenv("MINIFX_GRADING_NO_FORK", "1")
    entries = {e.id: e for e in build.load_tasks(trusted)}
    (task,) = [t for t in build_tasks.find_tasks(_minifx(trusted)) if t.id == "6.1"]
    path = task.regions[0].path
    carved = _package(trusted, {})
    carved[path] = build_tasks.carve_source(path, trusted[path].decode(), [task]).encode()
    sneaky = _package(
        trusted,
        {
            path: (
                "    gamma = bn_weight",
                "    import sys\n    sys._getframe(1)\n    gamma = bn_weight",
            )
        },
    )
    scores = [
        judge.grade([entries["6.1"]], {}, judge.Limits(timeout=60), trusted, package)[0]
        for package in (_package(trusted, {}), carved, sneaky)
    ]
    assert scores[0].full, [t.message for t in scores[0].tests if t.outcome != "passed"]
    assert scores[1].earned == 0 and "Task 6.1 (" in scores[1].tests[0].message
    assert "inspect the running interpreter" in scores[2].tests[0].message


def _minifx(trusted: dict[str, bytes]) -> dict[str, bytes]:
    return {path: data for path, data in trusted.items() if path.startswith("minifx/")}


def test_gradescope_and_classroom_take_the_build_track(tmp_path):
    zipped = build_autograder(tmp_path / "autograder.zip", track="all")
    with zipfile.ZipFile(zipped) as archive:
        assert "--track all" in archive.read("run_autograder").decode()
        assert "source/tests/tasks.py" in archive.namelist()
        # The stage tests that grade the tasks: without them the autograder graded nothing.
        assert "source/tests/proxy/test_tape.py" in archive.namelist()
        assert not any(name.startswith("source/solutions/") for name in archive.namelist())
    workflow = yaml.safe_load(
        subprocess.run(
            [sys.executable, "-m", "tests.classroom", "--track", "build", "--chapter", "5"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    steps = workflow["jobs"]["run-autograding-tests"]["steps"]
    assert "--task 5.1 --task 5.2 --track build" in steps[1]["run"]
    assert [s["id"] for s in steps[2:-1]] == [
        "task5-1-describe-a-tensor",
        "task5-2-shapeprop-run-a-node-and-take-notes",
    ]
    assert steps[2]["with"]["command"].startswith("grep -qx 'T5.1 pass'")
    assert classroom.step_id(build.load_tasks(judge.snapshot())[0]) == "task1-1-the-tape"


def test_a_release_carves_what_the_judge_grades(tmp_path):
    # The release's markers are the ones the judge reads: the carved files keep them.
    out = tmp_path / "student"
    release.release(out, tasks="ch6")
    found = build_tasks.find_tasks(build_tasks.source_files(out))
    assert [t.id for t in found] == [
        t.id for t in build_tasks.find_tasks(build_tasks.source_files(ROOT))
    ]
    shutil.rmtree(out)


def test_a_task_file_changed_outside_its_regions_is_not_run(trusted):
    entries = {e.id: e for e in build.load_tasks(trusted)}
    outside = _package(
        trusted, {"minifx/passes/fuse_conv_bn.py": ("import copy\n", "import copy\nimport os\n")}
    )
    scores = judge.grade(
        [entries["1.1"], entries["6.1"]], {}, judge.Limits(timeout=60), trusted, outside
    )
    assert scores[0].full
    assert scores[1].problem.startswith(
        "minifx/passes/fuse_conv_bn.py was changed outside its task regions, at line"
    )
    unmarked = _package(
        trusted, {"minifx/passes/fuse_conv_bn.py": ("# --8<-- [end-task:6.1]\n", "\n")}
    )
    (score,) = judge.grade([entries["6.1"]], {}, judge.Limits(timeout=60), trusted, unmarked)
    assert "task markers" in score.problem and "were removed or broken" in score.problem


def test_a_submission_s_minifx_is_found_below_a_folder_of_the_repository(tmp_path, trusted):
    nested = tmp_path / "upload" / "my-repo"
    shutil.copytree(ROOT / "minifx", nested / "minifx")
    package = build.submitted_package(build.task_files(trusted), tmp_path / "upload")
    assert sorted(package) == build.task_files(trusted)
    assert package["minifx/proxy/tape.py"] == trusted["minifx/proxy/tape.py"]
