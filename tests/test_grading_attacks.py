"""Student code against the grading, through each entry point: `make grade`, Gradescope, Classroom.

Each entry point grades two submissions:

- the solutions, with global state changed at import in one module (default dtype, seed,
  grad mode, threads): every other exercise must still get full marks, because each is
  graded in its own process;
- the untouched stubs with one attack appended to each exercise (skips, exits, a hang, a
  memory hog, patching the worker or torch, forging its report, overwriting graders,
  importing solutions, an object that equals anything, a manifest of its own, a process
  left behind): every exercise must get 0, with a message that says what happened, and
  the report must still be written.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from tests import classroom
from tests.grading import load_manifest
from tests.grading.gradescope import build
from tests.grading.judge import TRUSTED

pytestmark = [pytest.mark.meta, pytest.mark.needs_solutions]

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = load_manifest()
MODULES = {e.id: e.module for e in EXERCISES}
TIMEOUT = "20"  # seconds per exercise here; the hang below must cost only this much

LEAKY = "1.2"
LEAKS = """
import torch
torch.set_default_dtype(torch.float64)  # left in by mistake: must not cost other exercises
torch.manual_seed(1234)
torch.set_grad_enabled(False)
torch.set_num_threads(1)
"""

# exercise id -> (what is planted at the top of the stub, words the report must show).
# Written as a student would: most are refused by the judge's scan before anything runs;
# tests/test_grading_tampering.py has the same kinds of attack written to get past it.
FRAMEWORK = "graded code may not use the test framework"
ATTACKS = {
    "0.1": (
        "import builtins\nbuiltins.isinstance = lambda *args: True\n",
        "reaches into the running",
    ),
    "1.1": ("import unittest\nraise unittest.SkipTest('not today')\n", FRAMEWORK),
    "1.2": ("import pytest\npytest.skip('later', allow_module_level=True)\n", FRAMEWORK),
    "2.1": ("import pytest\npytest.exit('done', returncode=0)\n", FRAMEWORK),
    "2.2": ("import os\nos._exit(0)\n", "exited with code 0"),
    "3.1": (
        "import threading\nthreading.Thread(target=print).start()\n",
        "reaches into the running",
    ),
    "3.2": ("raise KeyboardInterrupt\n", "KeyboardInterrupt"),
    "4.1": (
        "from solutions.ch4_flop_counting import *  # noqa\n",
        "may not import the reference solutions",
    ),
    "4.2": (
        """
import sys
for module in list(sys.modules.values()):
    plugin = getattr(module, "GradingPlugin", None)
    if plugin is not None:
        plugin.pytest_runtest_makereport = lambda self, item, call: self.outcomes.__setitem__(
            item.nodeid, ("passed", ""))
import _pytest.runner
_pytest.runner.CallInfo.from_call = classmethod(lambda cls, func, when, reraise=None: cls(
    None, None, 0, 0, 0, when, _ispytest=True))
""",
        FRAMEWORK,
    ),
    "5.1": (
        """
import json, os
for fd in range(3, 40):
    for seq in range(200):
        line = json.dumps({"body": json.dumps({"seq": seq, "kind": "result", "outcome": "passed"}),
                           "mac": "0" * 64}) + "\\n"
        try:
            os.write(fd, line.encode())
        except OSError:
            break
""",
        "not",
    ),
    "5.2": (
        """
import torch, torch.testing
torch.equal = lambda *a, **k: True
torch.allclose = lambda *a, **k: True
torch.testing.assert_close = lambda *a, **k: None
""",
        "may not change the modules it imports",
    ),
    "6.1": (
        """
from pathlib import Path
PASS = "def test_anything():\\n    pass\\n"
for base in {Path(__file__).resolve().parents[1], Path.cwd()}:
    for grader in (base / "tests" / "graders").glob("test_ex*.py"):
        grader.write_text(PASS)
""",
        "write files",
    ),
    "6.2": ("HOG = b'x' * (6 * 1024**3)\n", "memory"),
    "7.1": ("raise SystemExit(0)\n", "SystemExit"),
    "7.2": (
        """
