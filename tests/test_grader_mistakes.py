"""Each grader catches the plausible wrong answers it lists, with the hint written for them.

The mistakes of each grader are listed in `solutions/mistakes.py` (out of the student
release: each is a piece of an answer), as `Mistake`s (tests/graders/support.py): each is
the solution with one edit. Here every mistake is made and graded through the
grading harness, and must lose points with a message that contains its `expect` words.
Mistakes of different exercises are graded together, one round per mistake number.
"""

from __future__ import annotations

import importlib
import itertools
from pathlib import Path

import pytest

from tests.conftest import RELEASE
from tests.grading import Limits, grade, load_manifest

pytestmark = [pytest.mark.meta, pytest.mark.needs_solutions]

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = load_manifest()
# A student release has no solutions/; its tests here are left out there (tests/conftest.py).
MISTAKES = {} if RELEASE else importlib.import_module("solutions.mistakes").MISTAKES


def mistakes_of(exercise) -> list:
    return list(MISTAKES.get(exercise.id, []))


def test_every_grader_lists_at_least_three_mistakes():
    few = {e.id: len(mistakes_of(e)) for e in EXERCISES if len(mistakes_of(e)) < 3}
    assert not few, (
        f"graders with fewer than 3 plausible wrong answers in solutions/mistakes.py: {few}"
    )


def made(exercise, mistake) -> bytes:
    solution = (ROOT / "solutions" / f"{exercise.module}.py").read_text(encoding="utf-8")
    assert solution.count(mistake.find) == 1, (
        f"{exercise.grader}: Mistake {mistake.name!r}: `find` must occur exactly once in "
        f"solutions/{exercise.module}.py, found {solution.count(mistake.find)} times"
    )
    return solution.replace(mistake.find, mistake.replace).encode()


# What the worker adds to an error raised by a grader's own line (tests/grading/worker.py).
GRADER_FAILED = "raised in the grader, not in your code"

ROUNDS = list(itertools.zip_longest(*[[(e, m) for m in mistakes_of(e)] for e in EXERCISES]))


@pytest.mark.parametrize("round_", range(len(ROUNDS)), ids=lambda i: f"round-{i + 1}")
def test_each_mistake_loses_points_with_its_hint(round_):
    made_here = [pair for pair in ROUNDS[round_] if pair is not None]
    modules = {e.module: (ROOT / "solutions" / f"{e.module}.py").read_bytes() for e in EXERCISES}
    modules.update({e.module: made(e, m) for e, m in made_here})
    scores = {
        s.exercise.id: s for s in grade([e for e, _ in made_here], modules, Limits(timeout=60))
    }
    problems = []
    for exercise, mistake in made_here:
        score = scores[exercise.id]
        messages = "\n".join(
            [score.problem, *(t.message for t in score.tests if t.outcome == "failed")]
        )
        crashed = [t.nodeid for t in score.tests if GRADER_FAILED in t.message]
        if crashed:  # the grader's own code broke on the mistake, whatever the hint says
            problems.append(f"{exercise.id} {mistake.name!r}: the grader failed in {crashed}")
        if score.earned >= exercise.points:
            problems.append(f"{exercise.id} {mistake.name!r}: still full marks")
        elif mistake.expect not in messages:
            problems.append(
                f"{exercise.id} {mistake.name!r}: no message says {mistake.expect!r}; "
                f"they say:\n{messages[:1500]}"
            )
    assert not problems, "\n\n".join(problems)
