"""Grader for exercise 5.2: draw the shapes.

Two oracles: golden labels and drawings of small models, written out; and, on real
models, the values an Interpreter computes (not the metadata): each box of the
drawing must be minifx's default box (`to_mermaid` without a `node_label`, whose
text is not the answer) with one more line, and that line must describe the value
the node computed, shape, dtype and structure, read back from the text.
"""

from __future__ import annotations

import operator
import re

import pytest
import torch
from torch import nn

from minifx.codegen import symbolic_trace
from minifx.interpreter import Interpreter
from minifx.passes.draw import to_mermaid
from minifx.passes.shape_prop import ShapeProp, TensorMetadata
from tests.graders.support import (
    call_graded,
    describe_error,
    explain,
    explain_texts,
    plain,
    stub_hint,
)
from tests.models import MLP, EncoderBlock, MobileNetish, ResNet18

pytestmark = pytest.mark.ch5

SEE = "chapters/05-shape-prop.md#exercise-52-draw-the-shapes"


@pytest.fixture
def ex(impl):
    return impl.load("ch5_draw_shapes")


# --- running student code --------------------------------------------------------


def _run(what: str, fn, *args):
    """`fn(*args)`, or a failed test that names the student's line."""
    got, raised = call_graded(fn, *args)
    if raised is not None:
        pytest.fail(explain(what, describe_error(raised), stub_hint(raised), SEE), pytrace=False)
    return plain(got, "a str", what, SEE)


def _fail(expected: str, got: str, hint: str) -> None:
    pytest.fail(explain(expected, got, hint, SEE), pytrace=False)


# --- describe_tensor and describe_meta ----------------------------------------------


def meta(shape: tuple, dtype: torch.dtype) -> TensorMetadata:
    return TensorMetadata(torch.Size(shape), dtype, False, (), torch.contiguous_format, False, {})


_FORMAT = "'[4, 32] float32': the shape as a list of ints, a space, the dtype without 'torch.'."


def _tensor_hint(got) -> str:
    """The hint for a tensor described as `got`, which is not the right text."""
    if not isinstance(got, str):
        return "return a str, such as '[4, 32] float32'."
    if "contiguous_format" in got or ", False, " in got:
        return (
            "a TensorMetadata is a NamedTuple, so a tuple too: test it before the tuple case "
            "and describe it with describe_tensor."
        )
    if re.search(r"\btorch\.[a-z]+\d*$", got):
        return "write the dtype without its 'torch.' prefix: str(dtype).removeprefix('torch.')."
    if got.startswith(("(", "torch.Size")):
        return "write the shape as a list, list(meta.shape): [4, 32], not (4, 32) or torch.Size."
    return _FORMAT


@pytest.mark.parametrize(
    "shape, dtype, want",
    [
        ((4, 32), torch.float32, "[4, 32] float32"),
        ((), torch.float16, "[] float16"),
        ((2, 0, 3), torch.bool, "[2, 0, 3] bool"),
        ((1, 8, 4, 4), torch.quint8, "[1, 8, 4, 4] quint8"),
    ],
)
def test_describe_tensor(ex, shape, dtype, want):
    what = f"describe_tensor of a {dtype} tensor of shape {shape}: {want!r}"
    got = _run(what, ex.describe_tensor, meta(shape, dtype))
    if got != want:
        _fail(what, repr(got), _tensor_hint(got))


_A, _B = meta((3, 5), torch.float32), meta((2,), torch.int64)
STRUCTURES = {  # name -> metadata, its description, the hint if it comes out wrong
    "a TensorMetadata": (_A, "[3, 5] float32", None),
    "a tuple": ((_A, _B), "([3, 5] float32, [2] int64)", "a tuple as (a, b), each item described."),
    "a list": (
        [_A, _B],
        "[[3, 5] float32, [2] int64]",
        "a list as [a, b] (a tuple as (a, b)): test list and tuple apart.",
    ),
    "a dict": (
        {"rows": 6, "mask": _B},
        "{'rows': 6, 'mask': [2] int64}",
        "a dict as {'key': a}: its key by repr, then ': ', then the item described.",
    ),
    "other leaves": (
        (_A, None, "mean", 2.5),
        "([3, 5] float32, None, 'mean', 2.5)",
        "any other leaf by its repr: None, 'mean' (with its quotes), 2.5.",
    ),
    "nested": (
        [_A, {"rows": 6, "halves": (_B, _B)}],
        "[[3, 5] float32, {'rows': 6, 'halves': ([2] int64, [2] int64)}]",
        "describe each item the same way, all the way down: describe_meta calls itself.",
    ),
}


