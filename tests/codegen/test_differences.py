"""Every claim of chapter 3's "Differences from torch.fx" box, checked on both libraries.

Each test runs torch.fx as well as minifx, so that a claim about torch.fx that
stops being true (a new torch.fx, a changed minifx) fails here instead of
misleading the reader. One test per claim, in the box's order; the first line
of each docstring quotes it.

Claims pinned elsewhere, by tests that run torch.fx too:

- `graph.python_code(root_module)` has one option, `verbose`:
  tests/graph/test_codegen_hooks.py::test_python_code_has_one_option
- `CodeGen`, `_PyTreeCodeGen` and `graph.on_generate_code` are torch.fx's, no
  `_BoxedCodeGen`, no `_ExportCodeGen`; a graph keeps `graph._codegen` at `None`, and a
  structured graph's `process_inputs` checks the structure:
  tests/codegen/test_codegen.py::test_only_the_default_and_the_pytree_codegen,
  ::test_a_new_graph_keeps_no_codegen_and_the_default_is_the_plain_one,
  ::test_a_structured_graph_keeps_no_codegen_and_checks_what_process_inputs_gets,
  tests/graph/test_codegen_hooks.py::test_on_generate_code_transforms_the_body_and_keeps_the_line_map_as_torch_fx
- a negative number before `**` is bracketed:
  tests/codegen/test_syntax.py::test_a_negative_base_of_pow_is_bracketed
- an error inside `forward` gets a note; torch.fx prints the generated lines to stderr
  (that the traceback is kept is checked below):
  tests/codegen/test_source.py::test_an_error_in_forward_gets_a_note_where_torch_fx_prints_to_stderr
- the generated code's file name and its number:
  tests/codegen/test_source.py::test_the_generated_forward_names_the_traced_code_as_torch_fx_does,
  ::test_a_recompile_keeps_the_name_and_the_libraries_never_share_one
- a keyword-only parameter without a default stays keyword-only:
  tests/codegen/test_differential.py::test_keyword_only_without_default_stays_keyword_only,
  ::test_torch_fx_cannot_compile_the_skipped_cases[keyword_only_parameters]
"""

from __future__ import annotations

import copy
import importlib
import inspect
import io
import math
import operator
import pickle
import sys
import traceback
import typing
import uuid
from contextlib import redirect_stderr
from pathlib import Path

import pytest
import torch
import torch.fx

import minifx
import minifx.codegen.pytree
import minifx.graph.wrapping

pytestmark = pytest.mark.ch3

LIBRARIES = (torch.fx, minifx)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x).relu()


def module_of(lib, build, root: torch.nn.Module | None = None):
    """`lib`'s GraphModule of the graph that `build(graph)` writes."""
    graph = lib.Graph()
    build(graph)
    return lib.GraphModule(root if root is not None else torch.nn.Module(), graph)


def quietly(function, *args):
    """Call `function`, hiding what torch.fx prints to stderr when its forward fails."""
    with redirect_stderr(io.StringIO()):
        return function(*args)


# -- python_code and print_readable --------------------------------------------------------


def test_print_readable_has_no_colored_stride_or_device_options():
    """`print_readable` likewise has no `colored`, stride or device options."""
    ours = inspect.signature(minifx.GraphModule.print_readable).parameters
    theirs = inspect.signature(torch.fx.GraphModule.print_readable).parameters
    assert list(ours) == ["self", "print_output"]
    assert {"print_output", "include_stride", "include_device", "colored"} <= set(theirs)


def test_another_root_name_names_the_first_parameter():
    """With a `root_module` other than `self`, the first parameter takes its name
    (`def forward(model, x)`); torch.fx writes `self`, and its code cannot run."""
    model, x = Net(), torch.randn(2, 3)
    forwards = {}
    for lib in LIBRARIES:
        code = lib.Tracer().trace(model).python_code(root_module="model")
        namespace = dict(code.globals)
        exec(code.src, namespace)
        forwards[lib.__name__] = namespace["forward"]
    assert list(inspect.signature(forwards["minifx"]).parameters) == ["model", "x"]
    assert list(inspect.signature(forwards["torch.fx"]).parameters) == ["self", "x"]
    torch.testing.assert_close(forwards["minifx"](model, x), model(x))
    with pytest.raises(NameError, match="'model' is not defined"):
        forwards["torch.fx"](model, x)