class AlwaysEqual:
    def __eq__(self, other):
        return True


def find_chains(graph, ops):
    return AlwaysEqual()
""",
        "may not choose how it compares",
    ),
    "8.1": (
        """
import os, subprocess, sys, textwrap
script = textwrap.dedent('''
    import json, os, time
    time.sleep(4)
    for name in ("AUTOGRADER_ROOT", "RUNNER_TEMP"):
        root = os.environ.get(name)
        if root:
            for path in (root + "/results/results.json", root + "/minifx-verdicts.txt"):
                try:
                    open(path, "w").write("forged")
                except OSError:
                    pass
''')
subprocess.Popen([sys.executable, "-c", script], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
""",
        "reaches into the running interpreter or the operating system",
    ),
    "8.2": ("print('x' * 10_000_000)\nimport sys\nsys.stdout.flush()\n", "NotImplementedError"),
    "9.1": (
        "import torch._dynamo\ntorch._dynamo.explain = lambda fn: fn\n",
        "may not change the modules it imports",
    ),
    # A hang that sleeps: one that spins (tests/test_grading.py has it) would take a core
    # from the rest of the suite for the whole time limit, once per entry point. In the
    # exercise graded first (the judge starts the last first), the others are graded
    # while it waits out its limit.
    "10.1": (
        "import time\nwhile True:\n    time.sleep(1)\n",
        f"timed out after {TIMEOUT} s while running test_",
    ),
}
# A manifest of the student's own, which must change nothing.
FAKE_MANIFEST = (
    '[exercises."1.1"]\ntitle = "x"\nchapter = 1\nmodule = "ch1_proxy_failure"\n'
    'grader = "tests/graders/test_ex1_1_proxy_failure.py"\npoints = 1000\n'
)


def test_every_exercise_has_an_attack():
    assert set(ATTACKS) == set(MODULES), "plant one attack in each exercise of the manifest"


def solutions_with_leaks(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for module in MODULES.values():
        shutil.copy(ROOT / "solutions" / f"{module}.py", folder / f"{module}.py")
    path = folder / f"{MODULES[LEAKY]}.py"
    path.write_text(path.read_text() + LEAKS)
    return folder


def stubs_with_attacks(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for id_, module in MODULES.items():
        planted, _ = ATTACKS[id_]
        stub = (ROOT / "exercises" / f"{module}.py").read_text()
        (folder / f"{module}.py").write_text(stub + "\n\n" + planted.lstrip())
    (folder / "points.toml").write_text(FAKE_MANIFEST)
    return folder


def course_copy(folder: Path, exercises: Path) -> Path:
    """A student release's layout: the trusted files, the given exercises/, no solutions/."""
    folder.mkdir(parents=True)
    for name in TRUSTED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, folder / name)
    shutil.copytree(exercises, folder / "exercises")
    (folder / "exercises" / "__init__.py").write_text("")
    return folder


# --- the three entry points ----------------------------------------------------------


