"""Write a GitHub Classroom autograding workflow from the points manifest.

Usage (from the repository root; `make classroom` runs the first line):

    python -m tests.classroom                          # every chapter, to stdout
    python -m tests.classroom --chapter 2 --out .github/workflows/classroom.yml

The workflow grades every exercise once, in one step, through the isolated grading
harness (`python -m tests.grading`): each exercise in its own time-limited process, the
graders and manifest read into the judge's memory before any student code runs. The
judge writes one verdict per exercise, `<id> pass` or `<id> fail`, to a file outside the
repository once every student process has ended. Then one `autograding-command-grader`
step per exercise only looks its verdict up with `grep`: the step's exit code is the
judge's verdict, never the exit code of student code, so `os._exit(0)`, a skipped test
or `pytest.exit(returncode=0)` earn nothing. An exercise earns its points when every
test passes (the command grader scores a command, not its tests); for partial credit
per test, use Gradescope. The last step, the reporter, sends the scores to GitHub
Classroom.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import yaml

from tests.grading import Exercise, GradingError, load_manifest
from tests.grading.build import load_tasks
from tests.grading.judge import snapshot

# The Makefile target that builds .venv with torch and the dev tools (see the Makefile).
# GitHub's runners have no GPU, and PyPI's Linux torch wheel pulls several GB of CUDA
# packages, so the workflow asks PyTorch's index for the CPU build.
SETUP_COMMAND = "make .venv/.minifx-installed TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu"
# Outside the repository, so a verdict file cannot be committed; removed before grading.
VERDICTS = '"$RUNNER_TEMP/minifx-verdicts.txt"'
TIMEOUT_MINUTES = 10


def step_id(exercise: Exercise) -> str:
    """`ex1-1-proxy-failure`: a step id GitHub Actions accepts (letters, digits, -)."""
    slug = re.sub(r"[^a-z0-9]+", "-", exercise.title.lower()).strip("-")
    return f"{'task' if exercise.kind == 'task' else 'ex'}{exercise.id.replace('.', '-')}-{slug}"


def grading_step(exercises: list[Exercise]) -> dict:
    """The step that sets up the venv and grades every exercise once, isolated."""
    chosen = " ".join(f"--{e.kind} {e.id}" for e in exercises)
    if any(e.kind == "task" for e in exercises):
        chosen += " --track " + ("all" if any(e.kind == "exercise" for e in exercises) else "build")
    return {
        "name": "Grade every exercise (one isolated process each)",
        "run": f"rm -f {VERDICTS}\n{SETUP_COMMAND}\n"
        f".venv/bin/python -m tests.grading {chosen} --verdicts {VERDICTS}\n",
        "timeout-minutes": TIMEOUT_MINUTES + 20,
    }


def grader_step(exercise: Exercise) -> dict:
    """The step that turns one exercise's verdict into its points."""
    points = exercise.points
    if points != int(points):
        raise GradingError(
            f"exercise {exercise.key} is worth {points} points, but GitHub Classroom's "
            "max-score is a whole number. Give it whole points in tests/graders/points.toml."
        )
    return {
        "name": f"{exercise.key} {exercise.title}",
        "id": step_id(exercise),
        "uses": "classroom-resources/autograding-command-grader@v1",
        "with": {
            "test-name": f"{exercise.key} {exercise.title}",
            "setup-command": "",
            "command": f"grep -qx '{exercise.key} pass' {VERDICTS}",
            "timeout": 1,
            "max-score": int(points),
        },
    }


def reporter_step(exercises: list[Exercise]) -> dict:
    """The step that collects every grader step's result for GitHub Classroom."""
    ids = [step_id(e) for e in exercises]
    return {
        "name": "Autograding Reporter",
        "uses": "classroom-resources/autograding-grading-reporter@v1",
        "env": {f"{i.upper()}_RESULTS": f"${{{{steps.{i}.outputs.result}}}}" for i in ids},
        "with": {"runners": ",".join(ids)},
    }


def workflow(exercises: list[Exercise]) -> dict:
    """The whole workflow, as the data `yaml.safe_dump` writes."""
    if not exercises:
        raise GradingError(
            "no exercises to grade: check --chapter against tests/graders/points.toml"
        )
    steps = [{"name": "Checkout code", "uses": "actions/checkout@v4"}, grading_step(exercises)]
    steps += [grader_step(e) for e in exercises]
    steps.append(reporter_step(exercises))
    return {
        "name": "Autograding Tests",
        "on": ["push", "workflow_dispatch", "repository_dispatch"],
        "permissions": {"checks": "write", "actions": "read", "contents": "read"},
        "jobs": {
            "run-autograding-tests": {
                "runs-on": "ubuntu-latest",
                "if": "github.actor != 'github-classroom[bot]'",
                "steps": steps,
            }
        },
    }


class _Dumper(yaml.SafeDumper):
    """Writes multi-line strings (the grading step's script) as `|` blocks."""


_Dumper.add_representer(
    str,
    lambda dumper, text: dumper.represent_scalar(
        "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None
    ),
)


def render(exercises: list[Exercise]) -> str:
    header = (
        "# Generated by `python -m tests.classroom` from tests/graders/points.toml; do not edit.\n"
    )
    return header + yaml.dump(workflow(exercises), Dumper=_Dumper, sort_keys=False, width=200)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.classroom", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--chapter", type=int, help="only this chapter's exercises")
    parser.add_argument("--out", type=Path, help="write the workflow here instead of stdout")
    parser.add_argument(
        "--track",
        choices=("exercises", "build", "all"),
        default="exercises",
        help="grade the exercises (default), the build tasks carved out of minifx, or both",
    )
    args = parser.parse_args(argv)
    try:
        chosen = load_manifest() if args.track != "build" else []
        chosen += load_tasks(snapshot()) if args.track != "exercises" else []
        text = render([e for e in chosen if args.chapter in (None, e.chapter)])
    except GradingError as exc:
        print(f"cannot write the workflow: {exc}", file=sys.stderr)
        return 2
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
