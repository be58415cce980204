"""The build track's machinery (tests/tasks.py), and the proof that its tasks are honest:
carved alone, each task fails its own tests and no earlier task's; the reference passes
them all; a release with every task carved fails every one.

The proof runs the marked stage tests in a copy of the repository per carving (about 30),
each run forked from one process that has imported torch and pytest, as many at once as
there are cores (tests/pytest_forks.py). `test_the_proof_catches_tests_that_do_not_follow_
their_task` runs the same machinery on a toy repository whose tests are wrong, and checks
that the proof says so.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from tests import tasks
from tests.pytest_forks import ForkedPytest
from tests.tasks import ROOT, Region, Task, TaskError

# The proof needs the reference minifx: a student release (carved) leaves it out.
pytestmark = [pytest.mark.meta, pytest.mark.needs_solutions]

SOURCE = '''\
class Tracer:
    # --8<-- [task:1.2] "Record a call" points=3 section=01-proxy.md#the-tracer-interface
    @property
    def node(self):
        """The node."""
        if self._node is None:
            self._node = 1
        return self._node

    def twice(self, x):
        def inner(y):
            return y
        return inner(x) * 2
    # --8<-- [end-task:1.2]

    def kept(self):
        return 3


# --8<-- [task:1.2]
def helper(a):
    return a + 1
# --8<-- [end-task:1.2]
'''


def test_markers_give_one_task_with_its_regions_and_attributes():
    (task,) = tasks.find_tasks({"minifx/x.py": SOURCE.encode()})
    assert (task.id, task.title, task.points, task.section) == (
        "1.2",
        "Record a call",
        3,
        "01-proxy.md#the-tracer-interface",
    )
    assert task.regions == [Region("minifx/x.py", 2, 14), Region("minifx/x.py", 20, 23)]
    tree = ast.parse(SOURCE)
    assert [f.name for r in task.regions for f in tasks.functions_in(tree, r)] == [
        "node",
        "twice",
        "helper",
    ]


def test_carving_keeps_docstrings_and_what_lies_outside_the_regions():
    (task,) = tasks.find_tasks({"minifx/x.py": SOURCE.encode()})
    carved = tasks.carve_source("minifx/x.py", SOURCE, [task])
    namespace: dict = {}
    exec(compile(carved, "x.py", "exec"), namespace)
    tracer = namespace["Tracer"]()
    assert tracer.kept() == 3
    assert namespace["Tracer"].node.__doc__ == "The node."
    for call in (lambda: tracer.node, lambda: tracer.twice(1), lambda: namespace["helper"](1)):
        with pytest.raises(
            NotImplementedError,
            match=r"^Task 1\.2 \(Record a call\) is yours to write: read "
            r"chapters/01-proxy\.md#the-tracer-interface, then check with: make grade TASK=1\.2$",
        ):
            call()
    assert "# --8<-- [task:1.2]" in carved and "inner" not in carved


@pytest.mark.parametrize(
    "broken, message",
    [
        (
            SOURCE.replace("# --8<-- [end-task:1.2]\n\n    def kept", "\n    def kept"),
            "never closed",
        ),
        (
            SOURCE.replace('"Record a call" points=3 section=01-proxy.md#the-tracer-interface', ""),
            "has no title",
        ),
        (SOURCE.replace("points=3 ", ""), "needs points=N section="),
        (SOURCE.replace("# --8<-- [task:1.2]\ndef", "def"), "has no [task:1.2] above it"),
    ],
)
def test_broken_markers_are_reported_with_their_line(broken, message):
    with pytest.raises(TaskError, match=re_escape(message)):
        tasks.find_tasks({"minifx/x.py": broken.encode()})


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


def test_select_by_all_chapter_and_ids():
    found = [Task("1.1", "a"), Task("1.2", "b"), Task("5.1", "c")]
    assert tasks.select(found, "") == []
    assert [t.id for t in tasks.select(found, "all")] == ["1.1", "1.2", "5.1"]
    assert [t.id for t in tasks.select(found, "ch1")] == ["1.1", "1.2"]
    assert [t.id for t in tasks.select(found, "5.1,1.2")] == ["1.2", "5.1"]
    with pytest.raises(TaskError, match="no task '9.9'"):
        tasks.select(found, "9.9")


def test_task_tests_reads_function_and_module_marks():
    files = {
        "tests/a/test_one.py": b'import pytest\n@pytest.mark.task("1.1")\ndef test_a():\n    pass\n'
        b"def test_b():\n    pass\n",
        "tests/a/test_two.py": b'import pytest\npytestmark = [pytest.mark.ch1, pytest.mark.task("1.2")]\n'
        b"def test_c():\n    pass\n",
    }
    assert tasks.task_tests(files) == {
        "1.1": {"tests/a/test_one.py": {"test_a"}},
        "1.2": {"tests/a/test_two.py": {"test_c"}},
    }


# --- the reference's tasks ------------------------------------------------------------


def reference_tasks() -> list[Task]:
    return tasks.find_tasks(tasks.source_files(ROOT))


def marked_tests() -> dict[str, dict[str, set[str]]]:
    return tasks.task_tests(
        {
            p.relative_to(ROOT).as_posix(): p.read_bytes()
            for p in (ROOT / "tests").rglob("test_*.py")
        }
    )


def test_the_reference_marks_enough_tasks_and_each_is_graded():
    found, graded = reference_tasks(), marked_tests()
    assert len(found) >= 8
    assert {t.chapter for t in found} >= {1, 5, 6, 7}
    assert set(graded) == {t.id for t in found}, (
        "every task has tests, and every task mark names a task"
    )
    for task in found:
        assert (ROOT / "chapters" / task.section.split("#")[0]).is_file(), task.section
        assert task.points > 0


def test_every_region_holds_a_function_and_the_fully_carved_package_still_imports(tmp_path):
    shutil.copytree(ROOT / "minifx", tmp_path / "minifx")
    tasks.carve(tmp_path, reference_tasks())
    code = (
        "import importlib, pkgutil, minifx\nfor m in pkgutil.walk_packages(minifx.__path__, 'minifx.'):\n"
        "    importlib.import_module(m.name)\nprint(minifx.__file__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(tmp_path / "minifx" / "__init__.py")


# --- the proof: carve each task alone -------------------------------------------------


def workspace(base: Path) -> Path:
    """A copy of what the stage tests need: minifx, tests, the pytest configuration."""
    folder = base / "work"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("minifx", "tests"):
        shutil.copytree(ROOT / name, folder / name, ignore=ignore)
    for name in ("conftest.py", "pyproject.toml"):
        shutil.copy(ROOT / name, folder / name)
    # Not a student release (tests/conftest.py): a carved task's failures stay failures.
    (folder / "solutions").mkdir()
    return folder


def marked_ids(graded: dict[str, dict[str, set[str]]]) -> list[str]:
    """Every marked test, as `<path>::<function>`."""
    return sorted(
        {
            f"{path}::{name}"
            for files in graded.values()
            for path, names in files.items()
            for name in names
        }
    )


def pytest_args(ids: list[str], report: Path) -> list[str]:
    """The arguments of a run of `ids` that writes its results to `report`."""
    return [
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-o",
        "addopts=",
        # The report keeps each failure's message; a one-line traceback makes a run
        # with every test failing five times faster than the full one would.
        "--tb=line",
        "--junitxml",
        str(report),
        *ids,
    ]


def read_report(folder: Path, graded: dict[str, dict[str, set[str]]]) -> dict[str, tuple[str, str]]:
    """The results of the run in `folder`: `{"<path>::<function>": (task, failure message
    or '')}`, the first failing parameter case's message, else `''` per function."""
    report = folder / "report.xml"
    output = folder / "pytest-output.txt"
    assert report.is_file(), f"no report from {folder.name}: " + (
        output.read_text()[-3000:] if output.is_file() else "no output either"
    )
    task_of = {
        f"{path}::{name}": task
        for task, files in graded.items()
        for path, names in files.items()
        for name in names
    }
    results: dict[str, tuple[str, str]] = {key: (task, "") for key, task in task_of.items()}
    seen = set()
    for case in ElementTree.parse(report).iter("testcase"):
        key = case.get("classname").replace(".", "/") + ".py::" + case.get("name").split("[")[0]
        seen.add(key)
        problem = case.find("failure") if case.find("failure") is not None else case.find("error")
        if problem is not None and not results[key][1]:
            results[key] = (task_of[key], problem.get("message") or "failed")
    assert seen == set(task_of), f"not run: {sorted(set(task_of) - seen)}"
    return results


