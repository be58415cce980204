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
