"""Fixtures shared by every test: the implementation under test, and the devices.

Graders never import `exercises` or `solutions` directly; they ask the `impl` fixture,
so one switch (`pytest --impl exercises`, registered in the root conftest.py) grades the student's code with the same tests
that check the solutions in the project's own run.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
import torch
from filelock import FileLock


@dataclass(frozen=True)
class Impl:
    """The implementation under test: the `solutions` or the `exercises` package.

    Attributes:
        name: `"solutions"` or `"exercises"`.
    """

    name: str

    def load(self, module: str) -> ModuleType:
        """Import one exercise module, e.g. `impl.load("ch1_proxy_failure")`.

        Call it inside a test (or a fixture), never at a grader's module level: a stub
        that raises on import then fails that test with its message instead of
        breaking the collection of the whole grader.
        """
        return importlib.import_module(f"{self.name}.{module}")


@pytest.fixture(scope="session")
def impl(request: pytest.FixtureRequest) -> Impl:
    """The implementation under test, chosen by `--impl`."""
    return Impl(request.config.getoption("--impl"))


_NO_CUDA = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="CUDA is not available (torch.cuda.is_available() is False); the CPU run covers this test",
)


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=_NO_CUDA)])
def device(request: pytest.FixtureRequest) -> Iterator[str]:
    """The device to run on: `"cpu"`, and `"cuda"` where a GPU is available.

    On CUDA the test runs in full float32. Ampere and later GPUs run float32 convolutions
    in TF32 by default (a 10-bit mantissa), and a fused convolution then differs from the
    unfused one by about 5e-4, far above the 1e-5 the differential tests allow.
    """
    if request.param == "cpu":
        yield "cpu"
        return
    cudnn, matmul = torch.backends.cudnn, torch.backends.cuda.matmul
    saved = cudnn.allow_tf32, matmul.allow_tf32
    cudnn.allow_tf32 = matmul.allow_tf32 = False
    try:
        yield "cuda"
    finally:
        cudnn.allow_tf32, matmul.allow_tf32 = saved


# --- chapter markers, and what a student release runs --------------------------------

CHAPTERS = [f"ch{n}" for n in range(11)]  # chapters 0-9, and 10: the capstone
RELEASE = not (Path(__file__).resolve().parent.parent / "solutions").is_dir()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Fail a test that carries no chapter marker: `pytest -m chN` must find all of chapter N."""
    if not any(item.get_closest_marker(name) for name in [*CHAPTERS, "meta"]):
        pytest.fail(
            f"{item.nodeid} carries no chapter marker: add `pytestmark = pytest.mark.chN` "
            "to its module (N: the chapter it tests), or `pytest.mark.meta` for a check of "
            "the course machinery",
            pytrace=False,
        )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a student release, leave out what needs `solutions/`; `make grade` grades instead."""
    grading = any(type(p).__name__ == "GradingPlugin" for p in config.pluginmanager.get_plugins())
    if not RELEASE or grading:  # the grading worker runs graders in a folder without solutions/
        return
    # A grader named on the command line is run: the student guide's way to debug one
    # exercise (`pytest tests/graders/test_ex1_1_proxy_failure.py`); `make test` names none.
    asked = _graders_asked(config)
    kept = [
        i
        for i in items
        if not (
            i.get_closest_marker("needs_solutions") or ("tests/graders/" in i.nodeid and not asked)
        )
    ]
    deselected = [i for i in items if i not in kept]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


def _graders_asked(config: pytest.Config) -> bool:
    """Whether the command line names the graders, a grader or one of its tests."""
    return any("tests/graders" in Path(arg).resolve().as_posix() for arg in config.args)


def pytest_report_header(config: pytest.Config) -> str | None:
    if RELEASE and not _graders_asked(config):
        return (
            "student release (no solutions/): the graders are not run as tests here; "
            "`make grade` grades your exercises/ (name a grader's file to run it here)"
        )
    return None


# What a carved build task raises (tests/tasks.py): "Task 1.2 (title) is yours to write: ..."
_CARVED = re.compile(r"Task (\d+\.\d+) \(([^)]*)\) is yours to write")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """In a student release, a test that stops in a carved build task is reported as an
    expected failure that names the task, so `make test` there fails only for real
    mistakes; `make grade TRACK=build` is the report of the tasks."""
    outcome = yield
    report = outcome.get_result()
    if not RELEASE or call.excinfo is None or not report.failed:
        return
    # Only a plain NotImplementedError whose message is a plain str: this runs on what
    # student code raised, whose __str__ (or a subclass's) may loop, raise or lie.
    error = call.excinfo.value
    if type(error) is not NotImplementedError or not error.args or type(error.args[0]) is not str:
        return
    found = _CARVED.search(error.args[0][:100_000])
    if found:
        report.outcome = "skipped"
        report.wasxfail = (
            f"waits for build task {found[1]} ({found[2]}): make grade TASK={found[1]}"
        )


# --- the book, built once -----------------------------------------------------------


@dataclass(frozen=True)
class BookBuild:
    """One `mkdocs build --strict` of the book.

    Attributes:
        site: The folder it wrote.
        returncode: mkdocs' exit status (0: built, with no warning).
        stderr: What mkdocs said.
    """

    site: Path
    returncode: int
    stderr: str


@pytest.fixture(scope="session")
def book_build(tmp_path_factory: pytest.TempPathFactory) -> BookBuild:
    """The book built strictly, once per run for every test that reads the built site
    (tests/test_book.py checks the build, tests/test_browser.py serves it): a build takes
    about a minute, and both read the same pages.

    `make test` runs pytest in several processes (pytest-xdist), each with a temporary
    folder of its own inside one they share: the first process to get here builds the
    book there, and the others wait for it and read the same build.
    """
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    folder, saved = shared / "book", shared / "book" / "build.json"
    with FileLock(shared / "book.lock"):
        if not saved.is_file():
            folder.mkdir(exist_ok=True)
            build = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "mkdocs",
                    "build",
                    "--strict",
                    "--site-dir",
                    str(folder / "site"),
                ],
                cwd=Path(__file__).resolve().parent.parent,
                env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
                capture_output=True,
                text=True,
                timeout=600,
            )
            saved.write_text(json.dumps({"returncode": build.returncode, "stderr": build.stderr}))
        result = json.loads(saved.read_text())
    return BookBuild(folder / "site", result["returncode"], result["stderr"])
