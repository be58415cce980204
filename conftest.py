"""The `--impl` switch, registered at the repository root so that pytest knows it at once.

`pytest -m ch3 --impl solutions` works as written only if the option exists before pytest
reads its arguments; a conftest.py in the root folder is loaded that early (one in
`tests/` is not, and pytest would then take `solutions` for a path).
"""

from __future__ import annotations

from pathlib import Path

import pytest

IMPLS = ("solutions", "exercises")
# A student release has no solutions/: there the graders test the student's exercises/.
DEFAULT_IMPL = "solutions" if (Path(__file__).parent / "solutions").is_dir() else "exercises"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--impl",
        choices=IMPLS,
        default=DEFAULT_IMPL,
        help=f"package whose exercise modules the graders test (default here: {DEFAULT_IMPL})",
    )


# The files that grade whole submissions, slowest first: each takes minutes on one process
# (`make test` runs `--dist loadfile`, which keeps a file's tests together for its
# fixtures). Sent to the processes first, so that the many short files fill the time
# around them and every process ends at about the same time; xdist would otherwise send
# the files with the most tests first (`--no-loadscope-reorder` in the Makefile keeps
# this order), and these last.
RUN_FIRST = (
    "tests/test_grading_tampering.py",
    "tests/test_grader_mistakes.py",
    "tests/test_grading_build.py",
    "tests/test_grading_attacks.py",
    "tests/test_tasks.py",
    "tests/test_browser.py",
    "tests/test_grading.py",
    "tests/test_release.py",
)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the tests of RUN_FIRST's files first, in its order; the others keep theirs."""
    rank = {path: place for place, path in enumerate(RUN_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(RUN_FIRST)))
