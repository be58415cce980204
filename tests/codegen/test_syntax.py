"""`minifx.codegen.syntax`: how generated code spells what a graph holds, with hostile
input: valid code or a clear error, never executed text.

Placeholder targets must be parameter names; `get_attr`, `call_module` and
`call_method` targets that are not names are reached with `getattr`; keyword keys that
are not identifiers (or that NFKC normalisation would read as another name) are passed
with `**{...}`; `str` subclasses are written as plain strings; negative numbers are
bracketed; torch constants are written as torch.fx writes them. Graphs are built by
hand (tests/codegen/hostile.py), as in test_safety.py, which says how payloads are
caught; where torch.fx behaves differently the test says so.
"""

from __future__ import annotations

import enum
import keyword
import math
import operator
import re
import uuid
from pathlib import Path

import pytest
import torch
import torch.fx

import minifx
import minifx.codegen
from minifx.codegen import GraphModule, python_code
from minifx.graph import Graph
from minifx.graph.tracer import PytreeInfo
from tests.codegen.hostile import (
    EvilStr,
    assert_inert,
    minifx_module,
    payloads,
    record,
    seen,
    torch_fx_code,
)

pytestmark = pytest.mark.ch3


# -- placeholder targets --------------------------------------------------------------


@pytest.mark.parametrize(
    "target", ["a; import os", "class", "1x", "x y", "", "a=1", "x:int", "*", "***x", "€", "None"]
)
def test_a_placeholder_target_that_is_no_parameter_name_is_a_value_error(target):
    graph = Graph()
    graph.output(graph.placeholder(target))
    with pytest.raises(ValueError) as info:
        GraphModule(torch.nn.Module(), graph)
    message = str(info.value)
    assert message.startswith(
        f"python_code: placeholder %{graph.find_nodes(op='placeholder')[0].name} "
        f"has target {target!r}, which is not a valid Python parameter name"
    )
    assert "How to fix: give the placeholder an identifier as its target" in message
    # torch.fx pastes the target into `def forward(...)` and fails to compile (or
    # compiles something else); minifx refuses it before writing any code.


def test_a_parameter_named_with_any_identifier_is_written_as_torch_fx_writes_it():
    def f(é, λ, *ärgs, **kwärgs):
        return é + λ

    want = torch.fx.symbolic_trace(f)
    got = minifx.codegen.symbolic_trace(f)
    assert got.code == want.code
    assert got(torch.tensor(1), torch.tensor(2)) == 3


def test_a_placeholder_value_error_names_the_placeholder_exactly():
    graph = Graph()
    graph.output(graph.placeholder("class"))
    with pytest.raises(ValueError) as info:
        python_code(graph)
    assert str(info.value) == (
        "python_code: placeholder %class_1 has target 'class', which is not a valid Python "
        "parameter name, so it cannot appear in `def forward(...)`. How to fix: give the "
        "placeholder an identifier as its target (optionally with a leading * or **), for "
        "example graph.placeholder('x')."
    )


@pytest.mark.parametrize(
    "target", ["input", "torch", "getattr", "inf", "device", "print", "F", "fx_pytree", "None_"]
)
def test_a_placeholder_named_like_a_builtin_or_global_still_reaches_the_real_one(target):
    def build(g):
        x = g.placeholder(target)
        big = g.call_function(torch.add, (x, math.inf))  # needs torch and inf
        row = g.call_function(getattr, (big, "shape"))  # the builtin getattr
        on = g.call_function(torch.ones, (1,), {"device": torch.device("cpu")})
        g.output((big, row, on))

    gm = minifx_module(build)
    big, shape, ones = gm(torch.tensor([1.0, 2.0]))
    assert big.tolist() == [math.inf, math.inf] and shape == (2,) and ones.tolist() == [1.0]
    assert gm.code.startswith(f"\n\n\ndef forward(self, {target}):\n")
    assert_inert(gm.code)
    if target == "torch":  # torch.fx's code calls the argument: `torch.add(torch_1, inf)`
        assert "torch.add(torch_1, inf)" in torch_fx_code(build)


def test_a_first_placeholder_named_self_is_the_module_as_in_torch_fx():
    for library_graph, library_module in (
        (Graph, GraphModule),
        (torch.fx.Graph, torch.fx.GraphModule),
    ):
        graph = library_graph()
        me, x = graph.placeholder("self"), graph.placeholder("x")
        graph.output((me, x))
        gm = library_module(torch.nn.Module(), graph)
        assert gm(1)[0] is gm and gm(1)[1] == 1


