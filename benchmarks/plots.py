"""The plots the benchmarks of stage 5 write for the book's performance page (PNG)."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator


@contextmanager
def png_figure(path: Path, figsize: tuple[float, float] = (6, 4)) -> Iterator[Any]:
    """Yield fresh matplotlib axes; on leaving, save their figure to `path` as a PNG."""
    import matplotlib

    matplotlib.use("Agg")  # no display: write the file only
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=figsize)
    try:
        yield axes
        figure.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=100)
    finally:
        plt.close(figure)


def speedup_bars(
    path: Path,
    batches: list[int],
    speedups: dict[str, list[float]],
    ylabel: str,
    title: str,
) -> None:
    """Grouped bars: for each batch size, one bar per runner's speedup, labelled.

    The legend sits under the axes, in one row: inside them it covered a bar
    wherever the bars were all about as tall (the fusion plot's 1.08 / 1.09).

    Args:
        path: where the PNG goes.
        batches: the batch sizes, one group of bars each.
        speedups: runner label -> its speedup at each batch size, in `batches`' order.
        ylabel, title: the axis label and the title.
    """
    width = 0.8 / len(speedups)
    with png_figure(path) as axes:
        for i, (label, values) in enumerate(speedups.items()):
            offset = (i - (len(speedups) - 1) / 2) * width
            bars = axes.bar([b + offset for b in range(len(batches))], values, width, label=label)
            axes.bar_label(bars, fmt="%.2f")
        axes.axhline(1.0, color="grey", linewidth=1, linestyle="--")  # 1: no speedup
        axes.set_xticks(range(len(batches)), [f"batch {batch}" for batch in batches])
        axes.set_ylabel(ylabel)
        axes.set_title(title)
        axes.legend(
            loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=len(speedups), frameon=False
        )
