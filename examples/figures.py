"""The book's graph pictures: every `examples/ch*_figures.py`, drawn to `chapters/figures/`.

A chapter that shows graphs has a module `examples/chN_figures.py` with a dict
`FIGURES = {"name": callable}`; each callable takes no arguments and returns the
GraphModule or Graph to draw, or the Mermaid text of a graph it drew itself with
`to_mermaid`'s options (a wide graph drawn to fit a phone: names only, `compact=True`).
This script writes each one, through `minifx.passes.draw.to_mermaid`, to
`chapters/figures/<name>.mmd`, which a page shows with

    ```mermaid
    --8<-- "chapters/figures/<name>.mmd"
    ```

Usage:

    python -m examples.figures           # (re)write every figure
    python -m examples.figures --check   # exit 1 if a file is missing, stale or orphaned

`tests/passes/test_figures.py` runs the same check, so a committed picture
always matches the code that draws it.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from pathlib import Path
from typing import Any, Callable

from minifx.passes.draw import to_mermaid

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
FIGURES_DIR = ROOT / "chapters" / "figures"
# A figure's name becomes a file name and a snippet path: keep it plain.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def figure_modules() -> list[str]:
    """The modules that declare figures, `examples.ch5_figures`, ..., sorted."""
    return [f"examples.{path.stem}" for path in sorted(EXAMPLES.glob("ch*_figures.py"))]


def collect() -> dict[str, Callable[[], Any]]:
    """Every figure of every chapter: name -> the callable that builds its graph.

    Raises:
        ValueError: a module has no `FIGURES` dict, a name is not a plain file
            name, or two modules declare the same name.
    """
    figures: dict[str, Callable[[], Any]] = {}
    owners: dict[str, str] = {}
    for module_name in figure_modules():
        for name, build in _figures_of(module_name).items():
            if name in figures:
                raise ValueError(
                    f"figure {name!r} is declared by both {owners[name]} and {module_name}; "
                    "each figure is one file in chapters/figures/, so rename one (prefix "
                    "names with the chapter, e.g. 'ch5_tiny_cnn')."
                )
            figures[name], owners[name] = build, module_name
    return figures


def _figures_of(module_name: str) -> dict[str, Callable[[], Any]]:
    declared = getattr(importlib.import_module(module_name), "FIGURES", None)
    if not isinstance(declared, dict):
        raise ValueError(
            f"{module_name} has no FIGURES dict; a figures module declares "
            "FIGURES = {'name': callable returning a GraphModule or Graph}."
        )
    for name, build in declared.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name) or not callable(build):
            raise ValueError(
                f"{module_name}.FIGURES[{name!r}]: names are plain file names (letters, "
                "digits, _ . -) and values are callables taking no arguments."
            )
    return declared


def render(figures: dict[str, Callable[[], Any]]) -> dict[str, str]:
    """The text of each figure's `.mmd` file, by name."""
    return {name: draw(build()) for name, build in sorted(figures.items())}


def narrow(gm_or_graph: Any) -> str:
    """A graph drawn to fit a phone's screen at a readable size: each box holds only
    its node's name (its outline still tells its opcode), and boxes sit closer.

    For a graph whose branches stand side by side: drawn with `to_mermaid`'s default
    labels, three branches of `call_function operator.mul` boxes are about 1,150 px
    wide, and a 360-px phone's 328-px column would shrink their text to 4.6 px.
    """
    return to_mermaid(gm_or_graph, node_label=lambda node: node.name, compact=True)


def draw(figure: Any) -> str:
    """A figure's Mermaid text: `to_mermaid` of a Graph or GraphModule, with its
    defaults; a figure that drew itself (a `str`) is its own text."""
    return figure if isinstance(figure, str) else to_mermaid(figure)


def problems(rendered: dict[str, str], directory: Path | None = None) -> list[str]:
    """What differs between `rendered` and the `.mmd` files in `directory`, one line each.

    `directory` defaults to `FIGURES_DIR`, `chapters/figures/`.
    """
    directory = directory or FIGURES_DIR
    found = []
    for name, text in rendered.items():
        path = directory / f"{name}.mmd"
        if not path.is_file():
            found.append(f"missing: {_shown(path)}")
        elif path.read_text(encoding="utf-8") != text:
            found.append(f"stale: {_shown(path)}")
    for path in sorted(directory.glob("*.mmd")):
        if path.stem not in rendered:
            found.append(f"orphan: {_shown(path)} (no FIGURES entry draws it; delete it)")
    return found


def write(rendered: dict[str, str], directory: Path | None = None) -> list[Path]:
    """Write each figure whose file is missing or different; return the paths written."""
    directory = directory or FIGURES_DIR
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in rendered.items():
        path = directory / f"{name}.mmd"
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m examples.figures", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 listing missing, stale and orphaned files",
    )
    args = parser.parse_args(argv)
    rendered = render(collect())
    if args.check:
        found = problems(rendered)
        for line in found:
            print(line)
        if found:
            print("run `python -m examples.figures` to regenerate", file=sys.stderr)
        return 1 if found else 0
    for path in write(rendered):
        print(f"wrote {_shown(path)}")
    for line in problems(rendered):  # only orphans are left once everything is written
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
