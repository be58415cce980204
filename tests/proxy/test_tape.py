"""Unit tests of chapter 1's tape (`minifx/proxy/tape.py`): records, the recorder, printing."""

from __future__ import annotations

import operator

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

from minifx.proxy import (
    OPCODES,
    Proxy,
    Record,
    Tape,
    TapeRecorder,
    TraceError,
    trace_to_tape,
)
from tests.proxy.support import placeholder, walk

pytestmark = pytest.mark.ch1

# -- records hold records --------------------------------------------------------


@pytest.mark.task("1.6")
def test_records_hold_records_in_place_of_proxies():
    def fn(x, y):
        h = torch.cat([x, y[:, 1:]], dim=0)
        return torch.add(h, other=x.relu(), alpha=2), {"s": x.shape}

    tape = trace_to_tape(fn)
    leaves = [leaf for r in tape for leaf in walk((r.args, r.kwargs))]
    assert not any(isinstance(leaf, Proxy) for leaf in leaves)
    records = [leaf for leaf in leaves if isinstance(leaf, Record)]
    assert {r.name for r in records} == {"x", "y", "getitem", "cat", "relu", "add", "getattr_1"}
    assert all(r.graph is tape for r in records)


@pytest.mark.task("1.5")
def test_record_fields_and_repr():
    tape = trace_to_tape(lambda x: torch.add(x, other=x, alpha=2))
    add = tape.records[1]
    assert (add.name, add.op, add.target) == ("add", "call_function", torch.add)
    assert add.args == (tape.records[0],)
    assert add.kwargs == {"other": tape.records[0], "alpha": 2}
    assert repr(add) == "add"
    assert len(tape) == 3 and list(tape) == tape.records


# -- the tape ---------------------------------------------------------------------


@pytest.mark.task("1.1")
def test_tape_rejects_an_unknown_opcode():
    with pytest.raises(ValueError) as error:
        Tape().create_node("call_everything", torch.relu)
    assert str(error.value) == (
        f"unknown opcode 'call_everything': a record's op is one of {OPCODES}"
    )


def test_opcodes_are_torch_fx_opcodes():
    assert set(OPCODES) == {
        "placeholder",
        "get_attr",
        "call_function",
        "call_method",
        "call_module",
        "output",
    }


@pytest.mark.task("1.1")
def test_tape_names_records_uniquely_like_torch_fx():
    """Two adds, and a record asking for a name already taken: torch.fx's names."""
    tape, graph = Tape(), torch.fx.Graph()
    for recorder in (tape, graph):
        x = recorder.create_node("placeholder", "x")
        first = recorder.create_node("call_function", operator.add, (x, 1))
        second = recorder.create_node("call_function", operator.add, (first, 1))
        recorder.create_node("call_method", "relu", (second,), name="add")
    names, expected = [r.name for r in tape], [n.name for n in graph.nodes]
    assert names == expected == ["x", "add", "add_1", "add_2"], (
        f"the tape named its records {names}, torch.fx names them {expected}: take each name "
        "from the tape's Namespace (self._names.create_name), which makes it unique"
    )


@pytest.mark.task("1.1")
def test_tape_prints_tensor_arguments_compactly():
    tape = Tape()
    x = tape.create_node("placeholder", "x")
    tape.create_node("call_function", operator.add, (x, torch.zeros(2, 3)))
    tape.create_node("call_function", operator.mul, (x, torch.tensor(1.0)))
    assert str(tape).splitlines()[2:] == [
        "    %add = call_function[target=operator.add](args = (%x, <Tensor 2x3 float32>), "
        "kwargs = {})",
        "    %mul = call_function[target=operator.mul](args = (%x, <Tensor scalar float32>), "
        "kwargs = {})",
    ]


def test_trace_to_tape_on_a_module_records_forward():
    module = nn.ReLU()
    tape = trace_to_tape(module)
    assert [(r.name, r.op, r.target, r.kwargs) for r in tape][:2] == [
        # `input` is a builtin, so the placeholder's name gets a suffix.
        ("input_1", "placeholder", "input", {}),
        ("relu", "call_function", F.relu, {"inplace": False}),
    ]
    fx_nodes = torch.fx.symbolic_trace(module).graph.nodes
    assert [(r.name, r.op, r.target) for r in tape][:-1] == [
        (n.name, n.op, n.target) for n in fx_nodes
    ][:-1]