# -- how globals are written ---------------------------------------------------------------


def sqrt_of_rows(x):
    return x * math.sqrt(x.size(0))


def test_a_wrapped_function_is_registered_with_minifx_s_wrap():
    """A wrapped function's line reads `wrap("math_sqrt")`, calling minifx's `wrap`, instead
    of `torch.fx._symbolic_trace.wrap("math_sqrt")`."""
    theirs = torch.fx.symbolic_trace(sqrt_of_rows)
    ours = minifx.symbolic_trace(sqrt_of_rows)
    assert '\ntorch.fx._symbolic_trace.wrap("math_sqrt")\n' in theirs.code
    assert ours.code == theirs.code.replace("torch.fx._symbolic_trace.wrap(", "wrap(")
    assert type(ours).forward.__globals__["wrap"] is minifx.graph.wrapping.wrap


def optional_bias(x, bias=None):
    return x if bias is None else x + bias


def test_the_none_check_of_concrete_args_is_called_under_a_minifx_name():
    """Targets that live in minifx's own modules print under minifx names: the `None` check
    of `concrete_args` is called as `minifx_graph_tracer__assert_is_none(...)`, after a line
    `wrap("minifx_graph_tracer__assert_is_none")`, where torch.fx calls
    `torch.fx._symbolic_trace._assert_is_none(...)` with no `wrap` line."""
    theirs = torch.fx.symbolic_trace(optional_bias, concrete_args={"bias": None}).code
    ours = minifx.symbolic_trace(optional_bias, concrete_args={"bias": None}).code
    assert "wrap(" not in theirs
    assert "= torch.fx._symbolic_trace._assert_is_none(bias_1, " in theirs
    wrap_line = '\nwrap("minifx_graph_tracer__assert_is_none")\n'
    assert ours.startswith(wrap_line)
    assert ours.replace(wrap_line, "\n\n") == theirs.replace(
        "torch.fx._symbolic_trace._assert_is_none", "minifx_graph_tracer__assert_is_none"
    )


class Shown:
    """An object whose repr is not code that evaluates back to it."""

    def __repr__(self) -> str:
        return "Shown()"


def keep(x, constant):
    return x, constant


@pytest.mark.parametrize(
    "constant, pasted, missing",
    [
        (torch.ones(2), "torch.Tensor(size=[2], dtype=float32)", "float32"),
        (Shown(), "Shown()", "Shown"),
    ],
    ids=["tensor", "custom-repr"],
)
def test_constants_without_a_literal_are_bound_as_globals(constant, pasted, missing):
    """Constants without a literal that evaluates back to them (tensors, objects with any
    other repr) are bound as globals. torch.fx pastes their repr: a tensor argument becomes
    `torch.Tensor(size=[2], dtype=float32)`, which fails with a `NameError`, and an object
    with a custom repr is pasted as it prints."""

    def build(graph):
        graph.output(graph.call_function(keep, (graph.placeholder("x"), constant)))

    theirs, ours = module_of(torch.fx, build), module_of(minifx, build)
    assert f"keep(x, {pasted})" in theirs.code and pasted not in ours.code
    with pytest.raises(NameError, match=f"'{missing}' is not defined"):
        quietly(theirs, 1)
    assert ours(1)[1] is constant


def test_an_annotation_that_holds_a_list_binds_it_as_a_global():
    """A type annotation that holds a list, `typing.Callable[[int], int]`, binds the list as
    a global [...]. torch.fx cannot write it: building the GraphModule fails with
    `TypeError: unhashable type: 'list'`."""

    def build(graph):
        graph.output(graph.placeholder("x", type_expr=typing.Callable[[int], int]))

    with pytest.raises(TypeError, match="unhashable type: 'list'"):
        module_of(torch.fx, build)
    ours = module_of(minifx, build)
    assert "x : collections_abc_Callable[_class_int_,int]" in ours.code
    assert ours.forward.__globals__["_class_int_"] == [int]
    assert ours(len) is len


