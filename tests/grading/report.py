"""What grading prints, and Gradescope's `results.json`, from the judge's scores."""

from __future__ import annotations

import re

from tests.grading.judge import Score, TestResult

STUB = "NotImplementedError: Exercise "
# What a carved build task raises (tests/tasks.py): "Task 1.2 (title) is yours to write: ..."
CARVED = re.compile(r"NotImplementedError: Task (\d+\.\d+) \(")
# Characters that a terminal acts on instead of showing them (an escape sequence can move
# the cursor and draw a fake grade table over the real one), or that reorder the text
# around them (Unicode's bidirectional controls). Graded code's messages may hold any.
HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """`text` with each `HIDDEN` character written as its escape (`\\x1b`); line breaks and
    tabs stay as they are."""
    return HIDDEN.sub(lambda match: repr(match.group())[1:-1], text)


def render(scores: list[Score], what: str, scope: str, verbose: bool = False) -> str:
    """The grade table, then what went wrong, exercise by exercise."""
    lines = [f"minifx grades for {what} ({scope})", ""]
    if not scores:
        return "\n".join([*lines, f"No exercises in {scope}: nothing to grade."])
    width = max(len(s.exercise.title) for s in scores)
    row = f"  {{:<6}}  {{:<{width}}}  {{:>7}}  {{:>13}}"
    lines.append(row.format("id", "title", "tests", "points"))
    for s in scores:
        tests = f"{s.passed}/{len(s.ran)}" if not s.problem else "-"
        waits = sorted(set(blockers(s)) - {_own_task(s)})
        note = f"  (waits for task {', '.join(waits)})" if waits else ""
        lines.append(
            row.format(s.exercise.key, s.exercise.title, tests, points(s.earned, s.exercise.points))
            + note
        )
    earned, total = sum(s.earned for s in scores), sum(s.exercise.points for s in scores)
    passed, ran = sum(s.passed for s in scores), sum(len(s.ran) for s in scores)
    lines.append(row.format("total", "", f"{passed}/{ran}", points(earned, total)))
    for index, s in enumerate(scores):
        lines += _explain(s, verbose, _unfinished_before(scores, index))
    return visible("\n".join(lines))


def blockers(score: Score) -> dict[str, list[TestResult]]:
    """The failing tests by the carved task they stopped in: `{task id: tests}`. An
    exercise's tests stop in one too when its release carved a part of minifx it uses."""
    found: dict[str, list[TestResult]] = {}
    for test in score.tests:
        if test.outcome == "failed" and (match := CARVED.search(test.message)):
            found.setdefault(match[1], []).append(test)
    return found


def _own_task(score: Score) -> str:
    """A build task's own id (its tests stopping in it mean: not started), or ''."""
    return score.exercise.id if score.exercise.kind == "task" else ""


def _unfinished_before(scores: list[Score], index: int) -> list[str]:
    """The earlier build tasks in this report that do not have full marks."""
    score = scores[index]
    if score.exercise.kind != "task" or score.full:
        return []
    return [s.exercise.id for s in scores[:index] if s.exercise.kind == "task" and not s.full]


def points(earned: float, total: float) -> str:
    return f"{earned:g}/{total:g}" if earned == round(earned, 2) else f"{earned:.2f}/{total:g}"


def _explain(score: Score, verbose: bool, unfinished: list[str] = ()) -> list[str]:
    """The block below the table for one exercise: nothing when it has full marks."""
    title = f"{score.exercise.key} {score.exercise.title}"
    failed = [t for t in score.tests if t.outcome == "failed"]
    if score.problem:
        return ["", f"{title}: 0 points", _indent(score.problem)]
    lines = []
    for task, tests in sorted(blockers(score).items()):
        line = next(line for line in tests[0].message.splitlines() if CARVED.search(line))
        if task == _own_task(score):
            lines += [
                "",
                f"{title}: not started; its carved body still raises ({len(tests)} test(s))",
                _indent(line[line.index("NotImplementedError") :]),
            ]
        else:
            lines += [
                "",
                f"{title}: {len(tests)} test(s) stop in task {task}, which is not written yet; "
                f"these failures are task {task}'s, not this one's: finish it first (make grade TASK={task})",
            ]
        failed = [t for t in failed if t not in tests]
    if not failed:
        return lines
    if unfinished:
        lines += [
            "",
            f"{title}: earlier task(s) {', '.join(unfinished)} are not finished and this task's tests "
            "use them, so the failures below may be theirs: fix them first",
        ]
    return lines + _explain_failures(score, failed, title, verbose)


