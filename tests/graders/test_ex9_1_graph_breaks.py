"""Grader for exercise 9.1: Count graph breaks.

The grader compiles each program below with the student's backend,
`torch.compile(fn, backend=counter)`, calls it, and compares what the counter saw with
golden summaries, written out once from the graphs TorchDynamo hands a backend in torch
2.13, and with `torch._dynamo.explain`, torch's own report of the graphs and breaks of a
call. Dynamo's caches are cleared before each compilation (`torch._dynamo.reset()`), so
every test sees Dynamo compile from scratch.
"""

import operator

import pytest
import torch
import torch._dynamo
from torch import nn

from tests.graders.ex9_1_programs import (
    branch,
    explicit,
    loop,
    mlp,
    nothing,
    shift,
    straight,
    two_breaks,
)
from tests.graders.support import (
    describe_error,
    explain,
    not_plain,
    safe_repr,
    stub_hint,
    tensors_close,
)

pytestmark = pytest.mark.ch9

SEE = "chapters/09-limits.md#exercise-91-count-graph-breaks"
SEE_DYNAMO = "chapters/09-limits.md#what-came-after-torchdynamo-and-torchcompile"


def _warm_up() -> None:
    """Compile once at import, before graded code runs: Dynamo's first compilation patches
    torch (TorchPatcher) and imports its helpers, which the grading's guard would otherwise
    count against the first test."""

    def backend(gm, example_inputs):
        return gm.forward

    torch.compile(lambda x: torch.relu(x) + 1, backend=backend)(torch.ones(1))
    torch._dynamo.explain(lambda x: x.sin())(torch.ones(1))
    torch._dynamo.reset()


_warm_up()


@pytest.fixture
def ex(impl):
    return impl.load("ch9_graph_breaks")


# --- the programs (in ex9_1_programs.py), their arguments and golden summaries ------

ONES = torch.ones(3)
# name -> (the program, its arguments, the golden summaries: (inputs, ops) per graph)
CASES = {
    "straight": (straight, (ONES,), [(1, ("relu", "mul", "sum", "add"))]),
    "branch": (branch, (ONES,), [(1, ("relu", "mul", "sum", "gt")), (1, ("add",))]),
    "explicit": (explicit, (ONES,), [(1, ("sin",)), (1, ("cos", "add"))]),
    "two_breaks": (two_breaks, (ONES,), [(1, ("add",)), (1, ("mul",)), (1, ("sub",))]),
    "loop": (loop, (ONES,), [(1, ("mul", "mul", "mul"))]),
    "mlp": (mlp, (torch.ones(2, 4),), [(5, ("linear", "relu", "linear"))]),
    "nothing": (nothing, (ONES,), []),
}  # fmt: skip


# --- compiling with the student's backend ---------------------------------------------


def _program(name: str):
    fn = CASES[name][0]
    return fn() if fn is mlp else fn


def _compile(ex, fn, counter=None):
    """(counter, compiled fn): a fresh counter (or `counter`) as `fn`'s backend."""
    torch._dynamo.reset()
    if counter is None:
        counter, error = _call(ex.GraphCounter)
        if error is not None:
            _fail_error("GraphCounter() makes a counter", error)
    return counter, torch.compile(fn, backend=counter)


def _call(fn, *args):
    try:
        return fn(*args), None
    except Exception as error:  # graded code: any error becomes a message
        return None, error


def _run(what: str, compiled, *args):
    """compiled(*args), or a failure that shows what the backend raised."""
    output, error = _call(compiled, *args)
    if error is not None:
        _fail_error(what, getattr(error, "inner_exception", None) or error)
    return output


def _fail_error(what: str, error: Exception) -> None:
    if isinstance(error, AssertionError) and "did not return callable" in str(error):
        hint = (
            "the backend must return a callable that runs the graph: return gm.forward "
            "(it returned something that cannot be called, or nothing)."
        )
        got = "Dynamo: compiler_fn did not return callable"
    else:
        hint = stub_hint(error, "GraphCounter.__call__ and summarize")
        got = describe_error(error)
    pytest.fail(explain(what, got, hint, SEE), pytrace=False)


def _graphs(counter) -> list:
    graphs = getattr(counter, "graphs", None)
    if type(graphs) is not list:
        pytest.fail(
            explain(
                "counter.graphs: a list with a GraphSummary per graph",
                safe_repr(graphs, 300),
                "keep the list the given __init__ makes, and append to it in __call__.",
                SEE,
            ),
            pytrace=False,
        )
    return graphs


def _hint(ex, got: list, want: list) -> str:
    """The hint for the first graph whose summary is wrong."""
    if len(got) != len(want):
        return (
            "record one summary per call of the backend: Dynamo calls it once per graph, "
            f"and it was handed {len(want)} graph(s) here."
        )
    for summary, (inputs, ops) in zip(got, want):
        if not isinstance(summary, ex.GraphSummary):
            return (
                "append summarize(gm), a GraphSummary, to self.graphs; not "
                f"{type(summary).__name__}."
            )
        if summary.ops != ops:
            return _ops_hint(summary.ops, ops)
        if summary.inputs != inputs:
            return (
                f"inputs counts the placeholder nodes of the graph ({inputs} here); "
                f"your summary says {summary.inputs!r}."
            )
    return "compare the summaries graph by graph."