def test_a_later_placeholder_named_self_is_a_value_error():
    graph = Graph()
    graph.output((graph.placeholder("x"), graph.placeholder("self")))
    with pytest.raises(ValueError, match="self"):
        GraphModule(torch.nn.Module(), graph)


@pytest.mark.parametrize("kind", ["payload", "keyword", "space"])
def test_pytree_argument_names_are_checked_like_placeholder_targets(kind):
    marker = Path("/tmp") / f"pwned_{uuid.uuid4().hex}"  # the payload runs at construction
    name = {"payload": f"d=open('{marker}','w')", "keyword": "class", "space": "a b"}[kind]
    graph = Graph()
    graph.output(1)  # no placeholders: only the signature names the arguments
    graph.pytree_info = PytreeInfo([name], torch.utils._pytree.tree_flatten([])[1], None)
    try:
        with pytest.raises(ValueError, match=re.escape(repr(name))):
            GraphModule(torch.nn.Module(), graph)
    finally:
        created = marker.exists()
        marker.unlink(missing_ok=True)
    assert not created, f"a payload ran: {marker} was created"


# -- get_attr and call_module targets ----------------------------------------------------


def attribute_targets(marker: Path) -> dict[str, str]:
    return {
        "keyword": "class",
        "digit": "0",
        "quote": 'a"b',
        "quotes": "a'b\"c",
        "backslash": "a\\b",
        "newline": "a\nb",
        "unicode": "häßlich",
        "space": "a b",
        "paren": "x)+(1",
        **payloads(marker),
    }


@pytest.fixture(
    params=[
        "keyword",
        "digit",
        "quote",
        "quotes",
        "backslash",
        "newline",
        "unicode",
        "space",
        "paren",
        "call",
        "double-quote",
        "single-quote",
        "backslash-quote",
        "newline-statement",
    ]
)
def attribute_target(request, marker) -> str:
    return attribute_targets(marker)[request.param]


def test_a_hostile_get_attr_target_is_reached_with_getattr_and_never_run(attribute_target):
    root = torch.nn.Module()
    setattr(root, attribute_target, torch.nn.Parameter(torch.tensor([7.0])))
    gm = minifx_module(
        lambda g: g.output(
            g.call_function(operator.add, (g.placeholder("x"), g.get_attr(attribute_target)))
        ),
        root,
    )
    assert getattr(gm, attribute_target) is getattr(root, attribute_target)
    assert gm(torch.ones(1)).tolist() == [8.0]
    assert_inert(gm.code, attribute_target)
    by_getattr = (
        f"getattr(self, {attribute_target!r})" in gm.code
        or f'getattr(self, "{attribute_target}")' in gm.code
    )
    if (
        attribute_target.isidentifier()
        and attribute_target.isascii()
        and not keyword.iskeyword(attribute_target)
    ):
        assert f"self.{attribute_target}\n" in gm.code
    elif attribute_target.isidentifier() and not keyword.iskeyword(attribute_target):
        assert f"self.{attribute_target}\n" in gm.code or by_getattr  # NFKC-stable unicode
    else:
        assert by_getattr


def test_a_hostile_call_module_target_is_reached_with_getattr_and_never_run(attribute_target):
    root = torch.nn.Module()
    setattr(root, attribute_target, torch.nn.ReLU())
    gm = minifx_module(
        lambda g: g.output(g.call_module(attribute_target, (g.placeholder("x"),))), root
    )
    assert getattr(gm, attribute_target) is getattr(root, attribute_target)
    assert gm(torch.tensor([-1.0, 3.0])).tolist() == [0.0, 3.0]
    assert_inert(gm.code, attribute_target)


def test_a_hostile_target_inside_a_dotted_path(marker):
    evil = payloads(marker)["call"]
    root = torch.nn.Module()
    setattr(root, evil, torch.nn.Module())
    setattr(getattr(root, evil), "class", torch.nn.Parameter(torch.ones(1)))
    gm = minifx_module(lambda g: g.output(g.get_attr(f"{evil}.class")), root)
    assert gm() is getattr(getattr(root, evil), "class")
    assert_inert(gm.code, evil)