def _explain_failures(
    score: Score, failed: list[TestResult], title: str, verbose: bool
) -> list[str]:
    """The failures that no unfinished task explains: an untouched stub, one shared
    message, or each test's message."""
    if failed and all(STUB in t.message for t in failed):
        line = next(line for line in failed[0].message.splitlines() if STUB in line)
        return [
            "",
            f"{title}: not started; the stub still raises",
            _indent(line[line.index(STUB) :]),
        ]
    messages = {t.message for t in failed}
    if len(failed) > 1 and len(messages) == 1:
        return ["", f"{title}: all {len(failed)} failing tests say", _indent(failed[0].message)]
    # Tests that fail with the same message (one mistake, met by many cases) share one
    # block, so the report does not repeat it once per test.
    groups: dict[str, list[TestResult]] = {}
    for test in failed:
        groups.setdefault(test.message, []).append(test)
    lines = []
    for index, (message, tests) in enumerate(groups.items()):
        text = message if verbose or index == 0 else _first_paragraph(message)
        lines += ["", f"{score.exercise.key} FAILED {_names(tests)}", _indent(text)]
    return lines


def _names(tests: list[TestResult], shown: int = 4) -> str:
    """One test's name, or how many tests share a message and the first few names."""
    if len(tests) == 1:
        return _name(tests[0])
    names = ", ".join(_name(t) for t in tests[:shown])
    more = f" and {len(tests) - shown} more" if len(tests) > shown else ""
    return f"{len(tests)} tests with the same message: {names}{more}"


def _name(test: TestResult) -> str:
    return test.nodeid.split("::", 1)[-1]


def _first_paragraph(message: str) -> str:
    """A message up to its first blank line (the graphs after it are shown once)."""
    head, _, rest = message.strip().partition("\n\n")
    return head + ("\n(more below in the full message: add VERBOSE=1)" if rest else "")


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.strip().splitlines())


def gradescope(scores: list[Score]) -> dict:
    """Gradescope's `results.json`: one entry per test, or one per exercise that earns 0 whole."""
    tests = []
    for s in scores:
        name = f"{s.exercise.key} {s.exercise.title}"
        if s.problem or not s.ran:
            why = s.problem or "no test of this exercise could run on this machine"
            tests.append(_entry(name, 0.0, s.exercise.points, why, s.exercise.visibility))
            continue
        for t in s.ran:
            earned = s.per_test if t.outcome == "passed" else 0.0
            tests.append(
                _entry(
                    f"{name}: {_name(t)}",
                    earned,
                    s.per_test,
                    t.message,
                    s.exercise.visibility_of(t.nodeid),
                )
            )
    return {
        "score": round(sum(s.earned for s in scores), 4),
        "max_score": round(sum(s.exercise.points for s in scores), 4),
        "tests": tests,
    }


def _entry(name: str, score: float, max_score: float, output: str, visibility: str) -> dict:
    status = "passed" if score >= max_score else "failed"
    # Unrounded: 3 tests of 10/3 points must add up to 10 for Gradescope.
    return {
        "name": name,
        "score": score,
        "max_score": max_score,
        "output": visible(output),
        "status": status,
        "visibility": visibility,
    }


def verdicts(scores: list[Score]) -> str:
    """One line per exercise, `<id> pass` (full marks) or `<id> fail`: for GitHub Classroom."""
    return "".join(f"{s.exercise.key} {'pass' if s.full else 'fail'}\n" for s in scores)
