"""The project's metadata agrees with itself: CITATION.cff and LICENSE match pyproject.toml."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.meta

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_the_citation_file_names_the_package_and_its_version():
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert citation["cff-version"] == "1.2.0"
    assert citation["title"] == PROJECT["name"]
    assert citation["version"] == PROJECT["version"], "update CITATION.cff with the release"
    assert citation["license"] == PROJECT["license"]


def test_the_licence_file_is_the_one_pyproject_names():
    assert PROJECT["license-files"] == ["LICENSE"]
    assert "MIT License" in (ROOT / "LICENSE").read_text(encoding="utf-8")