def test_torch_fx_pastes_a_quoted_target_into_its_code(marker):
    # minifx differs on purpose: torch.fx writes getattr(self, "<target>") with the
    # target pasted between double quotes, so a quote in the target ends the string:
    # the payload becomes code (torch.fx compiles it; this test never runs it).
    target = payloads(marker)["double-quote"]
    root = torch.nn.Module()
    setattr(root, target, torch.nn.ReLU())

    def build(g):
        g.output(g.call_module(target, (g.placeholder("x"),)))

    code = torch_fx_code(build, root)
    with pytest.raises(AssertionError, match="the code calls open"):
        assert_inert(code)
    assert_inert(minifx_module(build, root).code, target)


@pytest.mark.parametrize(
    "target, missing",
    [
        ("nope", "nope"),
        ("a.nope", "nope"),
        ("a.b.c", "b"),
        ("a.class.x", "x"),
        ("a.klass.x", "klass"),
    ],
)
def test_a_dotted_path_that_does_not_exist_fails_at_construction(target, missing):
    root = torch.nn.Module()
    root.a = torch.nn.Module()
    setattr(root.a, "class", torch.nn.Module())
    graph = Graph()
    graph.output(graph.get_attr(target))
    with pytest.raises(AttributeError) as info:
        GraphModule(root, graph)
    assert f"refers to {target!r}, but the root module has no attribute {missing!r}" in str(
        info.value
    )


# -- call_method targets ---------------------------------------------------------------


class Methods:
    """An object with methods under names that are not identifiers."""

    def __getitem__(self, key):
        return ("item", key)


for _name in ("a; b", "class", "0", "x)+(1", "a\nb"):
    setattr(Methods, _name, lambda self, arg, _name=_name: (_name, arg))


@pytest.mark.parametrize("method", ["__getitem__", "a; b", "class", "0", "x)+(1", "a\nb"])
def test_a_call_method_target_that_is_no_identifier_is_called_with_getattr(method):
    gm = minifx_module(lambda g: g.output(g.call_method(method, (g.placeholder("x"), 5))))
    expected = ("item", 5) if method == "__getitem__" else (method, 5)
    assert gm(Methods()) == expected
    assert_inert(gm.code, method)
    if method == "__getitem__":
        assert "x.__getitem__(5)" in gm.code


def test_a_call_method_payload_is_never_run(marker):
    for method in payloads(marker).values():
        if "." in method:
            continue
        setattr(Methods, method, lambda self: "called")
        gm = minifx_module(lambda g: g.output(g.call_method(method, (g.placeholder("x"),))))
        assert gm(Methods()) == "called"
        assert_inert(gm.code, method)


# -- keyword arguments whose keys are not identifiers ---------------------------------------


def keywords(*args, **kwargs):
    return args, kwargs


@pytest.mark.parametrize(
    "key", ["a-b", "class", "1x", "", "with space", "a\nb", 'a"b', "None", "ok"]
)
def test_keyword_argument_keys_that_are_not_identifiers_make_a_valid_call(key):
    build = lambda g: g.output(  # noqa: E731
        g.call_function(keywords, (1,), {key: g.placeholder("x"), "plain": 2})
    )
    gm = minifx_module(build)
    assert gm(7) == ((1,), {key: 7, "plain": 2})
    assert_inert(gm.code)
    if not key.isidentifier() or key in ("class", "None"):
        # torch.fx writes `key = value` whatever the key is: its code does not compile.
        assert torch_fx_code(build) == "SyntaxError"


FI = "\ufb01"  # the ligature "ﬁ": an identifier, which Python's NFKC normalisation reads as "fi"
Ligature = enum.Enum("Ligature", {FI: 1, "fi": 2})


class Ligatures:
    def fi(self):
        return "plain fi"


setattr(Ligatures, FI, lambda self: "ligature")


@pytest.mark.parametrize("where", ["get_attr", "call_module", "call_method", "keyword", "enum"])
def test_a_name_that_nfkc_normalises_to_another_name_keeps_its_own_name(where):
    root = torch.nn.Module()  # both names exist, so reading the wrong one gives a wrong value
    if where == "call_module":
        root.fi = torch.nn.Tanh()
        setattr(root, FI, torch.nn.ReLU())
    else:
        root.fi = torch.nn.Parameter(torch.tensor([100.0]))
        setattr(root, FI, torch.nn.Parameter(torch.tensor([1.0])))
    builds = {
        "get_attr": (lambda g: g.output(g.get_attr(FI)), (), [1.0]),
        "call_module": (
            lambda g: g.output(g.call_module(FI, (g.placeholder("x"),))),
            (torch.tensor([-1.0]),),
            [0.0],
        ),  # relu, not tanh
        "call_method": (
            lambda g: g.output(g.call_method(FI, (g.placeholder("x"),))),
            (Ligatures(),),
            "ligature",
        ),
        "keyword": (
            lambda g: g.output(g.call_function(keywords, (), {FI: g.placeholder("x")})),
            (7,),
            ((), {FI: 7}),
        ),
        "enum": (
            lambda g: g.output(g.call_function(record, (g.placeholder("x"), Ligature[FI]))),
            (1,),
            1,
        ),
    }
    build, inputs, expected = builds[where]
    gm = minifx_module(build, root)
    seen.clear()
    result = gm(*inputs)
    assert (result.tolist() if isinstance(result, torch.Tensor) else result) == expected
    if where == "enum":
        assert seen[0] is Ligature[FI]


