"""Grade the exercises: run each exercise's grader, then print points and failures.

Usage (from the repository root; `make grade` runs the first line):

    python -m tests.grading                       # grade exercises/, every chapter
    python -m tests.grading --chapter 1           # one chapter
    python -m tests.grading --impl solutions      # the reference solutions
    python -m tests.grading --results results.json  # also write Gradescope's results

Points come from `exercises/points.toml`; an exercise's points are split evenly over
the tests of its grader that ran (a test skipped for lack of CUDA costs nothing).
Grading is a report, not a gate: the exit status is 0 whatever the score, and 2 only
when grading itself could not run (a broken manifest, pytest unable to start).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "exercises" / "points.toml"
KEYS = {"title": str, "chapter": int, "module": str, "grader": str, "points": (int, float)}
MAX_MESSAGE_LINES = 12


class GradingError(Exception):
    """Grading could not run at all (as opposed to an exercise scoring 0)."""


@dataclass(frozen=True)
class Exercise:
    """One `[exercises."<id>"]` table of the manifest."""

    id: str
    title: str
    chapter: int
    module: str
    grader: str
    points: float


@dataclass
class TestResult:
    """The outcome of one grader test: `passed`, `failed` or `skipped`, and why."""

    nodeid: str
    outcome: str = "passed"
    message: str = ""


@dataclass
class Score:
    """One exercise's grade, with the reason when its grader could not run."""

    exercise: Exercise
    tests: list[TestResult] = field(default_factory=list)
    problem: str = ""

    @property
    def ran(self) -> list[TestResult]:
        return [t for t in self.tests if t.outcome != "skipped"]

    @property
    def passed(self) -> int:
        return sum(t.outcome == "passed" for t in self.tests)

    @property
    def per_test(self) -> float:
        return self.exercise.points / len(self.ran) if self.ran else 0.0

    @property
    def earned(self) -> float:
        return 0.0 if self.problem else self.passed * self.per_test


# --- the manifest -----------------------------------------------------------------


