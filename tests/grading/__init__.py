"""Grading: a judge that never imports student code, and workers that run it.

Usage (from the repository root; `make grade` runs the first line):

    python -m tests.grading                           # grade exercises/, every chapter
    python -m tests.grading --chapter 1               # one chapter
    python -m tests.grading --exercise 2.1            # one exercise
    python -m tests.grading --impl solutions          # the reference solutions
    python -m tests.grading --submission DIR          # a student's files, found in DIR
    python -m tests.grading --results results.json    # also write Gradescope's results
    python -m tests.grading --track build             # the build tasks carved out of minifx/
    python -m tests.grading --task 1.2                # one build task (--track all: both)

The modules: `manifest` reads `tests/graders/points.toml`; `scan` reads each submitted
module for what graded code may not do; `judge` stages and runs one worker process per
exercise and decides the points from what the worker reports; `worker` runs inside that
process, next to the student's code, with `sandbox` (an audit hook that refuses what
would reach into the grading), `landlock` (the kernel's limits on the files the worker
may write and read) and `guard` (the check, after each test, that nothing the grading
relies on was changed); `report` prints the table and writes `results.json`;
`gradescope` builds Gradescope's autograder; `build` makes the build tasks (marked in
minifx, see tests/tasks.py) gradable like exercises, each in its own worker.

Grading is a report, not a gate: the exit status is 0 whatever the score, and 2 only when
grading itself could not run (a broken manifest, a missing folder).
"""

from tests.grading.judge import Limits, Score, TestResult, grade
from tests.grading.manifest import MANIFEST, Exercise, GradingError, load_manifest

__all__ = [
    "MANIFEST",
    "Exercise",
    "GradingError",
    "Limits",
    "Score",
    "TestResult",
    "grade",
    "load_manifest",
    "main",
]


def main(argv: list[str] | None = None) -> int:
    """The command line; see the module docstring."""
    from tests.grading.cli import main as cli_main

    return cli_main(argv)
