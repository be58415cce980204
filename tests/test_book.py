"""The book builds with `mkdocs build --strict`: no broken link, anchor or snippet path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.meta
def test_book_builds_strict(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    problems = [line for line in run.stderr.splitlines() if not line.startswith("INFO")]
    assert run.returncode == 0, "`mkdocs build --strict` failed:\n" + "\n".join(problems)
    assert (tmp_path / "site" / "index.html").is_file(), "the build wrote no index.html"
