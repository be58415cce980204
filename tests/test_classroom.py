"""The GitHub Classroom workflow written from the points manifest (tests/classroom.py)."""

from __future__ import annotations

import re

import pytest
import yaml

from tests import classroom
from tests.grading import Exercise, GradingError, load_manifest

pytestmark = pytest.mark.meta


def steps_of(text: str) -> list[dict]:
    return yaml.safe_load(text)["jobs"]["run-autograding-tests"]["steps"]


def test_one_grader_step_per_exercise_worth_its_points():
    exercises = load_manifest()
    steps = steps_of(classroom.render(exercises))
    graders = [
        s
        for s in steps
        if s.get("uses", "").startswith("classroom-resources/autograding-command-grader")
    ]
    assert [s["with"]["test-name"] for s in graders] == [f"{e.id} {e.title}" for e in exercises]
    assert sum(s["with"]["max-score"] for s in graders) == sum(e.points for e in exercises)
    for step, exercise in zip(graders, exercises):
        # The step only reads the judge's verdict: no student code runs in it.
        assert step["with"]["command"] == f"grep -qx '{exercise.id} pass' {classroom.VERDICTS}"


def test_one_step_sets_up_and_grades_everything_with_the_cpu_build():
    steps = steps_of(classroom.render(load_manifest()))
    script = steps[1]["run"]
    assert "download.pytorch.org/whl/cpu" in script and "-m tests.grading" in script
    assert f"--verdicts {classroom.VERDICTS}" in script and script.startswith(
        f"rm -f {classroom.VERDICTS}"
    )
    assert all(s["with"]["setup-command"] == "" for s in steps[2:-1])


def test_the_reporter_reads_every_grader_step():
    steps = steps_of(classroom.render(load_manifest()))
    ids = [s["id"] for s in steps[2:-1]]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[a-z][a-z0-9-]*", i) for i in ids)
    reporter = steps[-1]
    assert reporter["with"]["runners"].split(",") == ids
    assert reporter["env"] == {
        f"{i.upper()}_RESULTS": f"${{{{steps.{i}.outputs.result}}}}" for i in ids
    }


def test_on_is_a_list_of_events_not_the_boolean_true():
    # YAML 1.1 reads a bare `on` key as True; GitHub needs the string.
    assert "'on':" in classroom.render(load_manifest())


def test_a_chapter_selects_its_exercises(tmp_path, capsys):
    out = tmp_path / "classroom.yml"
    assert classroom.main(["--chapter", "2", "--out", str(out)]) == 0
    names = [s["name"] for s in steps_of(out.read_text())[2:-1]]
    assert names and all(n.startswith("2.") for n in names)


def test_a_chapter_without_exercises_is_an_error(capsys):
    assert classroom.main(["--chapter", "99"]) == 2
    assert "no exercises" in capsys.readouterr().err


def test_fractional_points_are_refused_with_the_fix():
    half = Exercise("1.9", "Half", 1, "ch1_half", "tests/graders/x.py", 2.5)
    with pytest.raises(GradingError, match="whole number.*points.toml"):
        classroom.workflow([half])
