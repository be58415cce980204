"""Hostile names, targets and constants: valid code or a clear error, never executed text.

Graphs are built by hand with `minifx.graph.Graph`, where nothing checks what a
node's name, target or arguments say, and wrapped in a `GraphModule`, which
compiles the code at once. Every hostile string carries a payload that would
create a marker file if it ever ran; the `marker` fixture fails the test if the
file appears, and `assert_inert` parses the generated source and fails if any
call could run the payload (a Call of `__import__`, `open`, `exec`, ...).

Where torch.fx behaves differently the test says so. torch.fx pastes names and
reprs into its code, so its code for a payload is only compiled here
(GraphModule construction) and inspected, never run.
"""

from __future__ import annotations

import ast
import enum
import keyword
import math
import operator
import re
import typing
import uuid
from pathlib import Path
from typing import Any, Callable

import pytest
import torch
import torch.fx

from minifx.codegen import GraphModule, python_code
from minifx.graph import Graph
from minifx.graph.tracer import PytreeInfo

pytestmark = pytest.mark.ch3

try:
    import numpy
except ImportError:  # numpy is optional
    numpy = None


# -- payloads and checks -------------------------------------------------------------


@pytest.fixture
def marker():
    """A file that only a payload would create; the test fails if it exists afterwards."""
    path = Path("/tmp") / f"pwned_{uuid.uuid4().hex}"  # no dot: targets split on dots
    yield path
    created = path.exists()
    path.unlink(missing_ok=True)
    assert not created, f"a payload ran: {path} was created"


def payloads(marker: Path) -> dict[str, str]:
    """Strings that run code if pasted into source, each breaking out in its own way."""
    return {
        "call": f"getattr(__import__('os'),'system')('touch {marker}')",
        "double-quote": f'a"),open("{marker}","w"),getattr(self,"a',
        "single-quote": f"a'),open('{marker}','w'),getattr(self,'a",
        "backslash-quote": f'a\\"),open("{marker}","w"),("',
        "newline-statement": f'a")\n    open("{marker}","w")\n    ("',
    }


DANGEROUS_CALLS = {"__import__", "open", "exec", "eval", "system", "compile", "breakpoint"}


def assert_inert(code: str, *payload_texts: str) -> None:
    """The source parses, calls nothing dangerous, and holds the payloads only inside
    string literals (where they are data, such as an attribute name for getattr)."""
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            function = node.func
            name = (
                function.id
                if isinstance(function, ast.Name)
                else function.attr
                if isinstance(function, ast.Attribute)
                else None
            )
            assert name not in DANGEROUS_CALLS, f"the code calls {name}:\n{code}"
        assert not isinstance(node, (ast.Import, ast.ImportFrom)), f"an import:\n{code}"
    lines = code.splitlines(keepends=True)
    for node in ast.walk(tree):  # blank out every string literal
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            assert node.lineno == node.end_lineno, "a string literal spans lines"
            line = lines[node.lineno - 1]
            lines[node.lineno - 1] = (
                line[: node.col_offset]
                + " " * (node.end_col_offset - node.col_offset)
                + line[node.end_col_offset :]
            )
    outside_strings = "".join(lines)
    # Only code-like texts are checked: a plain target such as `class` or `0` may
    # well appear in a variable name (`class_1`), and that is harmless.
    for text in [t for t in payload_texts if "(" in t or ";" in t]:
        assert text not in outside_strings, f"{text!r} is code, not a string:\n{code}"


def minifx_module(build: Callable[[Graph], Any], root: Any = None) -> GraphModule:
    graph = Graph()
    build(graph)
    return GraphModule(torch.nn.Module() if root is None else root, graph)


def torch_fx_code(build: Callable[[Any], Any], root: Any = None) -> str:
    """torch.fx's code for the same graph (compiled, never run), or the exception's type name."""
    graph = torch.fx.Graph()
    build(graph)
    try:
        return torch.fx.GraphModule(torch.nn.Module() if root is None else root, graph).code
    except SyntaxError:
        return "SyntaxError"


