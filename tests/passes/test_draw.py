"""`to_mermaid`: golden drawings, every node and use on real models, hostile names escaped."""

from __future__ import annotations

import operator
import re

import pytest
import torch
from torch import nn

from minifx.codegen import symbolic_trace
from minifx.graph import Graph
from minifx.passes.draw import describe_node, escape, to_mermaid
from tests import models

pytestmark = pytest.mark.ch5

# One statement per line: a box `nK<open>"label"<close>` or an arrow `nA --> nB`,
# optionally with a quoted label. Labels may hold no raw `"`, `|`, `<`, `>` or
# backtick (only the `<br/>` line breaks to_mermaid writes).
_BOX = re.compile(r'(n\d+)(\(\["|\[\("|\["|\[\[")([^"]*)("\]\)|"\)\]|"\]|"\]\])')
_ARROW = re.compile(r'(n\d+) -->(?:\|"([^"|]*)"\|)? (n\d+)')
_UNSAFE = re.compile(r'[<>|`"&]')


def parse(chart: str) -> tuple[dict[str, str], list[tuple[str, str, str | None]]]:
    """The boxes (id -> label) and arrows of a chart, checking every line is well formed."""
    head, *body = chart.rstrip("\n").split("\n")
    assert head == "flowchart TD" and chart.endswith("\n")
    boxes, arrows = {}, []
    for line in body:
        assert line.startswith("    "), line
        if box := _BOX.fullmatch(line[4:]):
            assert not _UNSAFE.search(box[3].replace("<br/>", "")), line
            boxes[box[1]] = box[3]
        elif arrow := _ARROW.fullmatch(line[4:]):
            assert arrow[2] is None or not _UNSAFE.search(arrow[2].replace("<br/>", "")), line
            arrows.append((arrow[1], arrow[3], arrow[2]))
        else:
            pytest.fail(f"not a Mermaid box or arrow: {line!r}")
    return boxes, arrows


class AddRelu(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.linear(x) + x).sum(dim=1)


GOLDEN_ADD_RELU = """\
flowchart TD
    n0(["x<br/>placeholder"])
    n1["linear<br/>call_module linear"]
    n2["add<br/>call_function operator.add"]
    n3["relu<br/>call_function torch.relu"]
    n4["sum_1<br/>call_method sum"]
    n5[["output<br/>output"]]
    n0 --> n1
    n1 --> n2
    n0 --> n2
    n2 --> n3
    n3 --> n4
    n4 --> n5
"""


def test_golden_small_module():
    assert to_mermaid(symbolic_trace(AddRelu())) == GOLDEN_ADD_RELU


def test_graph_and_graph_module_draw_the_same():
    gm = symbolic_trace(AddRelu())
    assert to_mermaid(gm.graph) == to_mermaid(gm)


def test_get_attr_is_a_cylinder_and_nested_uses_are_edges():
    graph = Graph()
    x = graph.placeholder("x")
    w = graph.get_attr("weight")
    cat = graph.call_function(torch.cat, ([x, w],), {"dim": 0})
    out = graph.call_function(operator.getitem, ({"a": cat, "b": x}, "a"))
    graph.output(out)
    assert (
        to_mermaid(graph)
        == """\
flowchart TD
    n0(["x<br/>placeholder"])
    n1[("weight<br/>get_attr weight")]
    n2["cat<br/>call_function torch.cat"]
    n3["getitem<br/>call_function operator.getitem"]
    n4[["output<br/>output"]]
    n0 --> n2
    n1 --> n2
    n2 --> n3
    n0 --> n3
    n3 --> n4
"""
    )


def test_a_value_used_twice_by_one_node_is_one_edge():
    graph = Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_function(operator.mul, (x, x)))
    assert to_mermaid(graph).count("n0 --> n1") == 1


@pytest.mark.parametrize(
    "make",
    [
        models.ResNet18,
        models.ResNet50,
        models.MobileNetish,
        models.WithTransformerEncoder,
        models.MLP,
    ],
    ids=lambda m: m.__name__,
)
def test_every_node_and_every_use_is_drawn(make):
    graph = symbolic_trace(make()).graph
    boxes, arrows = parse(to_mermaid(graph))
    nodes = list(graph.nodes)
    ids = {node: f"n{i}" for i, node in enumerate(nodes)}
    assert boxes == {ids[n]: escape(describe_node(n)) for n in nodes}
    expected = [(ids[used], ids[user], None) for user in nodes for used in user.all_input_nodes]
    assert arrows == expected
    assert len(set(arrows)) == sum(len(n.users) for n in nodes)