def test_a_keyword_key_with_a_dangerous_repr_is_never_run(marker):
    key = EvilStr("a-b")
    EvilStr.text = payloads(marker)["call"]
    gm = minifx_module(lambda g: g.output(g.call_function(keywords, (), {key: g.placeholder("x")})))
    assert_inert(gm.code, EvilStr.text)
    assert gm(7) == ((), {"a-b": 7})


class Formatted(str):
    """A str whose content is harmless but whose str() and format() are code."""

    text = ""

    def __str__(self):
        return self.text

    def __format__(self, spec):
        return self.text


@pytest.mark.parametrize("where", ["placeholder", "keyword", "node-name"])
def test_a_str_subclass_with_a_dangerous_format_is_never_pasted(where):
    # Its own marker, checked here: the payload runs at construction, before any assert.
    marker = Path("/tmp") / f"pwned_{uuid.uuid4().hex}"

    def build(g):
        if where == "placeholder":
            Formatted.text = f"x=open('{marker}','w')"
            g.output(g.placeholder(Formatted("x")))
        elif where == "keyword":
            Formatted.text = f"a=open('{marker}','w'), b"
            g.output(g.call_function(keywords, (), {Formatted("ok"): g.placeholder("x")}))
        else:
            Formatted.text = f"r = open('{marker}','w'); r"
            x = g.placeholder("x")
            relu = g.call_function(torch.relu, (x,))
            relu.name = Formatted("r")
            g.output(relu)

    try:
        gm = minifx_module(build)
        assert_inert(gm.code, Formatted.text)
        gm(torch.ones(1))
    finally:
        created = marker.exists()
        marker.unlink(missing_ok=True)
    assert not created, f"a payload ran: {marker} was created"


# -- negative numbers ------------------------------------------------------------------------


def test_a_negative_base_of_pow_is_bracketed():
    def build(g):
        x = g.placeholder("x")
        g.output(
            (
                g.call_function(operator.pow, (-2, x)),
                g.call_function(operator.pow, (-2.5, x)),
                g.call_function(operator.pow, (-math.inf, x)),
                g.call_function(operator.pow, (x, -1)),
                g.call_function(operator.neg, (-2,)),
            )
        )

    gm = minifx_module(build)
    assert gm(2) == ((-2) ** 2, (-2.5) ** 2, math.inf, 0.5, 2) == (4, 6.25, math.inf, 0.5, 2)
    assert "(-2) ** x" in gm.code
    # torch.fx writes `-2 ** x`, which Python reads as -(2 ** x): a wrong result (-4).
    fx = torch.fx.Graph()
    fx.output(fx.call_function(operator.pow, (-2, fx.placeholder("x"))))
    assert torch.fx.GraphModule(torch.nn.Module(), fx)(2) == -4


@pytest.mark.parametrize(
    "receiver, method, expected",
    [
        (-3, "bit_length", 2),
        (3, "bit_length", 2),
        (-2.5, "is_integer", False),
        (-math.inf, "is_integer", False),
        (-1.0, "__neg__", 1.0),
        (-7, "__index__", -7),
    ],
)
def test_a_number_as_method_receiver(receiver, method, expected):
    build = lambda g: g.output(g.call_method(method, (receiver,)))  # noqa: E731
    gm = minifx_module(build)
    assert gm() == expected
    if receiver == -3:  # torch.fx writes `-3.bit_length()`, which does not compile
        assert torch_fx_code(build) == "SyntaxError"


def test_a_negative_number_before_an_attribute_or_index():
    def build(g):
        x = g.placeholder("x")
        g.output(
            (
                g.call_function(getattr, (-3, "real")),
                g.call_function(operator.getitem, ((-1, -2), -1)),
                g.call_function(operator.sub, (x, -1)),
            )
        )

    assert minifx_module(build)(1) == (-3, -2, 2)