def test_an_operator_node_with_arguments_its_operator_does_not_take_is_written_as_a_call():
    """An operator node with arguments its operator does not take [...] is written as a call,
    `_operator_add(x, y, 3)`, which raises as Python would; torch.fx writes `x + y` and
    silently drops the rest."""

    def build(graph):
        x, y = graph.placeholder("x"), graph.placeholder("y")
        graph.output(graph.call_function(operator.add, (x, y, 3)))

    theirs, ours = module_of(torch.fx, build), module_of(minifx, build)
    assert "add = x + y" in theirs.code and theirs(1, 2) == 3  # the 3 is gone
    assert "add = _operator_add(x, y, 3)" in ours.code
    with pytest.raises(TypeError, match="expected 2 arguments, got 3"):
        ours(1, 2)


def test_globals_never_take_the_name_of_a_parameter():
    """Globals never take a name that a parameter or node has: with a parameter called
    `torch`, minifx calls `torch_2.relu(...)`; torch.fx writes `torch.relu(...)`, which looks
    `relu` up on the input."""

    def build(graph):
        graph.output(graph.call_function(torch.relu, (graph.placeholder("torch"),)))

    theirs, ours = module_of(torch.fx, build), module_of(minifx, build)
    assert "relu = torch.relu(torch_1)" in theirs.code
    assert "relu = torch_2.relu(torch_1)" in ours.code
    x = torch.tensor([-1.0, 2.0])
    assert ours(x).tolist() == [0.0, 2.0]
    with pytest.raises(TypeError, match="relu"):  # the tensor's method, given the tensor again
        quietly(theirs, x)


def test_names_are_given_before_any_line_is_written():
    """Names are given before any line is written: `self`, the parameters, the nodes, then
    the globals. So a node named `self` is written `self_1`, a node named like a parameter
    that is not its own gets the next suffix, and a node keeps its name even where a global
    met earlier would want it. torch.fx names as it writes."""

    def build(graph):
        x = graph.placeholder("x")
        # A parameter `relu` whose node is `relu_1`.
        graph.create_node("placeholder", "relu", name="relu_1")
        root = graph.call_function(torch.neg, (x,), name="self")
        relu = graph.call_function(torch.relu, (root,), name="relu")
        weight = graph.get_attr("w")
        sqrt = graph.call_function(math.sqrt, (2.0,))
        late = graph.call_function(operator.mul, (relu, sqrt), name="math_sqrt")
        graph.output(graph.call_function(operator.add, (late, weight)))

    root = torch.nn.Module()
    root.w = torch.nn.Parameter(torch.ones(2))
    theirs, ours = module_of(torch.fx, build, root), module_of(minifx, build, root)
    assert [n.name for n in theirs.graph.nodes] == [n.name for n in ours.graph.nodes]
    for line in ("self = torch.neg(x)", "relu = torch.relu(self)", "w = self.w"):
        assert line in theirs.code
    assert "sqrt = math_sqrt(2.0)" in theirs.code and "math_sqrt_1 = relu * sqrt" in theirs.code
    for line in ("self_1 = torch.neg(x)", "relu_2 = torch.relu(self_1)", "w = self.w"):
        assert line in ours.code
    assert "sqrt = math_sqrt_1(2.0)" in ours.code and "math_sqrt = relu_2 * sqrt" in ours.code
    x = torch.tensor([-1.0, 2.0])
    assert ours(x, 0).tolist() == pytest.approx([1 + 2**0.5, 1.0])
    with pytest.raises(AttributeError, match="w"):  # self.w read on the node's tensor
        quietly(theirs, x, 0)