@pytest.mark.parametrize("case", STRUCTURES)
def test_describe_meta(ex, case):
    value, want, hint = STRUCTURES[case]
    what = f"describe_meta of {case}: {want!r}"
    got = _run(what, ex.describe_meta, value)
    if got != want:  # the hint of the simplest case that goes wrong
        _fail(what, repr(got), _structure_hint(ex) or hint)


# --- describe_value and the golden drawings ----------------------------------------


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, stride=2, padding=1)

    def forward(self, x):
        y = self.conv(x)
        a, b = y.chunk(2, dim=1)
        return (a * b).flatten(1), y.size(0)


class Structures(nn.Module):
    """A tuple of tensors, a Size, and an output with a dict, a list, an int and a str."""

    def forward(self, x):
        parts = x.split(2, dim=1)
        return {"first": parts[0], "rest": [parts[1], x.size(0), "mean"]}, x.shape[1]


def propagated(model: nn.Module, *inputs: torch.Tensor):
    gm = symbolic_trace(model)
    ShapeProp(gm).propagate(*inputs)
    return gm


VALUES = {  # node -> describe_value of it, for Block on a (2, 3, 8, 8) input
    "x": "[2, 3, 8, 8] float32",
    "conv": "[2, 4, 4, 4] float32",
    "chunk": "([2, 2, 4, 4] float32, [2, 2, 4, 4] float32)",
    "getitem": "[2, 2, 4, 4] float32",
    "getitem_1": "[2, 2, 4, 4] float32",
    "mul": "[2, 2, 4, 4] float32",
    "flatten": "[2, 32] float32",
    "size": "int",
    "output": "([2, 32] float32, 2)",
}


def test_describe_value(ex):
    gm = propagated(Block(), torch.randn(2, 3, 8, 8))
    got = {
        n.name: _run(f"describe_value(%{n.name}): {VALUES[n.name]!r}", ex.describe_value, n)
        for n in gm.graph.nodes
    }
    wrong = [name for name in VALUES if got[name] != VALUES[name]]
    if not wrong:
        return
    name = wrong[0]
    if name == "size":
        hint = (
            "a value without tensors (no 'tensor_meta') is drawn as the name of its type: "
            "node.meta['type'].__name__, 'int'."
        )
    elif name in ("chunk", "output") and not set(wrong) - {"chunk", "output"}:
        hint = "describe the tuple with describe_meta: '(a, b)', each item described."
    else:
        hint = _tensor_hint(got[name])
    _fail(
        f"describe_value(%{name}) of the conv, chunk, mul block: {VALUES[name]!r}",
        repr(got[name]),
        hint,
    )


GOLDEN_BLOCK = """\
flowchart TD
    n0(["x<br/>placeholder<br/>[2, 3, 8, 8] float32"])
    n1["conv<br/>call_module conv<br/>[2, 4, 4, 4] float32"]
    n2["chunk<br/>call_method chunk<br/>([2, 2, 4, 4] float32, [2, 2, 4, 4] float32)"]
    n3["getitem<br/>call_function operator.getitem<br/>[2, 2, 4, 4] float32"]
    n4["getitem_1<br/>call_function operator.getitem<br/>[2, 2, 4, 4] float32"]
    n5["mul<br/>call_function operator.mul<br/>[2, 2, 4, 4] float32"]
    n6["flatten<br/>call_method flatten<br/>[2, 32] float32"]
    n7["size<br/>call_method size<br/>int"]
    n8[["output<br/>output<br/>([2, 32] float32, 2)"]]
    n0 --> n1
    n1 --> n2
    n2 --> n3
    n2 --> n4
    n3 --> n5
    n4 --> n5
    n5 --> n6
    n1 --> n7
    n6 --> n8
    n7 --> n8
"""

