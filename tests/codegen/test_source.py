"""Generated source as text: saved source, and where errors point (`python_code` itself
is tested in test_python_code.py).

Covers what `minifx/codegen/source.py` adds around the code: the file names the
code runs under, the note a compile error gets, the notes that point at the node
whose line failed (also when the failure is deeper, in a submodule or a wrapped
function), the imports that pickling writes, and the limits of rebuilding a
graph by retracing its source, compared with torch.fx where it shares them.
"""

from __future__ import annotations

import copy
import inspect
import linecache
import operator
import pickle
import re

import pytest
import torch
import torch.fx

import minifx.graph
from minifx.codegen import GraphModule, PythonCode, python_code, symbolic_trace
from minifx.codegen.code_cache import register_source
from minifx.codegen.copying import import_block
from minifx.codegen.source import compile_forward
from tests.codegen import support
from tests.codegen.support import Net

pytestmark = pytest.mark.ch3


def both(build):
    """Run `build(Graph, GraphModule, Tracer)` with torch.fx, then minifx; require equal results."""
    expected = build(torch.fx.Graph, torch.fx.GraphModule, torch.fx.Tracer)
    actual = build(minifx.graph.Graph, GraphModule, minifx.graph.Tracer)
    assert actual == expected, f"minifx:\n{actual}\ntorch.fx:\n{expected}"
    return actual


# -- print_readable ------------------------------------------------------------------


STACK_TRACES = [
    'File "model.py", line 12, in forward\n    y = self.lin(x)\n',
    'File "model.py", line 13, in forward\n    z = torch.relu(y) + 1\n',
    'File "model.py", line 13, in forward\n    z = torch.relu(y) + 1\n',
    None,
]


def readable_with_stack_traces(Graph, GraphModule, Tracer) -> str:
    model = Net()
    graph = Tracer().trace(model)
    for node, trace in zip(
        [n for n in graph.nodes if n.op not in ("placeholder", "output")], STACK_TRACES
    ):
        node.stack_trace = trace
    return GraphModule(model, graph, "Net").print_readable(print_output=False)


def without_trailing_spaces(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.split("\n"))


def test_print_readable_groups_nodes_by_stack_trace_as_torch_fx():
    text = readable_with_stack_traces(minifx.graph.Graph, GraphModule, minifx.graph.Tracer)
    expected = readable_with_stack_traces(torch.fx.Graph, torch.fx.GraphModule, torch.fx.Tracer)
    assert without_trailing_spaces(text) == without_trailing_spaces(expected)
    assert "        # File: model.py:13 in forward, code: z = torch.relu(y) + 1\n" in text
    assert text.count("# File: model.py:13") == 1  # one comment for the two nodes
    assert "        # No stacktrace found for following nodes\n        sum_1" in text


def test_print_readable_with_stack_traces_is_torch_fx_byte_for_byte():
    both(readable_with_stack_traces)


# -- the source file and its notes ---------------------------------------------------------

# torch.fx's file name for generated code: a number, then where the traced code lives.
ORIGIN = re.compile(r"<eval_with_key>\.\d+(?: from (.+):(\d+) in (\w+))?")


def origin(gm) -> tuple:
    """(file, first line, function) that the generated forward's file name points at."""
    match = ORIGIN.fullmatch(type(gm).forward.__code__.co_filename)
    assert match, type(gm).forward.__code__.co_filename
    return match.groups()


def relu_function(x):
    return x.relu()


def origins(symbolic_trace, GraphModule, Graph) -> list:
    """Where each kind of GraphModule's code says it comes from."""
    traced_module, traced_function = symbolic_trace(Net()), symbolic_trace(relu_function)
    by_hand = Graph()
    by_hand.output(by_hand.placeholder("x"))
    return [
        origin(traced_module),
        origin(traced_function),
        origin(GraphModule(torch.nn.Module(), by_hand)),  # nothing was traced
        origin(copy.deepcopy(traced_module)),  # the graph's copy forgets it, in both
        origin(symbolic_trace(traced_function))[1:],
    ]  # a generated file; its number differs


def test_the_generated_forward_names_the_traced_code_as_torch_fx_does():
    found = origins(symbolic_trace, GraphModule, minifx.graph.Graph)
    assert found == origins(torch.fx.symbolic_trace, torch.fx.GraphModule, torch.fx.Graph)
    assert found[:2] == [
        (support.__file__, str(Net.forward.__code__.co_firstlineno), "forward"),
        (__file__, str(relu_function.__code__.co_firstlineno), "relu_function"),
    ]
    assert found[2] == found[3] == (None, None, None) and found[4] == ("4", "forward")