@pytest.mark.parametrize("op", ["get_attr", "call_module"])
def test_a_keyword_named_attribute_is_reached_with_getattr(op):
    """An attribute or submodule name that is a Python keyword (`class`) is reached with
    `getattr(self, "class")`; torch.fx writes `self.class`, a `SyntaxError`."""
    root = torch.nn.Module()
    setattr(
        root, "class", torch.nn.ReLU() if op == "call_module" else torch.nn.Parameter(torch.ones(1))
    )

    def build(graph):
        x = graph.placeholder("x")
        node = graph.call_module("class", (x,)) if op == "call_module" else graph.get_attr("class")
        graph.output(node)

    with pytest.raises(SyntaxError):
        module_of(torch.fx, build, root)
    ours = module_of(minifx, build, root)
    assert 'getattr(self, "class")' in ours.code
    assert ours(torch.tensor([-1.0])).tolist() == ([0.0] if op == "call_module" else [1.0])


def test_a_placeholder_target_that_is_no_parameter_name_is_a_value_error():
    """A placeholder whose target is not a valid parameter name (`"a-b"`) raises a
    `ValueError` that names the node; torch.fx generates code that fails to compile."""

    def build(graph):
        graph.output(graph.placeholder("a-b"))

    with pytest.raises(SyntaxError):
        module_of(torch.fx, build)
    with pytest.raises(ValueError, match=r"placeholder %a_b has target 'a-b'"):
        module_of(minifx, build)


def test_two_placeholders_with_one_target_are_a_value_error():
    """Two placeholders with the same target (as after `graph_copy` of a traced graph
    into a graph that has its input already) raise a `ValueError` that names the second;
    torch.fx writes `def forward(self, x, x)`, a `SyntaxError`."""

    def build(graph):
        graph.output((graph.placeholder("x"), graph.placeholder("x")))

    with pytest.raises(SyntaxError, match="duplicate argument 'x'"):
        module_of(torch.fx, build)
    with pytest.raises(ValueError, match=r"placeholder %x_1 has the parameter name 'x'"):
        module_of(minifx, build)


def test_a_keyword_that_is_no_str_is_a_value_error():
    """A keyword argument whose name is no str (`kwargs = {1: 2}`) raises a `ValueError`
    that names it; torch.fx writes `relu(x, 1 = 2)`, a `SyntaxError`."""

    def build(graph):
        graph.output(graph.call_function(torch.relu, (graph.placeholder("x"),), {1: 2}))

    with pytest.raises(SyntaxError):
        module_of(torch.fx, build)
    with pytest.raises(ValueError, match="keyword argument names must be str, not 1"):
        module_of(minifx, build)


def test_an_argument_from_another_graph_is_a_value_error():
    """An argument that is a node of another graph (after `replace_all_uses_with` a
    foreign node, say) raises a `ValueError` that names it; torch.fx writes its name, and
    `forward` fails with a `NameError` when it runs."""

    def returning_a_node_of_another_graph(lib):
        other = lib.Graph()
        foreign = other.call_function(torch.neg, (other.placeholder("y"),))

        def build(graph):
            relu = graph.call_function(torch.relu, (graph.placeholder("x"),))
            graph.output(relu)
            relu.replace_all_uses_with(foreign)

        return build

    theirs = module_of(torch.fx, returning_a_node_of_another_graph(torch.fx))
    assert "return neg" in theirs.code
    with pytest.raises(NameError, match="neg"):
        quietly(theirs, torch.ones(1))
    with pytest.raises(ValueError, match="refers to %neg, which is not a node of this graph"):
        module_of(minifx, returning_a_node_of_another_graph(minifx))


def test_an_output_node_with_more_than_one_argument_is_a_value_error():
    """An output node with more than one argument raises a `ValueError`; torch.fx returns
    the first and drops the rest."""

    def build(graph):
        x = graph.placeholder("x")
        graph.create_node("output", "output", (x, graph.call_function(torch.neg, (x,))))

    x = torch.ones(1)
    assert quietly(module_of(torch.fx, build), x) is x
    with pytest.raises(ValueError, match="an output node has exactly one argument"):
        module_of(minifx, build)


def dict_sum(x):
    return x["a"] + x["b"][0]


def list_sum(x):
    return x[0] + x[1]