def carvings(
    reference: Path, found: list[Task], graded: dict[str, dict[str, set[str]]], names: list[str]
) -> dict[str, dict[str, tuple[str, str]]]:
    """`{name: results of the marked tests}` for each carving `name` of the repository copy
    `reference` (a task id, "all", or "none" for the reference itself).

    Each carving is a copy with its tasks carved; the marked tests run in every copy,
    forked from one process that has imported torch and pytest (tests/pytest_forks.py),
    as many at a time as there are cores. The reference is collected once first, writing
    its bytecode: the copies then import the test modules (assertion-rewritten) and
    minifx's unchanged modules without compiling them again. A carved module's source
    differs from the one its copied `.pyc` was made from, so Python compiles it afresh.
    """
    ids = marked_ids(graded)
    folders = [reference.parent / f"carved-{name}" for name in names]
    with ForkedPytest() as runs:
        runs.run([(reference, ["--collect-only", *pytest_args(ids, Path("collected.xml"))])], True)
        for name, folder in zip(names, folders):
            shutil.copytree(reference, folder)
            tasks.carve(folder, [] if name == "none" else tasks.select(found, name))
        runs.run([(folder, pytest_args(ids, Path("report.xml"))) for folder in folders])
    return {name: read_report(folder, graded) for name, folder in zip(names, folders)}