def test_a_recompile_keeps_the_name_and_the_libraries_never_share_one():
    # minifx differs on purpose: the same code from the same place keeps its file name;
    # torch.fx takes a new number on every compile.
    ours, theirs = symbolic_trace(Net()), torch.fx.symbolic_trace(Net())
    names = [type(ours).forward.__code__.co_filename, type(theirs).forward.__code__.co_filename]
    ours.recompile()
    theirs.recompile()
    assert type(ours).forward.__code__.co_filename == names[0]
    assert type(theirs).forward.__code__.co_filename != names[1]
    # The numbers come from one counter: no name is used by both libraries.
    mixed = [
        type(trace(Net())).forward.__code__.co_filename.split(" ")[0]
        for _ in range(3)
        for trace in (symbolic_trace, torch.fx.symbolic_trace)
    ]
    assert len(set(mixed)) == 1 + 3  # minifx's one name (same code), torch.fx's three


@pytest.mark.parametrize("trace", [symbolic_trace, torch.fx.symbolic_trace])
def test_linecache_and_inspect_show_the_generated_code_under_that_name(trace):
    gm = trace(Net())
    filename = type(gm).forward.__code__.co_filename
    assert "tests/codegen/support.py" in filename  # Net's file: what PyTorch's own test checks
    assert "".join(linecache.getlines(filename)).rstrip() == gm.code.rstrip()
    assert inspect.getsource(type(gm).forward) == gm.code.strip() + "\n"


@pytest.mark.parametrize("trace", [symbolic_trace, torch.fx.symbolic_trace])
def test_an_unpickled_module_points_at_the_code_it_was_rebuilt_from(trace):
    loaded = pickle.loads(pickle.dumps(trace(Net())))
    file, line, function = origin(loaded)
    assert ORIGIN.fullmatch(file).group(1) is None and function == "forward"
    assert linecache.getlines(file)[int(line) - 1].startswith("def forward(self, x)")


def test_generated_files_are_numbered_by_their_content_and_origin():
    first, second = symbolic_trace(Net()), symbolic_trace(Net())
    assert first.code == second.code and first._source_file == second._source_file
    other = symbolic_trace(lambda x: x - 1)
    assert other._source_file != first._source_file
    assert first._source_file.startswith("<eval_with_key>.")
    assert first._source_file.endswith(
        f" from {support.__file__}:{Net.forward.__code__.co_firstlineno} in forward"
    )
    name = register_source("def forward(self):\n    return 1\n")
    linecache.checkcache()
    linecache.checkcache(name)
    assert linecache.getline(name, 2) == "    return 1\n"


def test_a_source_that_does_not_compile_gets_a_note_with_its_line():
    with pytest.raises(SyntaxError) as info:
        compile_forward(PythonCode("\n\n\ndef forward(self, x):\n    y = = x\n    return y\n", {}))
    assert info.value.__notes__ == [
        "The generated code of this graph does not compile; line 5 is:\n    y = = x\n"
        "print the code with minifx.codegen.python_code(graph).src, and fix the graph's node."
    ]


class Fails(torch.nn.Module):
    def forward(self, x):
        raise ValueError("inside a plain submodule")


def explode(x):
    raise ZeroDivisionError("inside a wrapped function")


torch.fx.wrap("explode")


def calls_explode(x):
    return explode(x + 1) * 2


def calls_fails() -> GraphModule:
    g = minifx.graph.Graph()
    g.output(g.call_module("fails", (g.call_function(operator.add, (g.placeholder("x"), 1)),)))
    return GraphModule({"fails": Fails()}, g, "CallsFails")


@pytest.mark.parametrize(
    "make, error, note",
    [
        (
            calls_fails,
            ValueError,
            "While running node %fails (call_module fails) in the generated forward of CallsFails, "
            "line 6:\n    fails = self.fails(add);  add = None\n",
        ),
        (
            lambda: symbolic_trace(calls_explode),
            ZeroDivisionError,
            "While running node %explode (call_function tests.codegen.test_source.explode) in the generated forward of "
            "calls_explode, line 6:\n    explode = tests_codegen_test_source_explode(add);  add = None\n",
        ),
    ],
    ids=["submodule", "wrapped-function"],
)
def test_an_error_deeper_down_names_the_node_whose_line_called_it(make, error, note):
    gm = make()
    with pytest.raises(error) as info:
        gm(torch.ones(1))
    assert len(info.value.__notes__) == 1 and info.value.__notes__[0].startswith(note)


