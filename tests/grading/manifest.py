"""The points manifest, `tests/graders/points.toml`: which exercises exist and their worth.

The manifest lives beside the graders, not in `exercises/`, because it belongs to the
instructor: a student's copy of `exercises/` never carries it, so a submission cannot
reweight anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "tests" / "graders" / "points.toml"
KEYS = {"title": str, "chapter": int, "module": str, "grader": str, "points": (int, float)}
# Gradescope's values for a test's `visibility`.
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")


class GradingError(Exception):
    """Grading could not run at all (as opposed to an exercise scoring 0)."""


@dataclass(frozen=True)
class Exercise:
    """One `[exercises."<id>"]` table of the manifest.

    Attributes:
        id: `"<chapter>.<n>"`, such as `"1.2"`.
        title: Shown in the grade table.
        chapter: The chapter; `make grade CH=<chapter>` selects by it.
        module: `exercises/<module>.py` is what the student writes.
        grader: The grader's path from the repository root.
        points: Split evenly over the grader's tests that ran.
        visibility: Gradescope's visibility of the exercise's tests.
        test_visibility: Per test function, a visibility other than `visibility`.
        kind: `"exercise"`, or `"task"` for a build task (tests/grading/build.py): then
            `module` lists the minifx files that hold it, comma-separated, and `grader`
            the stage test files that carry its marker, separated by `;`.
    """

    id: str
    title: str
    chapter: int
    module: str
    grader: str
    points: float
    visibility: str = "visible"
    test_visibility: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    kind: str = "exercise"

    @property
    def key(self) -> str:
        """The id that is unique across both tracks: `"1.2"` for an exercise, `"T1.2"` for a task."""
        return f"T{self.id}" if self.kind == "task" else self.id

    def visibility_of(self, nodeid: str) -> str:
        """The visibility of one test, from its pytest id (`path::test_name[param]`)."""
        function = nodeid.split("::")[-1].split("[")[0]
        return self.test_visibility.get(function, self.visibility)


def load_manifest(path: Path = MANIFEST) -> list[Exercise]:
    """Read and check the points manifest; exercises come back sorted by id.

    Raises:
        GradingError: If the file is missing, is not TOML, or an entry lacks a key or
            has a key of the wrong type.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise GradingError(f"cannot read the points manifest {path}: {exc}") from exc
    tables = data.get("exercises", {})
    if not isinstance(tables, dict) or not all(isinstance(t, dict) for t in tables.values()):
        raise GradingError(
            f'{path}: write one table per exercise, [exercises."<chapter>.<n>"]; see the file\'s header'
        )
    if not tables:
        raise GradingError(
            f'{path} lists no exercise: add one [exercises."<chapter>.<n>"] table per exercise'
        )
    exercises = [_exercise(path, id_, entry) for id_, entry in tables.items()]
    return sorted(exercises, key=lambda e: tuple(int(p) for p in e.id.split(".")))


def _exercise(path: Path, id_: str, entry: dict) -> Exercise:
    where = f'{path}: [exercises."{id_}"]'
    parts = id_.split(".")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise GradingError(f'{where}: the id must be "<chapter>.<n>", like "1.2"')
    for key, kind in KEYS.items():
        if not isinstance(entry.get(key), kind) or isinstance(entry.get(key), bool):
            raise GradingError(
                f"{where}: needs `{key}` ({_kind_name(kind)}); see the comment at the top of the file"
            )
    if entry["chapter"] != int(parts[0]):
        raise GradingError(
            f"{where}: chapter = {entry['chapter']} but the id says chapter {parts[0]}"
        )
    if entry["points"] < 0:
        raise GradingError(f"{where}: points = {entry['points']}; give it 0 or more")
    visibility = entry.get("visibility", "visible")
    tests = entry.get("test_visibility", {})
    if not isinstance(tests, dict):
        raise GradingError(f'{where}: test_visibility must be a table, {{ test_name = "hidden" }}')
    for value in [visibility, *tests.values()]:
        if value not in VISIBILITIES:
            raise GradingError(
                f"{where}: visibility {value!r} is not one of Gradescope's: {', '.join(VISIBILITIES)}"
            )
    unknown = set(entry) - set(KEYS) - {"visibility", "test_visibility"}
    if unknown:
        raise GradingError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))}; see the comment at the top of the file"
        )
    return Exercise(
        id_, **{key: entry[key] for key in KEYS}, visibility=visibility, test_visibility=dict(tests)
    )


def _kind_name(kind) -> str:
    return "a number" if isinstance(kind, tuple) else f"a {kind.__name__}"
