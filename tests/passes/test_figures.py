"""The committed pictures in chapters/figures/ are what `examples.figures` draws today."""

from __future__ import annotations

import sys
import types

import pytest
import torch

from examples import figures
from minifx.codegen import symbolic_trace
from minifx.graph import Graph
from minifx.passes.draw import to_mermaid

pytestmark = pytest.mark.ch5


# This test and the next draw every committed figure, so they also run chapters 6-8's
# passes (examples/ch6_figures.py fuses, ch7 rewrites, ch8 quantizes before drawing).
@pytest.mark.ch6
@pytest.mark.ch7
@pytest.mark.ch8
def test_every_committed_figure_is_current_and_none_is_orphaned():
    found = figures.problems(figures.render(figures.collect()))
    assert not found, (
        "chapters/figures/ is out of date:\n  "
        + "\n  ".join(found)
        + "\nRun `.venv/bin/python -m examples.figures` and commit the .mmd files."
    )


@pytest.mark.ch6
@pytest.mark.ch7
@pytest.mark.ch8
def test_each_figure_file_is_to_mermaid_of_its_figure():
    for name, build in figures.collect().items():
        text = (figures.FIGURES_DIR / f"{name}.mmd").read_text(encoding="utf-8")
        drawn = build()
        assert text == (drawn if isinstance(drawn, str) else to_mermaid(drawn)), name


def test_narrow_draws_names_only_in_compact_spacing():
    gm = symbolic_trace(torch.nn.ReLU())
    assert figures.narrow(gm) == to_mermaid(gm, node_label=lambda n: n.name, compact=True)
    assert '    n1["relu"]\n' in figures.narrow(gm)
    assert figures.render({"relu": lambda: figures.narrow(gm)}) == {"relu": figures.narrow(gm)}


def test_chapter_5_figures_are_discovered():
    assert "examples.ch5_figures" in figures.figure_modules()
    assert {"ch5_tiny_cnn", "ch5_residual_block"} <= set(figures.collect())


def _one_node_graph() -> Graph:
    graph = Graph()
    graph.output(graph.placeholder("x"))
    return graph


def test_check_reports_missing_stale_and_orphan_files(tmp_path):
    rendered = figures.render(
        {"fresh": _one_node_graph, "stale": _one_node_graph, "absent": _one_node_graph}
    )
    (tmp_path / "fresh.mmd").write_text(rendered["fresh"])
    (tmp_path / "stale.mmd").write_text("flowchart TD\n")
    (tmp_path / "orphan.mmd").write_text("flowchart TD\n")
    (tmp_path / "picture.png").write_bytes(b"not a figure")
    assert figures.problems(rendered, tmp_path) == [
        f"missing: {tmp_path / 'absent.mmd'}",
        f"stale: {tmp_path / 'stale.mmd'}",
        f"orphan: {tmp_path / 'orphan.mmd'} (no FIGURES entry draws it; delete it)",
    ]
    assert figures.write(rendered, tmp_path) == [tmp_path / "absent.mmd", tmp_path / "stale.mmd"]
    assert figures.problems(rendered, tmp_path) == [
        f"orphan: {tmp_path / 'orphan.mmd'} (no FIGURES entry draws it; delete it)"
    ]


def test_main_check_exits_1_when_stale(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(figures, "FIGURES_DIR", tmp_path)
    monkeypatch.setattr(figures, "collect", lambda: {"one": _one_node_graph})
    assert figures.main(["--check"]) == 1
    assert capsys.readouterr().out == f"missing: {tmp_path / 'one.mmd'}\n"
    assert figures.main([]) == 0
    assert capsys.readouterr().out == f"wrote {tmp_path / 'one.mmd'}\n"
    assert figures.main(["--check"]) == 0
    assert (tmp_path / "one.mmd").read_text() == to_mermaid(_one_node_graph())


def test_graph_modules_draw_like_their_graphs():
    gm = symbolic_trace(torch.nn.ReLU())
    assert figures.render({"relu": lambda: gm}) == {"relu": to_mermaid(gm.graph)}


@pytest.mark.parametrize(
    "declared, message",
    [
        (
            None,
            "examples.ch9_fake has no FIGURES dict; a figures module declares "
            "FIGURES = {'name': callable returning a GraphModule or Graph}.",
        ),
        (
            {"bad/name": _one_node_graph},
            "examples.ch9_fake.FIGURES['bad/name']: names are plain file "
            "names (letters, digits, _ . -) and values are callables taking no arguments.",
        ),
        (
            {"ok": "not callable"},
            "examples.ch9_fake.FIGURES['ok']: names are plain file "
            "names (letters, digits, _ . -) and values are callables taking no arguments.",
        ),
    ],
)
def test_malformed_figure_modules_are_clear_errors(monkeypatch, declared, message):
    module = types.ModuleType("examples.ch9_fake")
    if declared is not None:
        module.FIGURES = declared
    monkeypatch.setitem(sys.modules, "examples.ch9_fake", module)
    monkeypatch.setattr(figures, "figure_modules", lambda: ["examples.ch9_fake"])
    with pytest.raises(ValueError) as info:
        figures.collect()
    assert str(info.value) == message


def test_one_name_in_two_modules_is_a_clear_error(monkeypatch):
    for name in ("examples.ch8_a", "examples.ch9_b"):
        module = types.ModuleType(name)
        module.FIGURES = {"shared": _one_node_graph}
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(figures, "figure_modules", lambda: ["examples.ch8_a", "examples.ch9_b"])
    with pytest.raises(ValueError) as info:
        figures.collect()
    assert str(info.value) == (
        "figure 'shared' is declared by both examples.ch8_a and examples.ch9_b; each figure is "
        "one file in chapters/figures/, so rename one (prefix names with the chapter, e.g. 'ch5_tiny_cnn')."
    )