GOLDEN_STRUCTURES = """\
flowchart TD
    n0(["x<br/>placeholder<br/>[2, 4] float32"])
    n1["split<br/>call_method split<br/>([2, 2] float32, [2, 2] float32)"]
    n2["getitem<br/>call_function operator.getitem<br/>[2, 2] float32"]
    n3["getitem_1<br/>call_function operator.getitem<br/>[2, 2] float32"]
    n4["size<br/>call_method size<br/>int"]
    n5["getattr_1<br/>call_function builtins.getattr<br/>Size"]
    n6["getitem_2<br/>call_function operator.getitem<br/>int"]
    n7[["output<br/>output<br/>({'first': [2, 2] float32, 'rest': [[2, 2] float32, 2, 'mean']}, 4)"]]
    n0 --> n1
    n1 --> n2
    n1 --> n3
    n0 --> n4
    n0 --> n5
    n5 --> n6
    n2 --> n7
    n3 --> n7
    n4 --> n7
    n6 --> n7
"""

GOLDEN = {  # name -> model, input shape, drawing
    "a conv, chunk, mul block": (Block, (2, 3, 8, 8), GOLDEN_BLOCK),
    "a dict and list output": (Structures, (2, 4), GOLDEN_STRUCTURES),
}

_BOX = re.compile(r'^(n\d+)(\(\["|\["|\[\["|\[\(")(.*)("\]\)|"\]|"\]\]|"\)\])$')


def _boxes(drawing: str) -> dict[str, str]:
    """Mermaid node id -> the text of its box, from a drawing's lines."""
    return {m[1]: m[3] for line in drawing.splitlines() if (m := _BOX.match(line.strip()))}


def _value_lines(default: str, drawing: str) -> tuple[dict[str, str], str | None]:
    """The value line of each box of `drawing`, the default drawing's boxes with one more line;
    or a hint when the drawing is not made that way."""
    if not isinstance(drawing, str):
        return {}, "return the Mermaid text, a str: to_mermaid(gm, node_label=...)."
    plain, got = _boxes(default), _boxes(drawing)
    arrows = [line for line in default.splitlines() if "-->" in line]
    if (
        got.keys() != plain.keys()
        or [line for line in drawing.splitlines() if "-->" in line] != arrows
    ):
        return {}, (
            "build the drawing with to_mermaid(gm, node_label=...): one box per node, "
            "the arrows as to_mermaid draws them."
        )
    values = {}
    for node_id, text in got.items():
        base = plain[node_id]
        if text.startswith(base + "<br/>"):  # the value's text, with Mermaid's #60; read back as <
            values[node_id] = re.sub(r"#(\d+);", lambda m: chr(int(m[1])), text[len(base) + 5 :])
        elif text.endswith("<br/>" + base):
            return {}, (
                "the value goes under the default label: describe_node(node), a new line, "
                "then describe_value(node)."
            )
        elif text.startswith(base + " "):
            return {}, (
                "put the value on a new line: f'{describe_node(node)}\\n{describe_value(node)}' "
                "(to_mermaid draws '\\n' as <br/>)."
            )
        elif text == base:
            return {}, (
                "add the value: the label is describe_node(node), a new line, then "
                "describe_value(node)."
            )
        else:
            return {}, (
                "keep the default label as it is, describe_node(node), and add a line "
                "with describe_value(node)."
            )
    return values, None


def _drawing_hint(ex, default: str, want: str, got) -> str:
    values, hint = _value_lines(default, got)
    if hint:
        return hint
    wanted, _ = _value_lines(default, want)
    node_id = next((i for i in wanted if values[i] != wanted[i]), None)
    if node_id is None:
        return "draw it with to_mermaid(gm, node_label=...), nothing more."
    want_value, got_value = wanted[node_id], values[node_id]
    if want_value.startswith("[") and want_value.endswith(("float32", "int64")):
        return _tensor_hint(got_value)
    if got_value.startswith("<class "):
        return (
            "a value without tensors is drawn as the name of its type: node.meta['type'].__name__."
        )
    return (
        _structure_hint(ex)
        or f"box {node_id}'s value line reads {want_value!r}: describe_value(node)."
    )