@pytest.mark.parametrize(
    "program, structure, wrong, torch_fx_error",
    [
        (dict_sum, lambda PH: {"a": PH, "b": (PH,)}, {"a": 1}, KeyError),
        (dict_sum, lambda PH: {"a": PH, "b": (PH,)}, {"a": 1, "b": ()}, IndexError),
        (list_sum, lambda PH: [PH, PH], [1], IndexError),
    ],
    ids=["missing-key", "short-tuple", "short-list"],
)
def test_fx_pytree_is_minifx_s_and_checks_the_structure(program, structure, wrong, torch_fx_error):
    """`fx_pytree` in the generated code of a structured `concrete_args` graph is minifx's
    small `minifx/codegen/pytree.py`, which checks the input's structure and raises a
    `TypeError` saying what was expected; torch.fx's fails with an `IndexError` or a
    `KeyError` for an input of the wrong shape."""
    theirs = torch.fx.symbolic_trace(program, concrete_args={"x": structure(torch.fx.PH)})
    ours = minifx.symbolic_trace(program, concrete_args={"x": structure(minifx.PH)})
    assert type(theirs).forward.__globals__["fx_pytree"] is torch.fx._pytree
    assert type(ours).forward.__globals__["fx_pytree"] is minifx.codegen.pytree
    with pytest.raises(torch_fx_error):
        quietly(theirs, wrong)
    with pytest.raises(TypeError, match=r"the inputs\[0\]\S* should be a "):
        ours(wrong)


def tuple_then_dict(t, d):
    return t[0] + t[1] * d["a"]


def test_a_tuple_then_a_dict_are_read_as_they_were_called():
    """A function of two parameters, a tuple then a dict, traced with structured
    `concrete_args` reads its inputs as it was called; torch.fx takes the pair for its
    `(args, kwargs)` form, and its `forward` fails with a `KeyError`."""
    t, d = (torch.randn(3), torch.randn(3)), {"a": torch.randn(3)}
    theirs, ours = (
        fx.symbolic_trace(tuple_then_dict, concrete_args={"t": (fx.PH, fx.PH), "d": {"a": fx.PH}})
        for fx in LIBRARIES
    )
    assert "tree_flatten_spec(([t, d], {}), self._in_spec)" in theirs.code
    with pytest.raises(KeyError):
        quietly(theirs, t, d)
    assert "tree_flatten_spec([t, d], self._in_spec)" in ours.code
    torch.testing.assert_close(ours(t, d), tuple_then_dict(t, d))


# -- running and saving --------------------------------------------------------------------


class Dot(torch.nn.Module):
    def forward(self, x):
        return torch.dot(x, x)


def test_an_error_in_forward_keeps_its_traceback():
    """An error inside `forward` keeps its traceback [...]. torch.fx [...] re-raises the
    exception with its traceback cut at `GraphModule.__call__`."""
    frames = {}
    for lib in LIBRARIES:
        gm = lib.symbolic_trace(Dot())
        with pytest.raises(TypeError) as error:
            quietly(gm, 5)  # not a tensor
        frames[lib.__name__] = traceback.extract_tb(error.value.__traceback__)
    assert frames["torch.fx"][-1].name == "__call__"
    assert frames["torch.fx"][-1].filename == torch.fx.graph_module.__file__
    assert frames["minifx"][-1].name == "forward"
    assert frames["minifx"][-1].filename.startswith("<eval_with_key>.")
    assert frames["minifx"][-1].line == "dot = torch.dot(x, x);  x = None"


class Saved(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)

    def forward(self, x):
        return self.lin(x) * math.sqrt(x.size(0))


def saved_folder(lib, tmp_path: Path) -> tuple[Path, torch.nn.Module]:
    """`lib`'s GraphModule of `Saved`, and the folder `to_folder` wrote it to."""
    folder = tmp_path / f"saved_{lib.__name__.replace('.', '_')}_{uuid.uuid4().hex}"
    gm = lib.symbolic_trace(Saved())
    gm.to_folder(folder, "Loaded")
    return folder, gm


def import_class(folder: Path) -> type:
    sys.path.insert(0, str(folder.parent))
    try:
        return importlib.import_module(folder.name).Loaded
    finally:
        sys.path.remove(str(folder.parent))