def assigned_names(code: str) -> list[str]:
    """Every variable the forward assigns (the node variables)."""
    tree = ast.parse(code)
    return [
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    ]


seen: list = []


def record(x, constant):
    """Returns x and keeps the constant it was given, to check it arrived intact."""
    seen.append(constant)
    return x


# -- node names ------------------------------------------------------------------------

HOSTILE_NAMES = [
    "a; import os",
    "class",
    "print",
    "torch",
    "x y",
    "häßlich",
    "λ",
    "1abc",
    "",
    "self",
    "getattr",
    "None",
    "inf",
    "device",
    "x",
    "__builtins__",
    "a\nb",
    "a = 1",
    'a"b',
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_hostile_node_name_becomes_a_valid_variable_as_in_torch_fx(name):
    def build(g):
        x = g.placeholder("x")
        relu = g.call_function(torch.relu, (x,))
        relu.name = name
        # Uses after the renamed node need torch, getattr, inf and device as globals.
        inf = g.call_function(torch.add, (relu, math.inf))
        first = g.call_function(torch.Tensor.__getitem__, (inf, 0))
        g.output((first, g.call_function(torch.zeros, (1,), {"device": torch.device("cpu")})))

    gm = minifx_module(build)
    first, zeros = gm(torch.tensor([-1.0, 2.0]))
    assert first.item() == math.inf and zeros.tolist() == [0.0]
    variables = assigned_names(gm.code)
    assert all(v.isascii() and v.isidentifier() for v in variables), variables
    assert variables[0] not in ("torch", "getattr", "inf", "device", "self", "x")
    assert_inert(gm.code)
    fx_variable = assigned_names(torch_fx_code(build))[0]
    if name == "self":
        # minifx differs on purpose: torch.fx writes `self = torch.relu(x)`, so any
        # later `self.<attribute>` would read the tensor instead of the module.
        assert fx_variable == "self" and variables[0] == "self_1"
    else:  # torch.fx makes a variable of the same name
        assert variables[0] == fx_variable


def test_names_that_sanitize_alike_stay_distinct():
    def build(g):
        x = g.placeholder("x")
        nodes = []
        for index, name in enumerate(["x y", "x_y", "x-y", "x y"]):
            node = g.call_function(operator.add, (x, index))
            node.name = name
            nodes.append(node)
        g.output(tuple(nodes))

    gm = minifx_module(build)
    assert [t.item() for t in gm(torch.tensor(10))] == [10, 11, 12, 13]
    returned = next(n for n in ast.walk(ast.parse(gm.code)) if isinstance(n, ast.Return))
    assert len({element.id for element in returned.value.elts}) == 4


# -- placeholder targets --------------------------------------------------------------


@pytest.mark.parametrize(
    "target", ["a; import os", "class", "1x", "x y", "", "a=1", "x:int", "*", "***x", "λ", "None"]
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


# -- call_function targets with hostile names ----------------------------------------------


def renamed(
    function: Callable, *, name: str, qualname: str | None = None, module: str | None = None
) -> Callable:
    function.__name__ = name
    function.__qualname__ = qualname if qualname is not None else name
    if module is not None:
        function.__module__ = module
    return function


def test_a_function_with_hostile_names_is_bound_as_a_global(marker):
    evil = payloads(marker)["call"]

    def add_one(x):
        return x + 1

    function = renamed(add_one, name="x; import os", qualname=evil, module=evil)
    gm = minifx_module(lambda g: g.output(g.call_function(function, (g.placeholder("x"),))))
    assert gm(1) == 2
    assert_inert(gm.code, evil, "x; import os")
    global_names = [n for n, v in python_code(gm.graph).globals.items() if v is function]
    assert len(global_names) == 1 and global_names[0].isidentifier()


@pytest.mark.parametrize(
    "module, name",
    [
        ("torch", "relu; import os"),
        ("torch", "relu"),
        ("torch.nn.functional", "gelu"),
        ("math", "sqrt"),
        ("builtins", "abs"),
        ("torch", "Tensor.add"),
    ],
)
def test_a_fake_torch_looking_function_is_bound_not_looked_up_by_name(module, name):
    def triple(x):
        return x * 3

    function = renamed(triple, name=name, module=module)
    build = lambda g: g.output(g.call_function(function, (g.placeholder("x"),)))  # noqa: E731
    gm = minifx_module(build)
    assert gm(torch.tensor(-2.0)).item() == -6.0  # not relu's 0, gelu's, sqrt's or abs's
    assert_inert(gm.code, name)
    assert f" {module}.{name}(" not in gm.code
    if (module, name) == ("torch", "relu"):
        # torch.fx trusts __module__ and __name__: its code calls the real torch.relu.
        assert "relu = torch.relu(x)" in torch_fx_code(build)


def test_a_callable_object_with_odd_names_and_repr_is_bound_as_a_global(marker):
    class Odd:
        __name__ = 5  # not even a str
        __module__ = None

        def __call__(self, x):
            return x + 1

        def __repr__(self):
            return payloads(marker)["call"]

    odd = Odd()
    graph = Graph()
    graph.output(graph.create_node("call_function", odd, (graph.placeholder("x"),), name="odd"))
    gm = GraphModule(torch.nn.Module(), graph)
    assert gm(1) == 2
    assert_inert(gm.code)


# -- constants -------------------------------------------------------------------------


class EvilRepr:
    def __init__(self, text: str):
        self.text = text

    def __repr__(self):
        return self.text


class EvilStr(str):
    text = ""

    def __repr__(self):
        return self.text


class EvilFloat(float):
    text = ""

    def __repr__(self):
        return self.text


class EvilInt(int):
    text = ""

    def __repr__(self):
        return self.text


class Colour(enum.Enum):
    RED = 1
    CLASS = 2


Keywords = enum.Enum("Keywords", {"class": 1, "a b": 2})  # members no `.name` can reach


def hostile_constants(evil: str) -> dict[str, Any]:
    for cls in (EvilStr, EvilFloat, EvilInt):
        cls.text = evil
    constants = {
        "object": EvilRepr(evil),
        "str-subclass": EvilStr("hello"),
        "float-subclass": EvilFloat(1.5),
        "int-subclass": EvilInt(3),
        "tensor": torch.tensor([1.0, 2.0]),
        "list-of-evil": [EvilStr("a"), EvilRepr(evil)],
        "dict-of-evil": {"k": EvilRepr(evil)},
        "evil-key": {EvilStr("key"): 1},
        "tuple-of-evil": (EvilRepr(evil),),
        "slice-of-evil": slice(EvilInt(1), None, EvilInt(2)),
        "enum": Colour.CLASS,
        "enum-keyword": Keywords["class"],
        "enum-space": Keywords["a b"],
        "complex-inf": complex("inf"),
        "big-int": 10**40,
        "bytes": b"\x00\"'",
        "str-quotes": "a\"b'c\\\n",
        "ellipsis": ...,
        "none": None,
    }
    if numpy is not None:
        constants |= {
            "numpy-float": numpy.float32(1.5),
            "numpy-int": numpy.int64(3),
            "numpy-array": numpy.arange(3),
        }
    return constants


CONSTANT_KINDS = list(hostile_constants("x"))


def same_constant(actual: Any, expected: Any) -> bool:
    if isinstance(expected, (torch.Tensor,)) or type(expected).__module__ == "numpy":
        return actual is expected
    if isinstance(expected, (dict, list, tuple, slice)) or type(expected) in (int, bytes, str):
        return type(actual) is type(expected) and actual == expected
    return actual is expected or (type(actual) is type(expected) and actual == expected)


@pytest.mark.parametrize("kind", CONSTANT_KINDS)
def test_a_constant_with_a_dangerous_repr_is_passed_through_intact(kind, marker):
    evil = payloads(marker)["call"]
    constant = hostile_constants(evil)[kind]
    gm = minifx_module(lambda g: g.output(g.call_function(record, (g.placeholder("x"), constant))))
    seen.clear()
    assert gm(1) == 1
    assert same_constant(seen[0], constant), (seen[0], constant)
    assert_inert(gm.code, evil)
    # Reached through the same object, not rebuilt, where it has no literal.
    if kind in (
        "object",
        "str-subclass",
        "float-subclass",
        "int-subclass",
        "tensor",
        "enum",
        "enum-keyword",
        "enum-space",
    ):
        assert seen[0] is constant


def test_torch_fx_pastes_the_repr_of_an_unknown_constant(marker):
    # minifx differs on purpose: torch.fx writes repr(constant) into its code, so the
    # payload would run on the first call (this test only compiles torch.fx's code).
    evil = payloads(marker)["call"]

    def build(g):
        g.output(g.call_function(record, (g.placeholder("x"), EvilRepr(evil))))

    with pytest.raises(AssertionError, match="the code calls"):
        assert_inert(torch_fx_code(build))
    assert_inert(minifx_module(build).code, evil)


def test_a_placeholder_default_with_a_dangerous_repr_is_the_same_object(marker):
    default = EvilRepr(payloads(marker)["call"])
    gm = minifx_module(lambda g: g.output(g.placeholder("x", default_value=default)))
    assert gm() is default and gm(3) == 3
    assert_inert(gm.code, default.text)


def test_type_annotations_with_hostile_names_are_bound_as_globals(marker):
    evil = payloads(marker)["call"]
    hostile = type("Hostile", (), {})
    hostile.__name__, hostile.__qualname__, hostile.__module__ = "x; import os", evil, evil

    def build(g):
        x = g.placeholder("x", type_expr=hostile)
        y = g.call_function(operator.add, (x, 1))
        y.type = typing.List[hostile]
        g.output(y, type_expr=typing.Optional[hostile])

    gm = minifx_module(build)
    assert gm(1) == 2
    assert_inert(gm.code, evil)


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_inf_and_nan_constants(value):
    def build(g):
        x = g.placeholder("x")
        g.output(
            (
                g.call_function(torch.add, (x, value)),
                g.call_function(record, (x, value)),
                g.call_function(operator.mul, (x, value)),
            )
        )

    gm = minifx_module(build)
    seen.clear()
    added, _, multiplied = gm(torch.tensor([1.0]))
    expected = torch.tensor([1.0]) + value
    torch.testing.assert_close(added, expected, equal_nan=True)
    torch.testing.assert_close(multiplied, torch.tensor([1.0]) * value, equal_nan=True)
    assert math.isnan(seen[0]) if math.isnan(value) else seen[0] == value
    # torch.fx writes the same names (`inf`, `-inf`, `nan`) as globals.
    assert gm.code == torch_fx_code(build)


def test_inf_still_means_inf_when_a_node_or_parameter_is_named_inf():
    def build(g):
        nan = g.placeholder("nan")
        inf = g.call_function(operator.neg, (nan,))
        inf.name = "inf"
        g.output(
            (
                g.call_function(operator.add, (inf, math.inf)),
                g.call_function(operator.add, (nan, -math.inf)),
                g.call_function(record, (inf, math.nan)),
            )
        )

    gm = minifx_module(build)
    seen.clear()
    plus, minus, _ = gm(torch.tensor([1.0]))
    assert plus.tolist() == [math.inf] and minus.tolist() == [-math.inf] and math.isnan(seen[0])


def test_negative_zero_keeps_its_sign():
    gm = minifx_module(lambda g: g.output(g.call_function(record, (g.placeholder("x"), -0.0))))
    seen.clear()
    gm(1)
    assert math.copysign(1.0, seen[0]) == -1.0


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