def _structure_hint(ex) -> str | None:
    """The hint of the first describe_meta case that the student's code gets wrong, if any."""
    for value, want, hint in STRUCTURES.values():
        got, _ = call_graded(ex.describe_meta, value)
        if got != want:
            if hint is None:  # one TensorMetadata
                hint = _tensor_hint(got)
                return (
                    hint
                    if hint != _FORMAT
                    else (
                        "describe a TensorMetadata with describe_tensor "
                        "(test it before the tuple case)."
                    )
                )
            return hint
    return None


@pytest.mark.parametrize("case", GOLDEN)
def test_golden_drawing(ex, case):
    model, shape, want = GOLDEN[case]
    gm = propagated(model(), torch.randn(shape))
    got = _run(f"draw_shapes of {case}:\n{want}", ex.draw_shapes, gm)
    if got != want:
        pytest.fail(
            explain_texts(
                f"draw_shapes of {case}",
                want,
                str(got),
                _drawing_hint(ex, to_mermaid(gm), want, got),
                SEE,
                kind="drawing",
            ),
            pytrace=False,
        )


# --- real models: each box against the value the node computed -----------------------


class Values(Interpreter):
    """The value each node computes, by name."""

    def __init__(self, gm: nn.Module) -> None:
        super().__init__(gm)
        self.values: dict[str, object] = {}

    def run_node(self, n):
        self.values[n.name] = value = super().run_node(n)
        return value


def _items(text: str) -> list[str]:
    """`text` split at the commas outside brackets and quotes."""
    items, depth, quote, start = [], 0, None, 0
    for i, c in enumerate(text):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    return items + [text[start:].strip()] if text.strip() else items


def _has_tensor(value) -> bool:
    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, (tuple, list)):
        return any(_has_tensor(v) for v in value)
    return isinstance(value, dict) and any(_has_tensor(v) for v in value.values())


_TENSOR = re.compile(r"\[(\d+(?:, \d+)*)?\] (\w+)")


def _describes(text: str, value, top: bool = True) -> bool:
    """Whether `text` reads as a description of `value`, checked against the value itself."""
    if top and not _has_tensor(value):
        return text == type(value).__name__
    if isinstance(value, torch.Tensor):
        m = _TENSOR.fullmatch(text)
        return (
            bool(m)
            and [int(d) for d in (m[1] or "").split(", ") if d] == list(value.shape)
            and getattr(torch, m[2], None) is value.dtype
            and str(value.dtype) == f"torch.{m[2]}"
        )
    if isinstance(value, tuple):  # a torch.Size inside a structure too, as ShapeProp keeps it
        inner = text[1:-1] if text[:1] + text[-1:] == "()" else None
        return (
            inner is not None
            and len(_items(inner)) == len(value)
            and all(_describes(t, v, False) for t, v in zip(_items(inner), value))
        )
    if isinstance(value, list):
        inner = text[1:-1] if text[:1] + text[-1:] == "[]" else None
        return (
            inner is not None
            and len(_items(inner)) == len(value)
            and all(_describes(t, v, False) for t, v in zip(_items(inner), value))
        )
    if isinstance(value, dict):
        inner = text[1:-1] if text[:1] + text[-1:] == "{}" else None
        pairs = _items(inner) if inner is not None else []
        return (
            inner is not None
            and len(pairs) == len(value)
            and all(
                pair.startswith(f"{key!r}: ") and _describes(pair[len(f"{key!r}: ") :], v, False)
                for pair, (key, v) in zip(pairs, value.items())
            )
        )
    return text == repr(value)


