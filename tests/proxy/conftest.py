"""Fixtures of the stage-1 tests: a tape recorder, and a placeholder Proxy recorded on it."""

from __future__ import annotations

import pytest

from minifx.proxy import Proxy, TapeRecorder
from tests.proxy.support import placeholder


@pytest.fixture
def tracer() -> TapeRecorder:
    return TapeRecorder()


@pytest.fixture
def x(tracer: TapeRecorder) -> Proxy:
    return placeholder(tracer)
