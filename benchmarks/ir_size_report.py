"""The report and the plot of `benchmarks.ir_size`: its counts as Markdown tables and a PNG.

Kept apart from the measuring so that each module stays short; `benchmarks.ir_size`'s
`main` writes both.
"""

from __future__ import annotations

import datetime
from pathlib import Path

from benchmarks.common import format_markdown, machine_description
from benchmarks.ir_size import (
    LIBRARY_NAMES,
    OPCODES,
    PAPER_COUNT,
    PAPER_FIGURE,
    TRACERS,
    Results,
)
from benchmarks.plots import legend_below, png_figure
from benchmarks.torchscript_size import CAPTURES, KIND_GROUPS, PAPER_COUNTS

# --- tables ----------------------------------------------------------------------


def counts_table(results: Results) -> tuple[list[str], list[list[str]]]:
    """One row per tracer and library, then the paper's figure; header and rows."""
    header = ["tracer", "library", *OPCODES, "total", "libraries agree"]
    rows = []
    for tracer in TRACERS:
        agree = "yes" if tracer not in results.disagreements() else "**NO: counts differ**"
        for library in LIBRARY_NAMES:
            counts = results.counts[tracer, library]
            rows.append(
                [
                    tracer,
                    library,
                    *(str(counts[op]) for op in OPCODES),
                    str(results.total(tracer, library)),
                    agree,
                ]
            )
    rows.append(["paper", PAPER_FIGURE, *("-" for _ in OPCODES), PAPER_COUNT, "-"])
    return header, rows


def captures_table(results: Results) -> tuple[list[str], list[list[str]]]:
    """The paper's comparison: each capture's node count, ours and the paper's."""
    header = ["capture", "IR", "nodes", "nodes, inputs and returns counted", "the paper"]
    rows = []
    for tracer, name in [("default", "`symbolic_trace`"), ("decomposed", "decomposed")]:
        total = str(results.total(tracer, "torch.fx"))
        paper = str(PAPER_COUNTS["torch.fx"]) if tracer == "decomposed" else "-"
        rows.append([name, "torch.fx, minifx", total, total, paper])
    for capture in CAPTURES:
        nodes, with_io = results.torchscript[capture]
        rows.append(
            [
                f"`torch.{capture}`",
                "TorchScript",
                str(nodes),
                str(with_io),
                str(PAPER_COUNTS[capture]),
            ]
        )
    return header, rows


def kinds_table(results: Results) -> tuple[list[str], list[list[str]]]:
    """TorchScript's nodes by kind, one row per capture."""
    header = ["capture", *KIND_GROUPS, "nodes"]
    rows = [
        [
            f"`torch.{capture}`",
            *(str(n) for n in results.torchscript_kinds[capture].values()),
            str(results.torchscript[capture][0]),
        ]
        for capture in CAPTURES
    ]
    return header, rows


def failures_lines(results: Results) -> list[str]:
    """What each library could not trace through without help, one line per type."""
    lines = []
    for library, failures in results.failures.items():
        if not failures:
            lines.append(f"- {library}: every layer type traces through.")
        for kind, error in failures.items():
            lines.append(f"- {library} cannot trace through `{kind}`: ``{error}``")
    return lines