def _what_it_is(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"a {str(value.dtype)} tensor of shape {tuple(value.shape)}"
    if not _has_tensor(value):
        return f"a {type(value).__name__} (no tensors)"
    return f"a {type(value).__name__} holding tensors"


MODELS = {
    "resnet18": (ResNet18, (1, 3, 32, 32)),
    "mobilenetish": (MobileNetish, (2, 3, 16, 16)),
    "encoder_block": (EncoderBlock, (2, 5, 32)),
    "mlp": (MLP, (4, 32)),
}


@pytest.mark.parametrize("name", MODELS)
def test_labels_on_real_models(ex, name, device):
    factory, shape = MODELS[name]
    torch.manual_seed(0)
    gm = symbolic_trace(factory().to(device).eval())
    x = torch.randn(shape, device=device)
    ShapeProp(gm).propagate(x)
    run = Values(gm)
    run.run(x)
    default = to_mermaid(gm)
    got = _run(
        f"draw_shapes of {name}: to_mermaid's default boxes, each with a line for its value",
        ex.draw_shapes,
        gm,
    )
    values, hint = _value_lines(default, got)
    if hint:
        pytest.fail(
            explain_texts(
                f"draw_shapes of {name} on {device}: to_mermaid(gm)'s boxes, each "
                "with one more line",
                default,
                str(got),
                hint,
                SEE,
                kind="drawing",
            ),
            pytrace=False,
        )
    for node_id, node in zip(values, gm.graph.nodes):
        value = run.values[node.name]
        if not _describes(values[node_id], value):
            text = values[node_id]
            if not _has_tensor(value):
                hint = (
                    "a value without tensors is drawn as the name of its type: "
                    "node.meta['type'].__name__ ('int', 'Size')."
                )
            elif isinstance(value, torch.Tensor) and _TENSOR.fullmatch(text) is None:
                hint = _tensor_hint(text)
            else:
                hint = _structure_hint(ex) or (
                    "describe what ShapeProp recorded: shape and dtype of each tensor, the same "
                    "structure for tuples/lists/dicts, the type's name for a value without tensors."
                )
            _fail(
                f"the box of %{node.name} in the drawing of {name} on {device} describes its value, "
                f"{_what_it_is(value)}",
                f"its last line reads {text!r}",
                hint,
            )


# --- no metadata -------------------------------------------------------------------


MESSAGE = (
    "draw_shapes: node %{} has no shape metadata (node.meta['type'] is missing): "
    "run ShapeProp(gm).propagate(*example_inputs) before drawing."
)


def _missing_metadata(ex, gm, name: str, hint: str) -> None:
    want = MESSAGE.format(name)
    what = f"ValueError({want!r})"
    got, raised = call_graded(ex.draw_shapes, gm)
    if raised is None:
        _fail(what, f"a drawing:\n{got}", hint)
    if isinstance(raised, NotImplementedError) or not isinstance(raised, ValueError):
        _fail(
            what,
            describe_error(raised),
            stub_hint(
                raised,
                otherwise="check 'type' in node.meta before reading the metadata; raise "
                "missing_metadata(node).",
            ),
        )
    if str(raised) != want:
        _fail(
            what,
            repr(str(raised)),
            f"raise missing_metadata(node) for %{name}, the first node without metadata.",
        )


def test_drawing_without_shape_prop_is_a_clear_error(ex):
    _missing_metadata(
        ex,
        symbolic_trace(Block()),
        "x",
        "raise missing_metadata(node) when 'type' is not in node.meta: an empty or "
        "made-up label would hide that ShapeProp never ran.",
    )


def test_a_node_added_after_shape_prop_is_named(ex):
    gm = propagated(Block(), torch.randn(2, 3, 8, 8))
    mul = next(n for n in gm.graph.nodes if n.name == "mul")
    with gm.graph.inserting_after(mul):
        doubled = gm.graph.call_function(operator.add, (mul, mul))
    mul.replace_all_uses_with(doubled, delete_user_cb=lambda user: user is not doubled)
    _missing_metadata(
        ex,
        gm,
        "add",
        "check every node, not only the first one: %add was inserted "
        "after ShapeProp ran, so it has no node.meta['type'].",
    )
