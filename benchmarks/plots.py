"""The plots the benchmarks of stage 5 write for the book's performance page (PNG).

Every chart is drawn to be read on a phone as well as on a laptop. The book shows each
one `WIDTH_PX` CSS pixels wide (its Markdown gives the image that `width`), and no text
in it is smaller than `TEXT_PT`: `TEXT_PX` CSS pixels at that width. A 360-px phone's
328-px column draws the chart at 0.68 of that width, its smallest text at 11.4 px, the
smallest size the book allows (tests/test_browser.py checks the width each image is
drawn at). The PNG holds twice the pixels, so that a phone's screen draws it sharp.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

WIDTH_PX = 480
TEXT_PT = 12
TEXT_PX = TEXT_PT * 100 / 72  # 72 points per inch, and the figure has 100 CSS px per inch
PIXELS_PER_CSS_PX = 2


@contextmanager
def png_figure(path: Path, height_px: int = 360) -> Iterator[Any]:
    """Yield fresh matplotlib axes `WIDTH_PX` x `height_px` CSS pixels; on leaving, check
    that no text is smaller than `TEXT_PT`, and save the figure to `path` as a PNG.

    Raises:
        ValueError: a text of the figure is smaller than `TEXT_PT` (it would be
            unreadable on a phone).
    """
    import matplotlib

    matplotlib.use("Agg")  # no display: write the file only
    import matplotlib.pyplot as plt

    with plt.rc_context({"font.size": TEXT_PT}):
        figure, axes = plt.subplots(figsize=(WIDTH_PX / 100, height_px / 100), layout="constrained")
        try:
            yield axes
            check_text_sizes(figure)
            path.parent.mkdir(parents=True, exist_ok=True)
            figure.savefig(path, dpi=100 * PIXELS_PER_CSS_PX)
        finally:
            plt.close(figure)


def check_text_sizes(figure: Any) -> None:
    """Raise a ValueError naming each visible text of `figure` smaller than `TEXT_PT`."""
    from matplotlib.text import Text

    small = [
        f"{text.get_text()!r} ({text.get_fontsize():g} pt)"
        for text in figure.findobj(Text)
        if text.get_visible() and text.get_text() and text.get_fontsize() < TEXT_PT
    ]
    if small:
        raise ValueError(
            f"chart text smaller than {TEXT_PT} pt, unreadable on a phone: {', '.join(small)}; "
            "leave the font size at its default (benchmarks/plots.py sets it)"
        )


def legend_below(axes: Any, columns: int) -> None:
    """The figure's legend under the axes, in `columns` columns, centred on the figure.

    Inside the axes it covered bars wherever they were all about as tall (the fusion
    plot's 1.08 / 1.09); centred on the axes alone, a wide one ran off the figure's edge.
    """
    axes.figure.legend(loc="outside lower center", ncols=columns, frameon=False)


def speedup_bars(
    path: Path,
    batches: list[int],
    speedups: dict[str, list[float]],
    ylabel: str,
    title: str,
) -> None:
    """Grouped bars: for each batch size, one bar per runner's speedup, labelled.

    Args:
        path: where the PNG goes.
        batches: the batch sizes, one group of bars each.
        speedups: runner label -> its speedup at each batch size, in `batches`' order.
        ylabel, title: the axis label and the title.
    """
    width = 0.8 / len(speedups)
    with png_figure(path, height_px=400) as axes:
        for i, (label, values) in enumerate(speedups.items()):
            offset = (i - (len(speedups) - 1) / 2) * width
            bars = axes.bar([b + offset for b in range(len(batches))], values, width, label=label)
            axes.bar_label(bars, fmt="%.2f")
        axes.axhline(1.0, color="grey", linewidth=1, linestyle="--")  # 1: no speedup
        axes.set_xticks(range(len(batches)), [str(batch) for batch in batches])
        axes.set_xlabel("batch size")
        axes.set_ylabel(ylabel)
        axes.set_ylim(0, max(max(values) for values in speedups.values()) * 1.15)
        axes.set_title(title)
        legend_below(axes, columns=len(speedups))