def load_manifest(path: Path = MANIFEST) -> list[Exercise]:
    """Read and check the points manifest; exercises come back sorted by id.

    Raises:
        GradingError: If the file is missing, is not TOML, or an entry lacks a key or
            has a key of the wrong type.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise GradingError(f"cannot read the points manifest {path}: {exc}") from exc
    tables = data.get("exercises", {})
    if not isinstance(tables, dict) or not all(isinstance(t, dict) for t in tables.values()):
        raise GradingError(f'{path}: write one table per exercise, [exercises."<chapter>.<n>"]; see the file\'s header')
    exercises = [_exercise(path, id_, entry) for id_, entry in tables.items()]
    return sorted(exercises, key=lambda e: tuple(int(p) for p in e.id.split(".")))


def _exercise(path: Path, id_: str, entry: dict) -> Exercise:
    where = f'{path}: [exercises."{id_}"]'
    parts = id_.split(".")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise GradingError(f'{where}: the id must be "<chapter>.<n>", like "1.2"')
    for key, kind in KEYS.items():
        if not isinstance(entry.get(key), kind) or isinstance(entry.get(key), bool):
            raise GradingError(f"{where}: needs `{key}` ({_kind_name(kind)}); see the comment at the top of the file")
    if entry["chapter"] != int(parts[0]):
        raise GradingError(f"{where}: chapter = {entry['chapter']} but the id says chapter {parts[0]}")
    return Exercise(id_, **{key: entry[key] for key in KEYS})


def _kind_name(kind) -> str:
    return "a number" if isinstance(kind, tuple) else f"a {kind.__name__}"


# --- running the graders ----------------------------------------------------------


class Collector:
    """A pytest plugin that keeps one `TestResult` per test, and collection errors."""

    def __init__(self) -> None:
        self.results: dict[str, TestResult] = {}
        self.collect_errors: dict[str, str] = {}
        self._messages: dict[str, str] = {}

    def pytest_runtest_makereport(self, item, call) -> None:
        # The exception itself gives the message the grader wrote, without traceback.
        if call.excinfo is not None and item.nodeid not in self._messages:
            self._messages[item.nodeid] = _message(call.excinfo)

    def pytest_runtest_logreport(self, report) -> None:
        result = self.results.setdefault(report.nodeid, TestResult(report.nodeid))
        if report.failed:
            result.outcome = "failed"
            result.message = self._messages.get(report.nodeid, str(report.longrepr))
        elif report.skipped and result.outcome == "passed":
            result.outcome = "skipped"
            result.message = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.collect_errors[report.nodeid] = str(report.longrepr)


def _message(excinfo) -> str:
    """The exception's message; for `assert cond, msg` only `msg`, not pytest's rewrite."""
    exc = excinfo.value
    text = str(exc)
    if isinstance(exc, AssertionError):
        lines = text.splitlines()
        # pytest's assertion rewriting appends "assert <expr>" after the message.
        cut = next((i for i, line in enumerate(lines) if i and line.startswith("assert ")), len(lines))
        # ... and indents the message's continuation lines by two spaces.
        kept = lines[:1] + [line.removeprefix("  ") for line in lines[1:cut]]
        return "\n".join(kept) or "assertion failed (the grader gave no message)"
    return f"{type(exc).__name__}: {text}"


def run_graders(graders: list[str], impl: str, root: Path = ROOT) -> Collector:
    """Run the grader files in this process and collect every test's outcome.

    Raises:
        GradingError: If pytest could not start or stopped on an internal error.
    """
    collector = Collector()
    args = [
        "-q", "--tb=no", "-rN", "-p", "no:cacheprovider",
        "--continue-on-collection-errors", f"--impl={impl}",
        "--rootdir", str(root), "-c", str(root / "pyproject.toml"),
        *[str(root / g) for g in graders],
    ]  # fmt: skip
    # pytest's own report (progress dots, summary) is replaced by ours; keep it only to
    # explain a run that broke down.
    with contextlib.redirect_stdout(io.StringIO()) as output:
        code = pytest.main(args, plugins=[collector])
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
        raise GradingError(f"pytest could not run the graders (exit {int(code)}):\n{_tail(output.getvalue())}")
    return collector


def grade(exercises: list[Exercise], impl: str, root: Path = ROOT) -> list[Score]:
    """Grade the exercises: one `Score` each, with the problem when a grader is unusable."""
    scores = [Score(e) for e in exercises]
    present = [s for s in scores if (root / s.exercise.grader).is_file()]
    for s in scores:
        if s not in present:
            s.problem = f"grader missing: {s.exercise.grader} does not exist"
    collector = run_graders([s.exercise.grader for s in present], impl, root) if present else Collector()
    for s in present:
        _attach(s, collector)
    return scores


def _attach(score: Score, collector: Collector) -> None:
    grader = score.exercise.grader
    score.tests = [r for nodeid, r in collector.results.items() if nodeid.split("::")[0] == grader]
    error = collector.collect_errors.get(grader)
    if error:
        score.problem = f"could not collect {grader}:\n{_tail(error)}"
    elif not score.tests:
        score.problem = f"no tests collected from {grader}; a grader needs at least one test_ function"


def _tail(text: str) -> str:
    """The last lines of a long report, where the exception message is."""
    return "\n".join(text.strip().splitlines()[-MAX_MESSAGE_LINES:])


# --- reporting --------------------------------------------------------------------


def render(scores: list[Score], impl: str, chapter: int | None) -> str:
    """The grade table, then one short block per failing test or unusable grader."""
    scope = "every chapter" if chapter is None else f"chapter {chapter}"
    lines = [f"minifx grades for {impl}/ ({scope})", ""]
    if not scores:
        return "\n".join([*lines, f"No exercises in {scope}: nothing to grade."])
    width = max(len(s.exercise.title) for s in scores)
    row = f"  {{:<6}}  {{:<{width}}}  {{:>7}}  {{:>13}}"
    lines.append(row.format("id", "title", "tests", "points"))
    for s in scores:
        tests = f"{s.passed}/{len(s.ran)}" if not s.problem else "-"
        lines.append(row.format(s.exercise.id, s.exercise.title, tests, _points(s.earned, s.exercise.points)))
    earned, total = sum(s.earned for s in scores), sum(s.exercise.points for s in scores)
    passed, ran = sum(s.passed for s in scores), sum(len(s.ran) for s in scores)
    lines.append(row.format("total", "", f"{passed}/{ran}", _points(earned, total)))
    return "\n".join(lines + _failures(scores))


def _points(earned: float, total: float) -> str:
    return f"{earned:g}/{total:g}" if earned == round(earned, 2) else f"{earned:.2f}/{total:g}"


def _failures(scores: list[Score]) -> list[str]:
    lines = []
    for s in scores:
        if s.problem:
            lines += ["", f"{s.exercise.id} {s.exercise.title}: 0 points", _indent(s.problem)]
        for t in s.tests:
            if t.outcome == "failed":
                lines += ["", f"{s.exercise.id} FAILED {t.nodeid}", _indent(_head(t.message))]
    return lines


def _head(text: str) -> str:
    lines = text.strip().splitlines()
    more = len(lines) - MAX_MESSAGE_LINES
    return "\n".join(lines[:MAX_MESSAGE_LINES] + ([f"... ({more} more lines)"] if more > 0 else []))


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def gradescope(scores: list[Score]) -> dict:
    """Gradescope's `results.json`: one entry per test, and one per unusable grader."""
    tests = []
    for s in scores:
        name = f"{s.exercise.id} {s.exercise.title}"
        if s.problem:
            tests.append(_entry(name, 0.0, s.exercise.points, s.problem))
        for t in s.ran if not s.problem else []:
            earned = s.per_test if t.outcome == "passed" else 0.0
            tests.append(_entry(f"{name}: {t.nodeid.split('::', 1)[-1]}", earned, s.per_test, t.message))
    return {
        "score": round(sum(s.earned for s in scores), 4),
        "max_score": round(sum(s.exercise.points for s in scores), 4),
        "tests": tests,
    }


def _entry(name: str, score: float, max_score: float, output: str) -> dict:
    status = "passed" if score >= max_score else "failed"
    # Unrounded: 3 tests of 10/3 points must add up to 10 for Gradescope.
    return {"name": name, "score": score, "max_score": max_score, "output": output, "status": status}


# --- command line -----------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Grade, print the report, optionally write `results.json`; see the module docstring."""
    parser = argparse.ArgumentParser(prog="python -m tests.grading", description=__doc__.splitlines()[0])
    parser.add_argument("--impl", choices=("exercises", "solutions"), default="exercises")
    parser.add_argument("--chapter", type=int, help="grade only this chapter's exercises")
    parser.add_argument("--results", type=Path, help="also write Gradescope's results.json here")
    args = parser.parse_args(argv)
    try:
        exercises = [e for e in load_manifest() if args.chapter in (None, e.chapter)]
        scores = grade(exercises, args.impl)
    except GradingError as exc:
        print(f"grading failed: {exc}", file=sys.stderr)
        return 2
    print(render(scores, args.impl, args.chapter))
    if args.results:
        args.results.parent.mkdir(parents=True, exist_ok=True)
        args.results.write_text(json.dumps(gradescope(scores), indent=2) + "\n", encoding="utf-8")
        print(f"\nwrote {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