def test_output_is_deterministic():
    assert to_mermaid(symbolic_trace(models.ResNet18())) == to_mermaid(
        symbolic_trace(models.ResNet18())
    )


HOSTILE = [
    'a"b',
    "x|y",
    "<script>alert(1)</script>",
    "#quot;",
    "`md`",
    "a&lt;b",
    "end",
    "o",
    "line\nbreak",
    "--> n0",
    "[box]",
    "(round)",
    "{rhombus}",
    "%% comment",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_targets_and_labels_stay_inside_their_box(text):
    graph = Graph()
    x = graph.placeholder("x")
    module = graph.call_module(text, (x,))
    graph.output(module)
    chart = to_mermaid(graph, edge_label=lambda used, user: text)
    boxes, arrows = parse(chart)
    assert set(boxes) == {"n0", "n1", "n2"}
    assert [(a, b) for a, b, _ in arrows] == [("n0", "n1"), ("n1", "n2")]
    assert boxes["n1"].endswith("call_module " + escape(text))


@pytest.mark.parametrize("name", ["end", "graph", "subgraph", "style", "click", "class", "o", "x"])
def test_mermaid_keywords_as_node_names_never_become_ids(name):
    graph = Graph()
    node = graph.placeholder(name)
    graph.output(node)
    boxes, _ = parse(to_mermaid(graph))
    assert boxes == {"n0": f"{node.name}<br/>placeholder", "n1": "output<br/>output"}


@pytest.mark.parametrize(
    "text, escaped",
    [
        ('say "hi"', "say #34;hi#34;"),
        ("a|b", "a#124;b"),
        ("<b>", "#60;b#62;"),
        ("#35;", "#35;35;"),
        ("`x`", "#96;x#96;"),
        ("a&b", "a#38;b"),
        ("one\ntwo", "one<br/>two"),
        ("one\r\ntwo", "one<br/>two"),
        ("layer1.0.conv1 [3, 8]", "layer1.0.conv1 [3, 8]"),
        # Markdown emphasis: `__getitem__` would be drawn as a bold "getitem".
        ("call_method __getitem__", r"call_method \_\_getitem\_\_"),
        ("get_attr _scale", r"get_attr \_scale"),
        ("a*b*c", r"a\*b\*c"),
    ],
)
def test_escape(text, escaped):
    assert escape(text) == escaped


def test_custom_labels_and_direction():
    gm = symbolic_trace(AddRelu())
    chart = to_mermaid(
        gm,
        node_label=lambda n: n.name.upper(),
        edge_label=lambda used, user: f"{used.name}->{user.name}" if user.op == "output" else None,
        direction="LR",
    )
    lines = chart.splitlines()
    assert lines[0] == "flowchart LR"
    assert lines[1] == '    n0(["X"])'
    assert lines[-1] == '    n4 -->|"sum_1-#62;output"| n5'
    assert lines[-2] == "    n3 --> n4"


def test_a_torch_fx_graph_module_is_a_clear_error():
    with pytest.raises(TypeError) as info:
        to_mermaid(torch.fx.symbolic_trace(AddRelu()))
    assert str(info.value) == (
        "to_mermaid: expected a minifx Graph or GraphModule, got AddRelu whose .graph is a "
        "torch.fx.graph.Graph. Trace it with minifx first: to_mermaid(minifx.symbolic_trace(module))."
    )


def test_a_module_is_a_clear_error():
    with pytest.raises(TypeError) as info:
        to_mermaid(AddRelu())
    assert str(info.value) == (
        "to_mermaid: expected a minifx Graph or GraphModule, got AddRelu. "
        "Trace it with minifx first: to_mermaid(minifx.symbolic_trace(module))."
    )


def test_unknown_direction_is_a_clear_error():
    with pytest.raises(ValueError) as info:
        to_mermaid(Graph(), direction="UP")
    assert str(info.value) == (
        "to_mermaid: unknown direction 'UP'. Mermaid flowcharts go TD, TB, LR, BT, RL "
        "(TD is top-down, LR left to right)."
    )


def test_compact_puts_mermaid_spacing_before_the_same_chart():
    gm = symbolic_trace(AddRelu())
    names = to_mermaid(gm, node_label=lambda n: n.name)
    assert to_mermaid(gm, node_label=lambda n: n.name, compact=True) == (
        "---\nconfig:\n  flowchart:\n    nodeSpacing: 20\n    padding: 8\n---\n" + names
    )
    assert to_mermaid(gm, compact=False) == GOLDEN_ADD_RELU