def test_an_error_in_a_line_freeing_values_still_names_its_node():
    # The note maps the failing line, not a column: `a = x + y;  x = y = None` is one node.
    g = minifx.graph.Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    g.output(g.call_function(operator.add, (x, y)))
    gm = GraphModule(torch.nn.Module(), g)
    with pytest.raises(RuntimeError) as info:
        gm(torch.ones(2), torch.ones(3))
    assert info.value.__notes__[0].startswith(
        "While running node %add (call_function operator.add) in the generated forward of GraphModule, "
        "line 5:\n    add = x + y;  x = y = None\n"
    )


# -- imports for pickling and to_folder -------------------------------------------------


class Helpers:
    @staticmethod
    def double(x):
        return x * 2

    class Inner:
        @staticmethod
        def triple(x):
            return x * 3


def keep(x, constant):
    return x


def test_import_block_reaches_nested_functions_and_skips_builtins():
    g = minifx.graph.Graph()
    y = g.call_function(Helpers.double, (g.placeholder("x"),))
    z = g.call_function(Helpers.Inner.triple, (y,))
    g.output(g.call_function(abs, (g.call_function(getattr, (z, "real")),)))
    code = python_code(g)
    block = import_block(code.globals)
    assert (
        "from tests.codegen.test_source import Helpers as tests_codegen_test_source_triple; "
        "tests_codegen_test_source_triple = tests_codegen_test_source_triple.Inner.triple"
    ) in block.split("\n")
    assert "import torch" in block.split("\n") and "abs" not in block and "getattr" not in block
    gm = GraphModule(torch.nn.Module(), g)
    loaded = pickle.loads(pickle.dumps(gm))
    assert loaded(-1) == 6


def test_unpickling_traces_through_functions_that_are_not_wrapped():
    # Unpickling retraces the saved source: a call_function of a plain Python function
    # becomes that function's operations (`x * 2`), as torch.fx's unpickling does.
    def build(Graph, GraphModule):
        g = Graph()
        g.output(
            g.call_function(
                Helpers.Inner.triple, (g.call_function(Helpers.double, (g.placeholder("x"),)),)
            )
        )
        return pickle.loads(pickle.dumps(GraphModule(torch.nn.Module(), g)))

    loaded = build(minifx.graph.Graph, GraphModule)
    assert loaded(torch.tensor(1.0)).item() == 6.0
    assert "mul = x * 2;  x = None\n    mul_1 = mul * 3" in loaded.code
    # minifx differs on purpose: torch.fx writes `from m import Helpers.Inner.triple as
    # ...`, which is not Python, so it cannot unpickle a call to a nested function.
    with pytest.raises(SyntaxError):
        build(torch.fx.Graph, torch.fx.GraphModule)


def test_a_tensor_constant_in_the_code_cannot_be_pickled():
    g = minifx.graph.Graph()
    g.output(g.call_function(keep, (g.placeholder("x"), torch.ones(1))))
    with pytest.raises(pickle.PicklingError) as info:
        pickle.dumps(GraphModule(torch.nn.Module(), g))
    message = str(info.value)
    assert message.startswith("The generated code refers to _tensor_constant = tensor([1.]), ")
    assert message.endswith("keep tensors as buffers reached through get_attr.")


@pytest.mark.parametrize("function, error", [(max, ValueError), (len, RuntimeError)])
def test_unpickling_retraces_so_a_builtin_that_cannot_take_a_proxy_fails_as_in_torch_fx(
    function, error
):
    # A limit shared with torch.fx: unpickling rebuilds the graph by tracing the saved
    # source, and max() or len() of a Proxy cannot be traced. Both libraries raise the
    # same type (minifx's TraceError is a ValueError, its len() error a RuntimeError too).
    for Graph, Module in (
        (torch.fx.Graph, torch.fx.GraphModule),
        (minifx.graph.Graph, GraphModule),
    ):
        g = Graph()
        g.output(g.call_function(function, (g.placeholder("x"),)))
        saved = pickle.dumps(Module(torch.nn.Module(), g))
        with pytest.raises(error):
            pickle.loads(saved)


class Dot(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(5))

    def forward(self, x):
        return torch.dot(self.w, x)


def test_an_error_in_forward_gets_a_note_where_torch_fx_prints_to_stderr(capfd):
    """Chapter 3's box: an error inside `forward` keeps its traceback and gets a note naming
    the node; torch.fx prints the generated lines to stderr instead."""
    notes = {}
    for library in (torch.fx, minifx):
        gm = library.symbolic_trace(Dot())
        with pytest.raises(TypeError) as error:
            gm(5)  # not a tensor
        notes[library.__name__] = (getattr(error.value, "__notes__", []), capfd.readouterr().err)
    assert "Call using an FX-traced Module" in notes["torch.fx"][1] and not notes["torch.fx"][0]
    assert notes["minifx"][1] == ""
    assert notes["minifx"][0][0].startswith("While running node %dot (call_function torch.dot)")