# -- torch constants ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "constant",
    [
        torch.float16,
        torch.bfloat16,
        torch.device("cuda:0"),
        torch.device("cuda"),
        torch.device("cpu"),
        torch.strided,
        torch.sparse_coo,
        torch.channels_last,
        torch.contiguous_format,
    ],
    ids=str,
)
def test_torch_constants_are_written_as_torch_fx_writes_them(constant):
    def build(g):
        g.output(g.call_function(record, (g.placeholder("x"), constant)))

    gm = minifx_module(build)  # compiles, with or without CUDA
    seen.clear()
    gm(1)
    assert seen[0] == constant and type(seen[0]) is type(constant)
    assert gm.code == torch_fx_code(build)


def test_torch_constants_work_when_parameters_shadow_torch_and_device():
    def build(g):
        torch_ = g.placeholder("torch")
        device = g.placeholder("device")
        empty = g.call_function(
            torch.ones,
            (2,),
            {"dtype": torch.float16, "device": torch.device("cpu"), "layout": torch.strided},
        )
        g.output(
            (
                empty,
                g.call_function(operator.add, (torch_, device)),
                g.call_method("to", (empty,), {"memory_format": torch.contiguous_format}),
            )
        )

    ones, total, moved = minifx_module(build)(1, 2)
    assert ones.dtype == torch.float16 and total == 3 and moved.tolist() == [1.0, 1.0]


def test_a_device_constant_runs_on_the_device(device):
    gm = minifx_module(
        lambda g: g.output(g.call_function(torch.ones, (2,), {"device": torch.device(device)}))
    )
    assert gm().device.type == device


def test_a_call_method_node_without_its_receiver_is_torch_fx_s_index_error_too():
    for library in (torch.fx, minifx):
        graph = library.Graph()
        graph.placeholder("x")
        graph.output(graph.call_method("size", ()))
        with pytest.raises(IndexError):
            library.GraphModule(torch.nn.Module(), graph)
    with pytest.raises(ValueError, match="a call_method node needs its receiver as args"):
        GraphModule(torch.nn.Module(), graph)


# Nodes broken after they were made (create_node checks invariant 1): code generation
# refuses each with an error that is also the exception torch.fx raises for it.
BROKEN_NODES = {
    "a get_attr target that is no str": lambda g, x: setattr(g.get_attr("w"), "target", 3),
    "a call_module target that is no str": lambda g, x: setattr(
        g.call_module("m", (x,)), "target", 3
    ),
    "a call_method target that is no str": lambda g, x: setattr(
        g.call_method("relu", (x,)), "target", 3
    ),
    "a call_function target that is not callable": lambda g, x: setattr(
        g.call_function(torch.relu, (x,)), "target", None
    ),
    "a placeholder target that is no str": lambda g, x: setattr(g.placeholder("p"), "target", 3),
    "an unknown opcode": lambda g, x: setattr(g.call_function(torch.relu, (x,)), "op", "bogus"),
}


@pytest.mark.parametrize("edit", BROKEN_NODES.values(), ids=BROKEN_NODES)
@pytest.mark.parametrize("make", ["GraphModule", "python_code"])
def test_a_broken_node_is_an_error_of_the_type_torch_fx_raises(edit, make):
    raised = {}
    for library in (torch.fx, minifx):
        graph = library.Graph()
        x = graph.placeholder("x")
        edit(graph, x)
        graph.output(x)
        with pytest.raises(Exception) as error:
            if make == "GraphModule":
                library.GraphModule(torch.nn.Module(), graph)
            else:
                graph.python_code("self")
        raised[library] = error.value
    assert type(raised[torch.fx]) in (AssertionError, NotImplementedError)
    assert isinstance(raised[minifx], type(raised[torch.fx]))
    assert "How to fix" in str(raised[minifx]) or "must be a dotted attribute name" in str(
        raised[minifx]
    )


def test_an_output_node_without_its_value_is_torch_fx_s_index_error_too():
    for library in (torch.fx, minifx):
        graph = library.Graph()
        graph.placeholder("x")
        graph.create_node("output", "output", ())
        with pytest.raises(IndexError):
            library.GraphModule(torch.nn.Module(), graph)
    with pytest.raises(ValueError, match="an output node has exactly one argument"):
        GraphModule(torch.nn.Module(), graph)
