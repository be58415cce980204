"""benchmarks.plots: charts drawn to be read on a phone (see the module's docstring)."""

from __future__ import annotations

import struct

import pytest

from benchmarks import plots

pytestmark = pytest.mark.ch8


def png_size(path) -> tuple[int, int]:
    """A PNG's width and height in pixels, from its header."""
    return struct.unpack(">II", path.read_bytes()[16:24])


def test_a_chart_is_saved_at_twice_its_width_in_the_book(tmp_path) -> None:
    path = tmp_path / "chart.png"
    plots.speedup_bars(path, [1, 8], {"a": [1.5, 2.0], "b": [1.2, 1.1]}, "speedup", "Title")
    width, _ = png_size(path)
    assert width == plots.WIDTH_PX * plots.PIXELS_PER_CSS_PX


def test_text_smaller_than_the_phone_limit_is_refused(tmp_path) -> None:
    path = tmp_path / "chart.png"
    with pytest.raises(ValueError, match=r"'tiny' \(8 pt\).*leave the font size at its default"):
        with plots.png_figure(path) as axes:
            axes.set_title("fine")
            axes.annotate("tiny", (0, 0), fontsize=8)
    assert not path.exists()


def test_the_limit_reads_11_px_on_a_360_px_phone() -> None:
    # A 360-px phone's text column is 328 px (Material's 16-px margins).
    assert plots.TEXT_PX * 328 / plots.WIDTH_PX >= 11