@pytest.fixture(scope="module")
def proof(tmp_path_factory):
    """The reference's tasks, and `{carved task id, or "none" or "all": results}`."""
    reference, found = workspace(tmp_path_factory.mktemp("tasks")), reference_tasks()
    return found, carvings(
        reference, found, marked_tests(), ["none", "all", *(t.id for t in found)]
    )


def test_the_reference_passes_every_marked_test(proof):
    failing = {key: message for key, (_, message) in proof[1]["none"].items() if message}
    assert not failing


def test_a_fully_carved_release_fails_every_marked_test_with_a_task_message(proof):
    not_failing = [
        key for key, (_, message) in proof[1]["all"].items() if "is yours to write" not in message
    ]
    assert not not_failing


def carving_problems(
    found: list[Task], task: Task, results: dict[str, tuple[str, str]]
) -> list[str]:
    """What is wrong with carving `task` alone, from the marked tests' `results` in that
    carving: a test of its own that did not fail with its message, or a test of another
    task that failed (a later task's may fail, with this task's message)."""
    own = f"Task {task.id} ("
    problems = []
    for key, (owner, message) in results.items():
        later = tasks.select(found, owner)[0].order > task.order
        if owner == task.id and own not in message:
            problems.append(
                f"{key} (task {owner}) did not fail with task {task.id}'s message: {message or 'passed'}"
            )
        elif owner != task.id and message and not (later and own in message):
            problems.append(f"{key} (task {owner}) failed: {message}")
    return problems


@pytest.mark.parametrize("task_id", [t.id for t in reference_tasks()])
def test_carving_one_task_fails_its_tests_and_no_earlier_task_s(proof, task_id):
    found, results = proof
    task = next(t for t in found if t.id == task_id)
    problems = carving_problems(found, task, results[task_id])
    assert not problems, "\n".join(problems)


