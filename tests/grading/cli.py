"""`python -m tests.grading`: grade, print the table, write the files asked for."""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from tests.grading import build, judge, report
from tests.grading.manifest import MANIFEST, ROOT, GradingError, load_manifest


def parser() -> argparse.ArgumentParser:
    import tests.grading

    p = argparse.ArgumentParser(
        prog="python -m tests.grading", description=tests.grading.__doc__.splitlines()[0]
    )
    p.add_argument(
        "--impl",
        choices=("exercises", "solutions"),
        default="exercises",
        help="grade this folder of the repository (default: exercises)",
    )
    p.add_argument(
        "--submission", type=Path, help="grade the exercise modules found in this folder instead"
    )
    p.add_argument("--chapter", type=int, help="grade only this chapter's exercises")
    p.add_argument(
        "--exercise", action="append", metavar="ID", help="grade only this exercise (repeatable)"
    )
    p.add_argument(
        "--track",
        choices=("exercises", "build", "all"),
        default=None,
        help="exercises (default), the build tasks carved out of minifx, or all",
    )
    p.add_argument(
        "--task", action="append", metavar="ID", help="grade only this build task (repeatable)"
    )
    p.add_argument("--results", type=Path, help="also write Gradescope's results.json here")
    p.add_argument(
        "--verdicts", type=Path, help="also write '<id> pass|fail' lines here (GitHub Classroom)"
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=judge.Limits.timeout,
        help="seconds per exercise (default 60)",
    )
    p.add_argument("--memory", type=float, default=4, help="GiB of memory per exercise (default 4)")
    p.add_argument("--jobs", type=int, default=judge.Limits.jobs, help="exercises graded at once")
    p.add_argument(
        "-v", "--verbose", action="store_true", help="show every failure message in full"
    )
    return p


def track(args: argparse.Namespace) -> str:
    """The track asked for: `--track`, else `build` when `--task` names tasks."""
    return args.track or ("build" if args.task else "exercises")


def select(args: argparse.Namespace, trusted: dict[str, bytes] | None = None) -> list:
    """The manifest's exercises and the build tasks that the options ask for."""
    chosen = []
    if track(args) in ("exercises", "all"):
        chosen += _pick(load_manifest(MANIFEST), args.exercise, f"exercise {{}} in {MANIFEST}")
    if track(args) in ("build", "all"):
        tasks = build.load_tasks(judge.snapshot() if trusted is None else trusted)
        chosen += _pick(tasks, args.task, "build task {} marked in minifx/")
    return [e for e in chosen if args.chapter in (None, e.chapter)]


def _pick(entries: list, ids: list[str] | None, what: str) -> list:
    if not ids:
        return entries
    unknown = sorted(set(ids) - {e.id for e in entries})
    if unknown:
        raise GradingError(
            f"no {what.format(', '.join(unknown))}; the ids are " + ", ".join(e.id for e in entries)
        )
    return [e for e in entries if e.id in ids]


def source_folder(args: argparse.Namespace) -> tuple[Path, str]:
    """Where the graded modules come from, and how the report names it."""
    folder = args.submission if args.submission else ROOT / args.impl
    if args.submission and (ROOT / "solutions").is_dir():
        raise GradingError(
            f"{ROOT} holds solutions/, and a submission's code can read any file on this machine. "
            "Grade submissions where there are no solutions: with the Gradescope autograder "
            "(make gradescope) or in a student release (make student-release)"
        )
    if not folder.is_dir():
        hint = " (a student release has no solutions/)" if args.impl == "solutions" else ""
        raise GradingError(f"{folder} is not a folder{hint}")
    return folder, (str(args.submission) if args.submission else f"{args.impl}/")


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C raises `KeyboardInterrupt`, so that the same cleanup runs."""


@contextlib.contextmanager
def sigterm_stops_grading() -> Iterator[None]:
    """Within the block, SIGTERM (`kill`, a cancelled CI job) stops grading as Ctrl-C does:
    the judge kills its workers and removes its folders before the process exits, where by
    default SIGTERM would end the process at once and leave a looping worker running."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may handle signals
        return

    def stop(signum: int, frame: object) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        with sigterm_stops_grading():
            return _grade_and_report(args)
    except KeyboardInterrupt as stopped:
        print("grading stopped before the end: no report", file=sys.stderr)
        return 128 + (signal.SIGTERM if isinstance(stopped, Terminated) else signal.SIGINT)


def _grade_and_report(args: argparse.Namespace) -> int:
    try:
        trusted = judge.snapshot()
        exercises = select(args, trusted)
        folder, what = source_folder(args)
        limits = judge.Limits(
            timeout=args.timeout, memory=int(args.memory * 1024**3), jobs=max(1, args.jobs)
        )
        started = time.monotonic()
        # The build tasks' files come from the submission's minifx/, or this repository's.
        package_root = args.submission if args.submission else ROOT
        package = build.submitted_package(build.task_files(trusted), package_root)
        modules = judge.submitted_modules([e for e in exercises if e.kind == "exercise"], folder)
        scores = judge.grade(exercises, modules, limits, trusted, package)
        seconds = time.monotonic() - started
    except GradingError as exc:
        print(f"grading failed: {exc}", file=sys.stderr)
        return 2
    scope = (
        "exercise " + ", ".join(args.exercise)
        if args.exercise
        else "task " + ", ".join(args.task)
        if args.task
        else "every chapter"
        if args.chapter is None
        else f"chapter {args.chapter}"
    )
    if track(args) != "exercises":
        what = f"{what} and minifx/" if track(args) == "all" else "minifx/ (build tasks)"
    print(report.render(scores, what, scope, verbose=args.verbose))
    print(
        f"\ngraded in {seconds:.1f} s, each exercise in its own process (limit {limits.timeout:g} s)"
    )
    for path, text in [
        (args.results, lambda: json.dumps(report.gradescope(scores), indent=2) + "\n"),
        (args.verdicts, lambda: report.verdicts(scores)),
    ]:
        if path:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text(), encoding="utf-8")
            print(f"wrote {path}")
    return 0