def test_to_folder_writes_an_import_for_every_global(tmp_path):
    """`to_folder` writes an import for every global of the code (torch.fx writes none for
    functions such as `math_sqrt`, and puts the `wrap(...)` line inside the class, so its
    folder fails to import for such a module)."""
    (theirs, _), (ours, gm) = saved_folder(torch.fx, tmp_path), saved_folder(minifx, tmp_path)
    their_source, our_source = ((f / "module.py").read_text() for f in (theirs, ours))
    assert "sqrt" not in their_source.split("class Loaded")[0]
    assert '\n    torch.fx._symbolic_trace.wrap("math_sqrt")\n' in their_source
    with pytest.raises(NotImplementedError, match="wrap must be called at the top level"):
        import_class(theirs)
    assert "\nfrom math import sqrt as math_sqrt\n" in our_source
    assert '\nwrap("math_sqrt")\n' in our_source.split("class Loaded")[0]
    x = torch.ones(4, 2)
    torch.testing.assert_close(import_class(ours)()(x), gm(x))


def test_to_folder_finds_the_state_dict_next_to_itself_and_names_module_classes(tmp_path):
    """`to_folder` [...] finds `state_dict.pt` relative to `__file__` (torch.fx writes an
    absolute path), and writes `torch.nn.Linear(...)` instead of `from torch.nn import *`."""
    (theirs, _), (ours, _) = saved_folder(torch.fx, tmp_path), saved_folder(minifx, tmp_path)
    their_source, our_source = ((f / "module.py").read_text() for f in (theirs, ours))
    assert f"torch.load(r'{theirs}/state_dict.pt')" in their_source
    assert "\nfrom torch.nn import *\n" in their_source
    assert "'lin', Linear(in_features=2" in their_source
    assert "torch.load(os.path.join(_HERE, 'state_dict.pt'))" in our_source
    assert "from torch.nn import *" not in our_source
    assert "'lin', torch.nn.Linear(in_features=2" in our_source


def test_copies_keep_the_class_name():
    """An unpickled or copied (`copy.copy`, `copy.deepcopy`) GraphModule keeps its class name
    (`Net`); torch.fx's comes back as `GraphModule`."""
    for lib in LIBRARIES:
        gm = lib.symbolic_trace(Net())
        names = {
            type(c).__name__
            for c in (pickle.loads(pickle.dumps(gm)), copy.copy(gm), copy.deepcopy(gm))
        }
        assert type(gm).__name__ == "Net"
        assert names == ({"Net"} if lib is minifx else {"GraphModule"})


def test_the_same_source_reuses_its_compiled_code():
    """Compiling the same source again reuses the code compiled last time; torch.fx
    compiles on every recompile. Each still gets a new `forward` function."""
    for library, reuses in ((minifx.codegen, True), (torch.fx, False)):
        gm = library.symbolic_trace(torch.nn.Linear(2, 2))
        before = type(gm).forward
        gm.recompile()
        assert type(gm).forward is not before
        assert (type(gm).forward.__code__ is before.__code__) is reuses