def markdown_report(results: Results, note: str = "") -> str:
    """The table with a header saying what was counted and how."""
    header, rows = counts_table(results)
    same = ", ".join(
        f"{tracer}: {'yes' if results.same_text[tracer] else 'NO'}" for tracer in TRACERS
    )
    lines = [
        "# IR size: nodes per opcode, minifx vs torch.fx",
        "",
        # The book includes the report from here on, under its own heading
        # (pymdownx.snippets drops these marker lines).
        "<!-- --8<-- [start:report] -->",
        f"Produced by `python -m benchmarks.ir_size` on "
        f"{datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}.",
        "",
        f"- Model: {results.model}, in eval mode. Machine (counts do not depend on it): "
        f"{machine_description()}.",
    ]
    if note:
        lines.append(f"- Note: {note}")
    lines += [
        "- **default**: each library's `Tracer`; `torch.nn` layers are leaves (`call_module`). "
        "**decomposed**: `is_leaf_module` returns False for every module, so layers become "
        "`call_function` nodes on `get_attr` parameters and buffers; "
        f"the rank check of {results.skipped_checks} BatchNorm modules was skipped (see below).",
        "- Every traced GraphModule's output equals the eager model's (`torch.equal`), checked.",
        f"- Both libraries print the same graph: {same}.",
        "- TorchScript: the same model in eval mode, `torch.jit.trace` (on the input above) "
        "and `torch.jit.script`, each module's `inlined_graph`. **nodes** counts every node, "
        "those of nested blocks (`prim::If`, `prim::Loop`) included; **inputs and returns "
        "counted** adds the input node and the return node TorchScript gives the graph and "
        "each block (torch.fx's placeholders and output are nodes already).",
        "- The paper's counts, as `004_f76f08ed96b37b97.txt` (the walkthrough of the paper in "
        "the project's seeds) quotes them: 445 nodes in torch.fx, 860 with `jit.trace`, 2614 "
        "with `jit.script`. The paper's torch and torchvision were 2021's; it does not say how "
        "it counted.",
        "",
        "**Nodes per opcode**",
        "",
        format_markdown(header, rows),
        "",
        "**ResNet-50 in three captures, next to the paper's counts**",
        "",
        format_markdown(*captures_table(results)),
        "",
        "**TorchScript's nodes by kind** (control flow: `prim::If`, `prim::Loop`, "
        "`prim::RaiseException`)",
        "",
        format_markdown(*kinds_table(results)),
        "",
        "**Layer types that cannot be traced through without help** (each tried alone, the "
        "other layers left as leaves)",
        "",
        *failures_lines(results),
        "",
        "<!-- --8<-- [end:report] -->",
        "",
    ]
    return "\n".join(lines)


def save_plot(results: Results, path: Path) -> None:
    """Bars of nodes, one per library and tracer (stacked by opcode), then TorchScript's (PNG).

    The bars lie on their side, the captures named on the left, so that the names keep a
    readable size on a phone. The paper's counts are marked on the bars they belong to:
    decomposed torch.fx (445), `jit.trace` (860) and `jit.script` (2614).
    """
    bars = [(tracer, library) for tracer in TRACERS for library in LIBRARY_NAMES]
    labels = [f"{library}\n{tracer}" for tracer, library in bars]
    labels += list(CAPTURES)
    with png_figure(path, height_px=560) as axes:
        lefts = [0] * len(bars)
        for op in OPCODES:
            widths = [results.counts[bar][op] for bar in bars]
            if any(widths):
                axes.barh(labels[: len(bars)], widths, left=lefts, label=op)
                lefts = [left + width for left, width in zip(lefts, widths)]
        script_totals = [results.torchscript[capture][0] for capture in CAPTURES]
        axes.barh(labels[len(bars) :], script_totals, color="grey", label="TorchScript")
        totals = lefts + script_totals
        for y, total in enumerate(totals):
            axes.annotate(f" {total}", (total, y), ha="left", va="center")
        paper_at = {2: PAPER_COUNTS["torch.fx"], 3: PAPER_COUNTS["torch.fx"]}
        paper_at.update({len(bars) + i: PAPER_COUNTS[c] for i, c in enumerate(CAPTURES)})
        axes.scatter(
            list(paper_at.values()), list(paper_at), marker="|", s=600, color="black", zorder=3
        )
        for y, count in paper_at.items():
            if abs(count - totals[y]) > 0.05 * count:  # far from ours: say the number
                axes.annotate(
                    f"paper:\n{count}",
                    (count, y),
                    xytext=(6, 0),
                    textcoords="offset points",
                    ha="left",
                    va="center",
                )
        axes.scatter([], [], marker="|", s=200, color="black", label="the paper's count")
        axes.set_xlim(0, max(totals + list(paper_at.values())) * 1.3)
        axes.invert_yaxis()  # the first capture on top
        axes.set_xlabel("nodes")
        axes.set_title(f"IR size of {results.name}")
        legend_below(axes, columns=2)
