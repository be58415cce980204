"""Fixtures of the stage-3 tests."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest


@pytest.fixture
def marker():
    """A file that only a payload would create; the test fails if it exists afterwards."""
    path = Path("/tmp") / f"pwned_{uuid.uuid4().hex}"  # no dot: targets split on dots
    yield path
    created = path.exists()
    path.unlink(missing_ok=True)
    assert not created, f"a payload ran: {path} was created"