def test_the_none_check_is_wrapped_and_retraced_in_both(monkeypatch):
    """The concrete_args check for `None` is marked as wrapped, so the code starts with a
    `wrap(...)` line for it and retracing records it again; torch.fx needs no such line
    because its tracer patches the check's module, but the code of a retraced module has
    one, `wrap("torch.fx._symbolic_trace._assert_is_none")`, after which every torch.fx
    trace in the process fails with a `KeyError`."""
    for lib in LIBRARIES:
        gm = lib.symbolic_trace(optional_bias, concrete_args={"bias": None})
        assert gm.code.startswith("\nwrap(") is (lib is minifx)
        retraced = lib.Tracer().trace(gm)  # a graph: no code is compiled, nothing registered
        checks = [n for n in retraced.nodes if n.op == "call_function"]
        assert [n.target.__name__ for n in checks] == ["_assert_is_none"]
    ours = minifx.symbolic_trace(minifx.symbolic_trace(optional_bias, concrete_args={"bias": None}))
    assert ours.code.startswith('\nwrap("minifx_graph_tracer__assert_is_none")\n')
    minifx.symbolic_trace(optional_bias)  # tracing still works
    # torch.fx's retraced module breaks torch.fx's table of wrapped functions: give it a
    # copy, which monkeypatch puts back afterwards.
    table = torch.fx._symbolic_trace._wrapped_fns_to_patch
    monkeypatch.setattr(torch.fx._symbolic_trace, "_wrapped_fns_to_patch", dict(table))
    theirs = torch.fx.symbolic_trace(
        torch.fx.symbolic_trace(optional_bias, concrete_args={"bias": None})
    )
    assert theirs.code.startswith(
        '\ntorch.fx._symbolic_trace.wrap("torch.fx._symbolic_trace._assert_is_none")\n'
    )
    with pytest.raises(KeyError, match="torch.fx._symbolic_trace._assert_is_none"):
        torch.fx.symbolic_trace(optional_bias)


# -- nothing in a graph puts code into the source ------------------------------------------

FI = "\ufb01"  # the ligature "ﬁ": an identifier, which Python reads as "fi" (NFKC)


def test_a_name_python_normalises_is_reached_with_getattr():
    """Nothing in a graph can put code into the source: a name that Python would normalise
    (`ﬁ` reads as `fi`) is reached with `getattr`."""
    root = torch.nn.Module()
    root.fi = torch.nn.Parameter(torch.tensor([100.0]))
    setattr(root, FI, torch.nn.Parameter(torch.tensor([1.0])))

    def build(graph):
        graph.output(graph.get_attr(FI))

    theirs, ours = module_of(torch.fx, build, root), module_of(minifx, build, root)
    assert f"self.{FI}" in theirs.code and f'getattr(self, "{FI}")' in ours.code
    assert ours().tolist() == [1.0]
    with pytest.raises(AttributeError, match="has no attribute 'fi'"):  # torch.fx reads `fi`
        quietly(theirs)


class Renamed(str):
    """A str whose `str()` and `format()` say something else than its content."""

    def __str__(self) -> str:
        return "renamed"

    def __format__(self, spec: str) -> str:
        return "renamed"


def keywords(**kwargs):
    return kwargs


def test_a_str_subclass_is_written_as_a_plain_string():
    """Nothing in a graph can put code into the source: [...] a `str` subclass used as a
    name or key is written as a plain string."""

    def build(graph):
        x = graph.placeholder(Renamed("x"))
        relu = graph.call_function(torch.relu, (x,))
        relu.name = Renamed("r")
        graph.output(graph.call_function(keywords, (), {Renamed("key"): relu}))

    theirs, ours = module_of(torch.fx, build), module_of(minifx, build)
    assert "def forward(self, renamed):" in theirs.code and "renamed = torch.relu(" in theirs.code
    assert "(renamed = renamed)" in theirs.code
    assert "def forward(self, x):" in ours.code and "r = torch.relu(" in ours.code
    assert "(key = r)" in ours.code
    result = ours(torch.tensor([-1.0]))
    assert list(result) == ["key"] and result["key"].tolist() == [0.0]


def test_a_placeholder_is_never_copied_over_another_parameter():
    """A placeholder whose node name is not its parameter's name is copied into a local
    that no parameter has [...]; torch.fx writes `add = Add`, which overwrites the
    parameter `add` before it is read."""

    def f(Add, add):  # the capital is the point: its node is named `add`
        return Add - add

    theirs, ours = torch.fx.symbolic_trace(f), minifx.symbolic_trace(f)
    assert [n.name for n in ours.graph.nodes] == [n.name for n in theirs.graph.nodes]
    assert "    add = Add\n    add_1 = add\n" in theirs.code
    assert "    add_1 = Add\n    add_2 = add\n" in ours.code
    one, zero = torch.ones(1), torch.zeros(1)
    assert ours(one, zero).tolist() == f(one, zero).tolist() == [1.0]
    assert theirs(one, zero).tolist() == [0.0]  # Add - Add
