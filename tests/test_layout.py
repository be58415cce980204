"""Each source module's tests are found by name: `minifx/<stage>/<module>.py` is tested in
`tests/<stage>/test_<module>.py`, as issue 17 asks.

Tests of several modules at once (differential runs against torch.fx, properties, models)
keep their own names beside these. `GAPS` lists the modules that have no such file yet,
each with where its tests are today; a gap that is filled fails until it is removed here,
so the list only shrinks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.meta

ROOT = Path(__file__).resolve().parent.parent

# minifx/<stage>/<module>.py -> why it has no tests/<stage>/test_<module>.py yet.
GAPS: dict[str, str] = {}


def expected_test_files() -> dict[str, Path]:
    """Each stage module (not `__init__.py`) -> the test file named after it."""
    return {
        module.relative_to(ROOT).as_posix(): ROOT
        / "tests"
        / module.parent.name
        / f"test_{module.name}"
        for module in sorted((ROOT / "minifx").glob("*/*.py"))
        if module.name != "__init__.py"
    }


def test_each_module_has_a_test_file_named_after_it():
    missing = [
        f"{module} -> {test.relative_to(ROOT)}"
        for module, test in expected_test_files().items()
        if not test.is_file() and module not in GAPS
    ]
    assert not missing, (
        "modules without a test file named after them (write it, or list the "
        "module in GAPS with the reason):\n" + "\n".join(missing)
    )


def test_each_gap_is_still_a_gap():
    expected = expected_test_files()
    for module, reason in GAPS.items():
        assert reason.strip(), f"{module}: say why it has no test file"
        assert module in expected, f"GAPS names {module}, which is not a stage module"
        assert not expected[module].is_file(), (
            f"{expected[module].relative_to(ROOT)} exists now: remove {module} from GAPS"
        )