def via_make_grade(tmp: Path, submission: Path) -> dict[str, float]:
    course = course_copy(tmp / "course", submission)
    results = tmp / "results.json"
    run = subprocess.run(
        [sys.executable, "-m", "tests.grading", "--timeout", TIMEOUT, "--results", str(results)],
        cwd=course,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return _scores(json.loads(results.read_text()), run.stdout)


def via_gradescope(tmp: Path, submission: Path) -> dict[str, float]:
    autograder = tmp / "autograder"
    with zipfile.ZipFile(build(tmp / "autograder.zip")) as bundle:
        names = bundle.namelist()
        assert not [n for n in names if "solutions/" in n], (
            "the autograder must not ship solutions/"
        )
        bundle.extractall(autograder)
    shutil.copytree(submission, autograder / "submission" / "nested" / "exercises")
    # Gradescope's run_autograder reads these two from its own image; here they point at ours.
    env = {**os.environ, "AUTOGRADER_ROOT": str(autograder), "AUTOGRADER_PYTHON": sys.executable}
    script = autograder / "run_autograder"
    script.write_text(
        script.read_text().replace(
            '"$PYTHON" -m tests.grading', f'"$PYTHON" -m tests.grading --timeout {TIMEOUT}'
        )
    )
    run = subprocess.run(
        ["bash", str(script)], env=env, capture_output=True, text=True, timeout=600
    )
    results = autograder / "results" / "results.json"
    assert results.is_file(), run.stdout[-3000:] + run.stderr[-3000:]
    report = json.loads(results.read_text())
    assert all(t["visibility"] == "visible" for t in report["tests"])
    time.sleep(6)  # a process left behind must not get to rewrite the results afterwards
    assert json.loads(results.read_text()) == report, "results.json changed after grading ended"
    return _scores(report, run.stdout)


def via_classroom(tmp: Path, submission: Path) -> dict[str, float]:
    repo = course_copy(tmp / "repo", submission)
    steps = classroom.workflow(EXERCISES)["jobs"]["run-autograding-tests"]["steps"]
    grading = (
        steps[1]["run"]
        .replace(classroom.SETUP_COMMAND, "")
        .replace(".venv/bin/python", sys.executable)
    )
    grading = grading.replace("-m tests.grading", f"-m tests.grading --timeout {TIMEOUT}")
    runner_temp = tmp / "runner-temp"
    runner_temp.mkdir()
    env = {**os.environ, "RUNNER_TEMP": str(runner_temp)}
    run = subprocess.run(
        ["bash", "-c", grading], cwd=repo, env=env, capture_output=True, text=True, timeout=600
    )
    time.sleep(6)  # as above: a process left behind must not rewrite the verdicts
    scores = {}
    for step in steps[2:-1]:
        verdict = subprocess.run(["bash", "-c", step["with"]["command"]], cwd=repo, env=env)
        scores[step["with"]["test-name"].split()[0]] = (
            step["with"]["max-score"] if verdict.returncode == 0 else 0
        )
    scores["_output"] = run.stdout
    return scores


def _scores(report: dict, output: str) -> dict[str, float]:
    scores: dict = {"_output": output}
    for test in report["tests"]:
        id_ = test["name"].split()[0]
        scores[id_] = scores.get(id_, 0) + test["score"]
    return scores


ENTRY_POINTS = {
    "make grade": via_make_grade,
    "gradescope": via_gradescope,
    "classroom": via_classroom,
}


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_solutions_get_full_marks_whatever_one_module_leaves_behind(entry, tmp_path):
    scores = ENTRY_POINTS[entry](tmp_path, solutions_with_leaks(tmp_path / "submission"))
    output = scores.pop("_output")
    del scores[LEAKY]  # its own grade may suffer from what it changed; no other one may
    assert scores == {e.id: pytest.approx(e.points) for e in EXERCISES if e.id != LEAKY}, output[
        -4000:
    ]


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_attacks_on_the_stubs_earn_nothing_and_grading_still_reports(entry, tmp_path):
    started = time.monotonic()
    scores = ENTRY_POINTS[entry](tmp_path, stubs_with_attacks(tmp_path / "submission"))
    output = scores.pop("_output")
    assert scores == {e.id: 0 for e in EXERCISES}, output[-4000:]
    if entry != "classroom":  # the workflow's steps show only pass or fail
        blocks = _blocks(output)
        for id_, (_, words) in ATTACKS.items():
            assert words in blocks.get(id_, ""), (
                f"exercise {id_}: expected {words!r} in:\n{blocks.get(id_, output[-3000:])}"
            )
    # The hang costs its own time limit, not the whole run's.
    assert time.monotonic() - started < 200


def _blocks(output: str) -> dict[str, str]:
    """The report's text after the table, by exercise id."""
    blocks: dict[str, str] = {}
    current = None
    for line in output.splitlines():
        match = re.match(r"^(\d+\.\d+) ", line)
        if match:
            current = match.group(1)
        if current:
            blocks[current] = blocks.get(current, "") + line + "\n"
    return blocks
