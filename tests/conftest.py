"""Fixtures shared by every test: the implementation under test, and the devices.

Graders never import `exercises` or `solutions` directly; they ask the `impl` fixture,
so one switch (`pytest --impl exercises`, registered in the root conftest.py) grades the student's code with the same tests
that check the solutions in the project's own run.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

import pytest
import torch


@dataclass(frozen=True)
class Impl:
    """The implementation under test: the `solutions` or the `exercises` package.

    Attributes:
        name: `"solutions"` or `"exercises"`.
    """

    name: str

    def load(self, module: str) -> ModuleType:
        """Import one exercise module, e.g. `impl.load("ch1_proxy_failure")`.

        Call it inside a test (or a fixture), never at a grader's module level: a stub
        that raises on import then fails that test with its message instead of
        breaking the collection of the whole grader.
        """
        return importlib.import_module(f"{self.name}.{module}")


@pytest.fixture(scope="session")
def impl(request: pytest.FixtureRequest) -> Impl:
    """The implementation under test, chosen by `--impl`."""
    return Impl(request.config.getoption("--impl"))


_NO_CUDA = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="CUDA is not available (torch.cuda.is_available() is False); the CPU run covers this test",
)


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=_NO_CUDA)])
def device(request: pytest.FixtureRequest) -> str:
    """The device to run on: `"cpu"`, and `"cuda"` where a GPU is available."""
    return request.param
