"""The student release (tests/release.py): no solutions, and its book and grading work."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests import release

# Releases are made from the course's own repository (git archive), not from a release.
pytestmark = [pytest.mark.meta, pytest.mark.needs_solutions]

PAGE = """### Exercise 9.1 · Something

Write it.

??? success "Solution"

    ```python title="solutions/ch9_x.py"
    --8<-- "solutions/ch9_x.py:solution"
    ```

### Exercise 9.2 · More
"""


def test_a_solution_block_becomes_a_note_and_the_rest_stays():
    stripped = release.strip_solutions(PAGE)
    assert "solutions/" not in stripped
    assert '!!! info "Solution"' in stripped
    assert stripped.startswith("### Exercise 9.1 · Something\n\nWrite it.\n\n")
    assert stripped.endswith("version does.\n\n### Exercise 9.2 · More\n")


@pytest.fixture(scope="module")
def student(tmp_path_factory):
    out = tmp_path_factory.mktemp("release") / "minifx-student"
    release.release(out)
    return out


def test_the_release_has_no_solutions(student):
    assert not (student / "solutions").exists()
    mentions = [
        p.name for p in (student / "chapters").rglob("*.md") if '"solutions/' in p.read_text()
    ]
    assert not mentions, f"pages that still include solutions/: {mentions}"


def test_the_release_book_builds_strictly(student):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(student / "site")],
        cwd=student,
        env=env,
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr[-3000:]


def test_the_release_grades_the_stubs(student):
    graded = subprocess.run(
        [sys.executable, "-m", "tests.grading", "--chapter", "1"],
        cwd=student,
        capture_output=True,
        text=True,
    )
    assert graded.returncode == 0, graded.stderr[-3000:]
    # The stubs are untouched: every exercise of the chapter scores nothing.
    assert re.search(r"1\.1\s+Proxy failure\s+0/\d+\s+0/10", graded.stdout), graded.stdout[-2000:]


def test_an_existing_folder_is_refused(tmp_path, capsys):
    assert release.main([str(tmp_path)]) == 2
    assert "exists" in capsys.readouterr().err


def test_the_release_collects_its_tests_without_errors(student):
    # What `make test` runs there: every module imports without solutions/, and the
    # graders and the checks that need the solutions are left out (tests/conftest.py).
    collect = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=student,
        capture_output=True,
        text=True,
    )
    assert collect.returncode == 0, collect.stdout[-3000:] + collect.stderr[-3000:]
    assert "tests/graders/" not in collect.stdout and "test_grader_mistakes" not in collect.stdout
    assert "deselected" in collect.stdout.splitlines()[-1], collect.stdout[-500:]


def test_the_student_guide_s_direct_grader_command_runs_the_grader(student):
    # "Run one grader directly" (chapters/student-guide.md): a grader named on the command
    # line is run in a release too, on the untouched stub, and fails with its message.
    direct = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/graders/test_ex1_1_proxy_failure.py"]
        + ["--impl", "exercises", "-q", "-p", "no:cacheprovider"],
        cwd=student,
        capture_output=True,
        text=True,
    )
    assert direct.returncode == 1, direct.stdout[-3000:] + direct.stderr[-3000:]
    assert "NotImplementedError: Exercise 1.1" in direct.stdout, direct.stdout[-3000:]
    assert re.search(r"\b6 failed\b", direct.stdout.splitlines()[-1]), direct.stdout[-500:]


def test_a_release_with_chapter_1_s_tasks_carves_only_those(tmp_path):
    out = tmp_path / "minifx-student"
    carved = release.release(out, tasks="ch1")
    assert carved and {task.chapter for task in carved} == {1}
    proxy = (out / "minifx" / "proxy" / "proxy.py").read_text()
    assert "Task 1.2 (create_proxy and create_arg) is yours to write" in proxy
    assert "then check with: make grade TASK=1.2" in proxy
    for name in ("fuse_conv_bn.py", "matcher.py", "shape_prop.py", "subgraph_rewriter.py"):
        passes = (out / "minifx" / "passes" / name).read_text()
        assert (
            passes == (release.ROOT / "minifx" / "passes" / name).read_text()
            or "is yours to write" not in passes
        )
    # The release still imports; a carved task raises its message, the rest works.
    code = (
        "import minifx.passes, minifx.proxy as p\n"
        "try:\n    p.trace_to_tape(lambda x: x)\nexcept NotImplementedError as e:\n    print(e)"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=out, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.startswith("Task 1.3 (Tracing a function onto a tape) is yours to write")
    # The release's book shows a task box before each code block that includes carved code.
    chapter = (out / "chapters" / "01-proxy.md").read_text()
    box = '!!! example "Task 1.2 · create_proxy and create_arg (5 points)"'
    assert box in chapter
    assert chapter.index(box) < chapter.index('--8<-- "minifx/proxy/proxy.py:create_proxy"')
    assert chapter.count('!!! example "Task 1.') >= 6
    assert "!!! example" not in (out / "chapters" / "05-shape-prop.md").read_text()
    # There, `make test`'s pytest reports tests that stop in a carved task as expected
    # failures naming the task, and still fails on anything else.
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-rx",
            "tests/proxy/test_proxy.py",
            "tests/proxy/test_tape.py",
        ],
        cwd=out,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-3000:]
    assert "waits for build task 1.1 (The tape): make grade TASK=1.1" in run.stdout
    lint = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "minifx"], cwd=out, capture_output=True, text=True
    )
    assert lint.returncode == 0, lint.stdout[-2000:]


def test_unknown_tasks_are_refused_before_anything_is_written(tmp_path, capsys):
    assert release.main([str(tmp_path / "out"), "--tasks", "9.9"]) == 2
    assert "no task '9.9'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
