"""The code passes ruff, configured in pyproject.toml, so `make test` lints as it tests.

ruff is pinned in the `dev` extra, which `make test` installs. A student release leaves
these checks out (`needs_solutions`): a student's half-written exercise is graded by
`make grade`, not failed for its style.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.meta, pytest.mark.needs_solutions]

ROOT = Path(__file__).resolve().parent.parent


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    """Run this environment's ruff on the repository, as `make test` installed it."""
    result = subprocess.run(
        [sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True
    )
    if "No module named ruff" in result.stderr:
        pytest.fail(
            "ruff is not installed: `make test` installs the dev extra, or run "
            "`python -m pip install -e '.[dev]'`",
            pytrace=False,
        )
    return result


def test_ruff_check_passes():
    result = ruff("check", "--no-cache", "--output-format", "concise", ".")
    assert result.returncode == 0, (
        "ruff check found problems (fix them; `ruff check --fix .` "
        f"fixes some):\n{result.stdout}{result.stderr}"
    )


def test_ruff_format_leaves_the_code_as_it_is():
    result = ruff("format", "--check", "--no-cache", ".")
    assert result.returncode == 0, f"run `ruff format .`:\n{result.stdout}{result.stderr}"