# A repository of two tasks whose tests are honest for 1.1 and not for 1.2: task 1.2's
# test never calls `double`, and task 1.1's test calls `double` too (an earlier task's test
# that a later task's carving breaks). The proof must say both.
TOY = {
    "minifx/__init__.py": "",
    "minifx/toy.py": """\
# --8<-- [task:1.1] "Add one" points=1 section=01-proxy.md#x
def add_one(x):
    return x + 1
# --8<-- [end-task:1.1]


# --8<-- [task:1.2] "Double" points=1 section=01-proxy.md#x
def double(x):
    return 2 * x
# --8<-- [end-task:1.2]
""",
    "tests/__init__.py": "",
    "tests/test_toy.py": """\
import pytest

from minifx.toy import add_one, double


@pytest.mark.task("1.1")
def test_add_one():
    assert add_one(1) == 2 and double(add_one(0)) == 2


@pytest.mark.task("1.2")
def test_double():
    assert 2 * 3 == 6
""",
    "pyproject.toml": '[tool.pytest.ini_options]\nmarkers = ["task(id): a build task"]\n',
}


def test_the_proof_catches_tests_that_do_not_follow_their_task(tmp_path):
    """The proof's own machinery (carve, run forked, read the reports, judge), on TOY."""
    reference = tmp_path / "work"
    for path, text in TOY.items():
        (reference / path).parent.mkdir(parents=True, exist_ok=True)
        (reference / path).write_text(text)
    found = tasks.find_tasks(tasks.source_files(reference))
    graded = tasks.task_tests({"tests/test_toy.py": TOY["tests/test_toy.py"].encode()})
    results = carvings(reference, found, graded, ["none", "1.1", "1.2"])
    assert not any(message for _, message in results["none"].values())
    assert carving_problems(found, found[0], results["1.1"]) == []
    assert carving_problems(found, found[1], results["1.2"]) == [
        "tests/test_toy.py::test_add_one (task 1.1) failed: "
        + results["1.2"]["tests/test_toy.py::test_add_one"][1],
        "tests/test_toy.py::test_double (task 1.2) did not fail with task 1.2's message: passed",
    ]
    assert (
        "Task 1.2 (Double) is yours to write"
        in results["1.2"]["tests/test_toy.py::test_add_one"][1]
    )


# --- the book teaches the track -------------------------------------------------------


def _slugs(page: Path) -> set[str]:
    from markdown.extensions.toc import slugify

    return {
        slugify(line.lstrip("#").strip().replace("`", ""), "-")
        for line in page.read_text(encoding="utf-8").splitlines()
        if line.startswith("#")
    }


def test_every_task_names_a_section_that_exists():
    for task in reference_tasks():
        page, anchor = task.section.split("#")
        assert anchor in _slugs(ROOT / "chapters" / page), (
            f"task {task.id}: no section #{anchor} in {page}"
        )


def test_each_chapter_s_build_it_section_lists_its_tasks_in_order_with_their_checks():
    for chapter in sorted({t.chapter for t in reference_tasks()}):
        (page,) = (ROOT / "chapters").glob(f"{chapter:02d}-*.md")
        text = page.read_text(encoding="utf-8")
        assert "\n## Build it\n" in text, f"{page.name} has no Build it section"
        section = text.split("\n## Build it\n")[1].split("\n## ")[0]
        rows = [
            line
            for line in section.splitlines()
            if line.startswith("| ") and "make grade TASK=" in line
        ]
        want = [t for t in reference_tasks() if t.chapter == chapter]
        assert [row.split()[1] for row in rows] == [t.id for t in want], page.name
        for row, task in zip(rows, want):
            assert f"({task.points:g} points)" in row and f"`make grade TASK={task.id}`" in row


def test_the_student_guide_shows_the_message_a_carved_task_raises():
    guide = (ROOT / "chapters" / "student-guide.md").read_text(encoding="utf-8")
    (task,) = [t for t in reference_tasks() if t.id == "1.1"]
    assert f"NotImplementedError: {task.message()}" in guide
    carved = tasks.carve_source(
        task.regions[0].path, (ROOT / task.regions[0].path).read_text(), [task]
    )
    raise_lines = carved.split("raise NotImplementedError(\n")[1].splitlines()[:2]
    assert all(line.strip() in guide for line in raise_lines)
