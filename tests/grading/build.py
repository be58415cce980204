"""The build track in the grading harness: build tasks as gradable entries, and what of a
submission's minifx a task's worker runs.

A build task (tests/tasks.py) is marked in the reference source and graded by the stage
tests that carry its marker. The judge grades it like an exercise, in its own time- and
memory-limited worker, with two differences:

- **What is graded.** Only the files of minifx that hold tasks come from the submission;
  every other file of minifx is the instructor's (the judge's trusted copy). So a
  submission changes nothing outside its tasks, and the sandbox treats exactly those
  files as graded code.
- **What grades it.** The stage tests that carry `pytest.mark.task("<id>")`, found by
  reading the trusted test files (`tests.tasks.task_tests`), never by running them.

A file that does not compile costs the tasks that need it: those of its stage and of
later stages (a stage imports the earlier ones), each with a message naming the file
and line; the tasks of earlier stages are still graded.
"""

from __future__ import annotations

from pathlib import Path

from tests import tasks as build_tasks
from tests.grading.manifest import Exercise, GradingError

# The order of the stages, as minifx/__init__.py lists them: a stage imports only earlier ones.
STAGES = ("proxy", "graph", "codegen", "interpreter", "passes")


def load_tasks(trusted: dict[str, bytes]) -> list[Exercise]:
    """The build tasks of the trusted minifx, as entries the judge grades (`kind="task"`).

    Raises:
        GradingError: If the markers are broken, or a task has no marked test.
    """
    try:
        found = build_tasks.find_tasks(
            {p: d for p, d in trusted.items() if p.startswith("minifx/")}
        )
        graded = build_tasks.task_tests(stage_tests(trusted))
    except (build_tasks.TaskError, SyntaxError) as exc:
        raise GradingError(f"cannot read the build tasks: {exc}") from exc
    entries = []
    for task in found:
        if task.id not in graded:
            raise GradingError(f"task {task.id} has no test marked @pytest.mark.task({task.id!r})")
        entries.append(
            Exercise(
                task.id,
                task.title,
                task.chapter,
                ",".join(task.paths),
                ";".join(sorted(graded[task.id])),
                task.points,
                kind="task",
            )
        )
    return entries


def stage_tests(trusted: dict[str, bytes]) -> dict[str, bytes]:
    """The trusted stage test files (not the graders, nor the grading tool's own)."""
    return {
        p: d
        for p, d in trusted.items()
        if p.startswith("tests/")
        and not p.startswith(("tests/graders/", "tests/grading/"))
        and Path(p).name.startswith("test_")
        and p.endswith(".py")
    }


def expected_tests(exercise: Exercise, trusted: dict[str, bytes]) -> set[str]:
    """The names of the test functions that grade the task."""
    return set().union(*build_tasks.task_tests(stage_tests(trusted)).get(exercise.id, {}).values())


def task_files(trusted: dict[str, bytes]) -> list[str]:
    """Every trusted minifx file that holds a task: what a submission's minifx is read for."""
    return sorted(
        p
        for p, data in trusted.items()
        if p.startswith("minifx/") and p.endswith(".py") and b"--8<-- [task:" in data
    )


def submitted_package(paths: list[str], folder: Path) -> dict[str, bytes]:
    """The submission's versions of the task files `paths`, found at the same paths below
    `folder`, or below the first folder under it that holds `minifx/__init__.py` (a
    submission uploaded as a folder of the repository)."""
    if not (folder / "minifx").is_dir():
        inits = sorted(folder.rglob("minifx/__init__.py"), key=lambda p: len(p.parts))
        folder = inits[0].parent.parent if inits else folder
    found = {}
    for path in paths:
        file = folder / path
        if file.is_file() and not file.is_symlink():
            found[path] = file.read_bytes()
    return found


def stage_of(path: str) -> int:
    """0 for `minifx/proxy/...` up to 4 for `minifx/passes/...`."""
    parts = path.split("/")
    return STAGES.index(parts[1]) if len(parts) > 2 and parts[1] in STAGES else 0


def precheck(
    exercise: Exercise,
    package: dict[str, bytes],
    every_task_file: list[str],
    trusted: dict[str, bytes] | None = None,
) -> str:
    """Why the task cannot be graded at all, in one sentence, or ''. With `trusted`, a
    task file must also equal the trusted one outside its task regions (see `outside`)."""
    own = exercise.module.split(",")
    reach = max(stage_of(path) for path in own)
    for path in (p for p in every_task_file if stage_of(p) <= reach):
        if path not in package:
            return f"{path} is not in the submission: task {exercise.id} needs it (submit the whole minifx/ folder)"
        try:
            compile(package[path], path, "exec", dont_inherit=True)
        except SyntaxError as exc:
            return (
                f"{path} is not valid Python at line {exc.lineno}: {exc.msg}. Task {exercise.id} imports it, "
                "so its tests could not run; tasks of earlier stages were still graded"
            )
        except (ValueError, RecursionError, MemoryError, OverflowError) as exc:
            return f"{path} cannot be read as Python ({type(exc).__name__}); task {exercise.id} imports it"
        changed = (
            changed_outside(path, package[path], trusted[path])
            if trusted and path in trusted
            else ""
        )
        if changed:
            return changed + f"; task {exercise.id} imports it, so its tests did not run"
    return ""


def outside(text: str) -> list[tuple[int, str]] | None:
    """The `(line number, line)` pairs of a file outside its task regions (marker lines
    included), or None if its markers do not pair up."""
    kept, depth = [], 0
    for number, line in enumerate(text.splitlines(), start=1):
        if build_tasks.END.match(line):
            depth -= 1
        if depth == 0:
            kept.append((number, line))
        if build_tasks.START.match(line):
            depth += 1
        if depth not in (0, 1):
            return None
    return kept if depth == 0 else None


def changed_outside(path: str, submitted: bytes, reference: bytes) -> str:
    """Why `submitted` differs from `reference` outside the task regions, or ''.

    Only the code between a task's markers is the student's: the sandbox grades it as
    student code and trusts the rest of the file, so the rest must be the instructor's.
    """
    mine = outside(submitted.decode("utf-8", "replace"))
    theirs = outside(reference.decode("utf-8", "replace")) or []
    if mine is None:
        return f"{path}: its task markers (# --8<-- [task:...] / [end-task:...]) were removed or broken; put them back"
    for (number, line), (_, want) in zip(mine, theirs):
        if line != want:
            return (
                f"{path} was changed outside its task regions, at line {number} ({line.strip()[:60]!r}): "
                "only the code between a task's markers is yours; put the rest back as it was "
                "(imports a task needs go inside its functions)"
            )
    if len(mine) != len(theirs):
        return f"{path} was changed outside its task regions (lines added or removed); put the rest back as it was"
    return ""


def tests_sha256(grader: str, files: dict[str, bytes]) -> str:
    """One digest of a task's test files, as the worker computes it from its copies."""
    import hashlib

    digest = hashlib.sha256()
    for path in grader.split(";"):
        digest.update(files[path])
    return digest.hexdigest()