@pytest.mark.task("1.3")
def test_star_args_parameter_raises():
    def fn(x, *rest):
        return x

    with pytest.raises(TraceError, match=r"fn\(\) takes \*rest"):
        trace_to_tape(fn)


@pytest.mark.task("1.3")
def test_star_star_kwargs_parameter_raises():
    def fn(x, **options):
        return x

    with pytest.raises(TraceError, match=r"fn\(\) takes \*\*options"):
        trace_to_tape(fn)


@pytest.mark.task("1.4")
def test_placeholder_defaults_are_kept():
    def fn(x, y=3, *, scale=0.5):
        return x * y * scale

    tape = trace_to_tape(fn)
    assert [(r.name, r.args) for r in tape if r.op == "placeholder"] == [
        ("x", ()),
        ("y", (3,)),
        ("scale", (0.5,)),
    ]
    assert str(tape).splitlines()[1:4] == [
        "    %x = placeholder[target=x]",
        "    %y = placeholder[target=y](default=3)",
        "    %scale = placeholder[target=scale](default=0.5)",
    ]


@pytest.mark.task("1.4")
def test_keyword_only_parameters_are_passed_by_keyword():
    def fn(x, *, y):
        return x - y

    tape = trace_to_tape(fn)
    assert tape.records[2].args == (tape.records[0], tape.records[1])


@pytest.mark.task("1.4")
def test_retracing_starts_a_fresh_tape():
    recorder = TapeRecorder()
    first = recorder.trace(lambda x: x + 1)
    second = recorder.trace(lambda x: x + 1)
    assert first is not second
    assert [r.name for r in second] == ["x", "add", "output"]


@pytest.mark.task("1.5")
def test_tracers_are_found_inside_slices():
    x = placeholder(TapeRecorder())
    y = placeholder(TapeRecorder(), "y")
    with pytest.raises(TraceError, match="received Proxies from 2 tracers"):
        Proxy.__torch_function__(torch.Tensor.__getitem__, (Proxy,), (x, slice(y, None)))


@pytest.mark.parametrize(
    "annotation, printed",
    [
        ("typing.Optional[int]", "typing.Optional[int]"),
        ("int", "int"),
        ("torch.Tensor", "torch.Tensor"),
    ],
)
def test_annotations_print_like_torch_fx(annotation, printed):
    import typing

    def annotated(x=None):
        return x

    # Set after definition: this file's `from __future__ import annotations` would
    # otherwise turn the annotation into a string.
    annotated.__annotations__ = {"x": eval(annotation, {"typing": typing, "torch": torch})}
    line = trace_to_tape(annotated).records[0].format()
    fx_line = str(torch.fx.symbolic_trace(annotated).graph).splitlines()[1].strip()
    assert line == fx_line.replace(" [num_users=1]", "")
    assert line == f"%x : {printed} = placeholder[target=x](default=None)"


@pytest.mark.task("1.2")
def test_dict_keys_are_converted_like_values():
    tracer = TapeRecorder()
    assert tracer.create_arg({("a", 1): 2, 3.5: "b"}) == {("a", 1): 2, 3.5: "b"}
    with pytest.raises(TraceError, match="an argument of type object cannot be recorded"):
        tracer.create_arg({object(): 1})
    with pytest.raises(NotImplementedError):  # torch.fx refuses such a key too
        torch.fx.Tracer().create_arg({object(): 1})


@pytest.mark.task("1.3")
def test_trace_records_placeholders_with_defaults_and_the_output_like_torch_fx():
    def fn(x, y=3, *, scale=0.5):
        return {"pair": (x, y), "scale": scale}

    tape = trace_to_tape(fn)
    fx_nodes = torch.fx.symbolic_trace(fn).graph.nodes
    assert [(r.name, r.op, r.target) for r in tape] == [(n.name, n.op, n.target) for n in fx_nodes]
    x, y, scale, output = tape.records
    assert [x.args, y.args, scale.args] == [(), (3,), (0.5,)]
    assert output.args == ({"pair": (x, y), "scale": scale},)