def _ops_hint(got, want) -> str:
    got = tuple(got) if isinstance(got, (list, tuple)) else got
    if not isinstance(got, tuple) or not all(isinstance(op, str) for op in got):
        return "ops is a tuple of strings, one per call_* node."
    if any(op.startswith("<") or "." in op for op in got):
        return (
            "name a function by its __name__ (torch.relu -> 'relu', operator.mul -> 'mul'); "
            "str(node.target) is its repr."
        )
    if len(got) > len(want):
        return "ops lists only the call_function, call_method and call_module nodes."
    if set(got) < set(want):
        missing = [op for op in want if op not in got]
        return (
            f"{missing[0]!r} is missing: a method call such as x.sum() is a call_method node, "
            "a module call a call_module node; list every call_* node."
        )
    return "list the ops in graph order, one per call_* node."


def _rows(summaries: list) -> list | None:
    """The summaries as plain tuples (inputs, ops), or None where one is not plain: an
    object of graded code's could answer == with True for any summary."""
    rows = [tuple(s) if isinstance(s, tuple) else s for s in summaries]
    return rows if type(summaries) is list and not_plain(rows) is None else None


def _check(ex, name: str, counter, want: list) -> None:
    got = _graphs(counter)
    expected = [ex.GraphSummary(inputs, ops) for inputs, ops in want]
    same = _rows(got) == [(inputs, tuple(ops)) for inputs, ops in want]
    if not same or not all(isinstance(s, ex.GraphSummary) for s in got):
        pytest.fail(
            explain(
                f"the graphs handed to the backend for {name}: {expected}",
                safe_repr(got, 600),
                _hint(ex, got, want),
                SEE,
            ),
            pytrace=False,
        )


def _breaks(counter) -> object:
    breaks, error = _call(counter.graph_breaks)
    if error is not None:
        _fail_error("counter.graph_breaks() returns the number of graph breaks", error)
    return breaks


def _breaks_hint(breaks, graphs: int) -> str:
    if breaks == graphs:
        return "a break sits between two graphs: n graphs means n - 1 breaks, not n."
    if graphs == 0:
        return "with no graph at all there is no break either: return 0, not a negative count."
    return "count the breaks from the graphs this counter was handed: one fewer than the graphs."


# --- tests ----------------------------------------------------------------------------


def test_the_backend_runs_the_graph(ex):
    counter, compiled = _compile(ex, straight)
    x = torch.randn(5)
    got = _run("compiled(x) runs with your backend", compiled, x)
    if not tensors_close(got, straight(x)):
        pytest.fail(
            explain(
                "the compiled function returns what the eager one returns",
                repr(got)[:300],
                "return gm.forward, the graph's own generated code, so that the compiled "
                "function still computes the same values.",
                SEE,
            ),
            pytrace=False,
        )


@pytest.mark.parametrize("name", [name for name, case in CASES.items() if case[2]])
def test_summaries_of_each_graph(ex, name):
    fn, args, want = CASES[name]
    counter, compiled = _compile(ex, _program(name))
    _run(f"the compiled {name} runs", compiled, *args)
    _check(ex, name, counter, want)


def test_the_other_branch_is_compiled_when_first_taken(ex):
    counter, compiled = _compile(ex, branch)
    _run("the compiled branch runs", compiled, ONES)
    _run("the compiled branch runs", compiled, -ONES)
    _run("the compiled branch runs", compiled, ONES)  # both branches compiled: nothing new
    want = [(1, ("relu", "mul", "sum", "gt")), (1, ("add",)), (1, ("sub",))]
    _check(ex, "branch, called on ones, -ones and ones again", counter, want)


def test_a_python_value_is_a_guard_not_a_break(ex):
    counter, compiled = _compile(ex, shift)
    for flag in (True, True, False):
        _run("the compiled shift runs", compiled, ONES, flag)
    _check(
        ex,
        "shift(x, True), shift(x, True), shift(x, False)",
        counter,
        [(1, ("add",)), (1, ("sub",))],
    )


@pytest.mark.parametrize("name", ["straight", "branch", "two_breaks", "nothing"])
def test_graph_breaks_agree_with_explain(ex, name):
    fn, args, want = CASES[name]
    counter, compiled = _compile(ex, fn)
    _run(f"the compiled {name} runs", compiled, *args)
    breaks = _breaks(counter)
    torch._dynamo.reset()
    report = torch._dynamo.explain(fn)(*args)
    expected = max(report.graph_break_count, 0)  # explain says -1 when it saw no graph
    assert report.graph_count == len(want)  # the golden summaries are what explain sees
    if breaks != expected or type(breaks) is not int:
        pytest.fail(
            explain(
                f"counter.graph_breaks() for {name}: {expected}, as torch._dynamo.explain "
                f"reports ({report.graph_count} graph(s))",
                repr(breaks)[:200],
                _breaks_hint(breaks, report.graph_count),
                SEE_DYNAMO,
            ),
            pytrace=False,
        )


def test_the_summary_names_targets_not_nodes(ex):
    """summarize on a graph built by hand: a method, a function, a module."""
    root = nn.Module()
    root.lin = nn.Linear(2, 2)
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    y = graph.placeholder("y")
    a = graph.call_module("lin", (x,))
    b = graph.call_function(operator.add, (a, y))
    c = graph.call_method("relu", (b,))
    graph.output(c)
    gm = torch.fx.GraphModule(root, graph)
    got, error = _call(ex.summarize, gm)
    if error is not None:
        _fail_error("summarize(gm) of a graph with a module, a function and a method", error)
    want = ex.GraphSummary(2, ("lin", "add", "relu"))
    if not isinstance(got, ex.GraphSummary) or _rows([got]) != [(2, ("lin", "add", "relu"))]:
        pytest.fail(
            explain(
                f"summarize(gm) of lin(x) + y, then .relu(): {want}",
                repr(got)[:300],
                _ops_hint(getattr(got, "ops", None), want.ops)
                if getattr(got, "ops", None) != want.ops
                else "inputs counts the placeholder nodes: x and y.",
                SEE,
            ),
            pytrace=False,
        )
