"""Grader for exercise 8.1: PTQ observers.

Expected values are golden or computed on the grader's side: the relus of each model and
the graph after the pass are written out below; the true min and max of each relu's value
over the calibration batches are recorded by a torch.fx Interpreter running the grader's
own copy of the model, and the calibration loop is the grader's copy of the given one.
Before anything runs, the observers the student's pass put in are checked one by one, so
that a broken observer (one that reads itself, say) is named, with the line that made it.
The exercise says write the pass: handing the work to minifx's own quantization helpers fails.
"""

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

import minifx.passes.quantize as quantize
from minifx.codegen import GraphModule, symbolic_trace
from minifx.graph import Graph, Node
from minifx.passes.quantize import MinMaxObserver
from tests.graders.support import (
    Delegated,
    describe_error,
    error_line,
    explain,
    explain_graphs,
    graph_text,
    not_plain,
    oracle_lines,
    refuse_methods_of_its_own,
    refusing,
    replace_for_student,
    running_line,
    safe_repr,
    stub_hint,
    summarize_error,
    tensors_equal,
)

pytestmark = pytest.mark.ch8

SEE = "chapters/08-quantization.md#exercise-81-ptq-observers"
SEE_PREPARE = "chapters/08-quantization.md#prepare-observers-in-the-graph"


@pytest.fixture
def ex(impl):
    return impl.load("ch8_ptq_observers")


# --- the grader's own copy of the given code ------------------------------------------


def _calibrate(gm, batches) -> None:
    """The given `calibrate`, copied: the student may edit theirs."""
    with torch.no_grad():
        for batch in batches:
            gm(batch)


# --- models ---------------------------------------------------------------------------


class Spellings(nn.Module):
    """The four spellings of a relu, two relus used twice, and two look-alikes (ReLU6, sigmoid)."""

    def __init__(self):
        super().__init__()
        self.fc1, self.act, self.fc2, self.six = (
            nn.Linear(8, 16),
            nn.ReLU(),
            nn.Linear(16, 16),
            nn.ReLU6(),
        )

    def forward(self, x):
        a = torch.relu(self.fc1(x))
        b = F.relu(a - 0.5)
        c = self.act(b * 2 - 1)
        d = (self.fc2(c) - 0.2).relu()
        e = self.six(d * 10) + torch.sigmoid(d)
        return e + a


class ReluOut(nn.Module):
    """A relu that is the output."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return F.relu(self.conv(x))


class LookAlikes(nn.Module):
    """No relu: an nn.ReLU6 named `relu`, in-place relus (function and method), a leaky relu,
    relu6 and sigmoid."""

    def __init__(self):
        super().__init__()
        self.relu, self.leaky = nn.ReLU6(), nn.LeakyReLU()

    def forward(self, x):
        a = self.relu(x * 8) + torch.relu_(x.clone()) + x.clone().relu_()
        return torch.sigmoid(a) * F.relu6(self.leaky(x))


MODELS = {
    "spellings": (Spellings, (4, 8)),
    "relu output": (ReluOut, (2, 3, 6, 6)),
    "look-alikes": (LookAlikes, (5,)),
}
RELUS = {
    "spellings": ["relu", "relu_1", "act", "relu_2"],
    "relu output": ["relu"],
    "look-alikes": [],
}

SPELLINGS_AFTER = """\
graph():
    %x : [num_users=1] = placeholder[target=x]
    %fc1 : [num_users=1] = call_module[target=fc1](args = (%x,), kwargs = {})
    %relu : [num_users=1] = call_function[target=torch.relu](args = (%fc1,), kwargs = {})
    %relu_observer : [num_users=2] = call_module[target=relu_observer](args = (%relu,), kwargs = {})
    %sub : [num_users=1] = call_function[target=operator.sub](args = (%relu_observer, 0.5), kwargs = {})
    %relu_1 : [num_users=1] = call_function[target=torch.nn.functional.relu](args = (%sub,), kwargs = {inplace: False})
    %relu_1_observer : [num_users=1] = call_module[target=relu_1_observer](args = (%relu_1,), kwargs = {})
    %mul : [num_users=1] = call_function[target=operator.mul](args = (%relu_1_observer, 2), kwargs = {})
    %sub_1 : [num_users=1] = call_function[target=operator.sub](args = (%mul, 1), kwargs = {})
    %act : [num_users=1] = call_module[target=act](args = (%sub_1,), kwargs = {})
    %act_observer : [num_users=1] = call_module[target=act_observer](args = (%act,), kwargs = {})
    %fc2 : [num_users=1] = call_module[target=fc2](args = (%act_observer,), kwargs = {})
    %sub_2 : [num_users=1] = call_function[target=operator.sub](args = (%fc2, 0.2), kwargs = {})
    %relu_2 : [num_users=1] = call_method[target=relu](args = (%sub_2,), kwargs = {})
    %relu_2_observer : [num_users=2] = call_module[target=relu_2_observer](args = (%relu_2,), kwargs = {})
    %mul_1 : [num_users=1] = call_function[target=operator.mul](args = (%relu_2_observer, 10), kwargs = {})
    %six : [num_users=1] = call_module[target=six](args = (%mul_1,), kwargs = {})
    %sigmoid : [num_users=1] = call_function[target=torch.sigmoid](args = (%relu_2_observer,), kwargs = {})
    %add : [num_users=1] = call_function[target=operator.add](args = (%six, %sigmoid), kwargs = {})
    %add_1 : [num_users=1] = call_function[target=operator.add](args = (%add, %relu_observer), kwargs = {})
    return add_1"""


def _setup(case: str, device: str = "cpu"):
    build, shape = MODELS[case]
    torch.manual_seed(0)
    model = build().eval().to(device)
    generator = torch.Generator().manual_seed(1)
    batches = [(torch.randn(shape, generator=generator) * (i + 1)).to(device) for i in range(3)]
    return model, batches


def _true_ranges(model: nn.Module, batches: list[torch.Tensor], relus: list[str]) -> dict:
    """min and max of each relu's value over the batches, from a torch.fx Interpreter."""
    values: dict[str, list[torch.Tensor]] = {name: [] for name in relus}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            value = super().run_node(n)
            if n.name in values:
                values[n.name].append(value)
            return value

    recorder = Recorder(torch.fx.symbolic_trace(model))
    with torch.no_grad():
        for batch in batches:
            recorder.run(batch)
    return {
        name: (min(v.min().item() for v in vs), max(v.max().item() for v in vs))
        for name, vs in values.items()
    }


# --- where student code went wrong ----------------------------------------------------

# minifx's own quantization helpers, which the exercise asks you to write yourself. Its
# `_observe` and `prepare` are caught when called: their names are in "_observer" and prose.
ORACLE = ("_fused_relu", "_FUSED_RELUS", "prepare_fx", "quantize_fx")
HELPERS = ("_fused_relu", "_observe", "prepare")


def _yourself(uses: str):
    pytest.fail(
        explain(
            "is_relu and insert_relu_observers written in the exercise itself",
            f"your code uses {uses}",
            "write it yourself, as the exercise asks: minifx.passes.quantize's private "
            "helpers (the relu check of its fusion, its observer insertion, prepare) "
            "are what you reimplement; only MinMaxObserver is given.",
            SEE,
        ),
        pytrace=False,
    )


def _guard(ex, monkeypatch) -> None:
    """Fail if the student's source names minifx's helpers; replace them by stand-ins that refuse."""
    uses = oracle_lines(ex, ORACLE)
    if uses:
        _yourself(uses)
    for name in HELPERS:
        replace_for_student(monkeypatch, quantize, name, refusing(name), ex)


def _call(fn, *args, what: str, stub: str):
    """`fn(*args)`; if it raises, a failed test that names the student's line."""
    try:
        return fn(*args)
    except Delegated as error:
        _yourself(f"minifx's {error} at {error_line(error)}")
    except Exception as raised:  # student code: any error becomes a message
        error = raised
    pytest.fail(
        explain(f"{what} runs", describe_error(error), stub_hint(error, stub), SEE), pytrace=False
    )


# --- is_relu --------------------------------------------------------------------------


def _relu_hint(gm, node: Node, said: bool) -> str:
    """The hint for is_relu's answer `said` about `node`, which is wrong."""
    module = gm.get_submodule(node.target) if node.op == "call_module" else None
    if not said:  # a relu that was missed
        if node.op == "call_method":
            return (
                "x.relu() records a call_method node whose target is the string 'relu' "
                f"(%{node.name})."
            )
        if node.op == "call_module":
            return (
                f"%{node.name} calls the submodule {node.target!r}, an nn.ReLU: a call_module "
                "node's target is the submodule's name; check the submodule's type, "
                "gm.get_submodule(node.target)."
            )
        if node.target is F.relu:
            return (
                f"%{node.name} calls F.relu: F.relu is another function than torch.relu, and "
                "both are relus."
            )
        return f"%{node.name} is a call_function of torch.relu."
    if node.op == "call_module":
        return (
            f"%{node.name} calls the submodule {node.target!r}, a {type(module).__name__}: "
            "check the submodule's type (isinstance nn.ReLU), not its name."
        )
    if (
        isinstance(node.target, str)
        and node.target.endswith("_")
        or getattr(node.target, "__name__", "").endswith("_")
    ):
        return (
            f"%{node.name} ({node.target if isinstance(node.target, str) else node.target.__name__}) "
            "works in place: it is not one of the four spellings of a relu."
        )
    return f"%{node.name} ({node.op}) is not a relu: only the four spellings of a relu are."


# --- insert_relu_observers, and the observers it put in --------------------------------


def _insert(ex, model, monkeypatch) -> tuple:
    """(gm, names): the student's pass run on the model's GraphModule, its observers checked."""
    _guard(ex, monkeypatch)
    gm = symbolic_trace(model)
    loops: dict[str, str] = {}  # node name -> the student's line that made it read itself
    original = Node._set_args_kwargs

    def recording(node, *args, **kwargs):
        original(node, *args, **kwargs)
        if node in node.all_input_nodes and node.name not in loops:
            loops[node.name] = running_line()

    monkeypatch.setattr(Node, "_set_args_kwargs", recording)
    names = _call(
        ex.insert_relu_observers, gm, what="insert_relu_observers(gm)", stub="insert_relu_observers"
    )
    monkeypatch.setattr(Node, "_set_args_kwargs", original)
    refuse_methods_of_its_own(gm, "gm after insert_relu_observers", SEE_PREPARE)
    problem = _observer_problem(gm, names, loops, RELUS[_case_of(model)])
    if problem:
        expected, got, hint = problem
        pytest.fail(explain(expected, got, hint, SEE_PREPARE), pytrace=False)
    return gm, names


def _case_of(model) -> str:
    return next(case for case, (build, _) in MODELS.items() if type(model) is build)


def _observer_problem(gm, names, loops: dict, relus: list[str]) -> tuple | None:
    """(expected, got, hint) for the first observer that is wrong, or None."""
    nodes = {node.name: node for node in gm.graph.nodes}
    observers = [
        n
        for n in gm.graph.nodes
        if n.op == "call_module" and isinstance(getattr(gm, str(n.target), None), MinMaxObserver)
    ]
    for node in gm.graph.nodes:  # first: an observer that reads itself
        if node in node.all_input_nodes:
            line = loops.get(node.name, "(a line of your code)")
            return (
                f"%{node.name} reads the relu it observes",
                f"%{node.name} reads itself: {node.format_node()}",
                f"%{node.name} reads itself, so its value is needed before it is computed; "
                f"your line {line} made it so. When you move the relu's users onto the "
                "observer, leave the observer itself out (replace_all_uses_with's "
                "delete_user_cb).",
            )
    want = [f"{relu}_observer" for relu in relus]
    # Exact types: a list or str of graded code's own could answer == with True.
    if type(names) is not list or not_plain(names, (str,)) is not None:
        return (
            f"the observers' names {want}",
            repr(names),
            "return the list of the observers' names (str), in graph order.",
        )
    for relu in relus:
        node = nodes[relu]
        watching = [o for o in observers if o.args[:1] == (node,)]
        name = f"{relu}_observer"
        if not watching:
            other = nodes.get(name)
            if other is not None and other.op == "call_module":
                return (
                    f"%{name} calls a MinMaxObserver on %{relu}",
                    f"{other.format_node()}; submodule {type(getattr(gm, name, None)).__name__}",
                    "register the observer (gm.add_submodule(name, MinMaxObserver())) and call "
                    "it on the relu: gm.graph.call_module(name, (relu,)).",
                )
            return (
                f"a call_module node of a MinMaxObserver named {name} reading %{relu}",
                f"no observer reads %{relu}",
                f"every relu gets an observer: is %{relu} one of the four spellings your "
                "is_relu recognizes?",
            )
        observer = watching[0]
        if observer.target != name:
            return (
                f"the observer of %{relu} named {name}",
                f"named {observer.target}",
                "name each observer f'{relu.name}_observer'.",
            )
        if observer.args != (node,) or observer.kwargs:
            return (
                f"%{name} reads %{relu} only",
                observer.format_node(),
                "call the observer on the relu alone: gm.graph.call_module(name, (relu,)).",
            )
        order = list(gm.graph.nodes)
        if order.index(observer) < order.index(node):
            return (
                f"%{name} right after %{relu}",
                f"%{name} comes before %{relu}",
                "insert the observer right after the relu it observes "
                "(gm.graph.inserting_after(relu)): before it, the relu has no value yet.",
            )
        others = [f"%{u.name}" for u in node.users if u is not observer]
        if others:
            return (
                f"%{relu} read by %{name} only",
                f"{', '.join(others)} still reads the relu",
                f"{', '.join(others)} still reads the relu %{relu}: move every other user of "
                "the relu onto the observer (replace_all_uses_with, leaving the observer out).",
            )
    extra = [o for o in observers if o.args[:1] and getattr(o.args[0], "name", None) not in relus]
    if extra:
        watched = extra[0].args[0]
        return (
            "observers after the relus only",
            f"%{extra[0].name} observes %{watched.name}",
            f"%{watched.name} ({watched.op} {getattr(watched.target, '__name__', watched.target)}) "
            "is not a relu; check is_relu.",
        )
    if names != want:
        return (
            f"the observers' names {want}, in graph order",
            repr(names),
            "return each observer's name, f'{relu.name}_observer', in graph order.",
        )
    if any(f"self.{name}(" not in gm.code for name in names):
        return (
            "gm.code calls every observer",
            "gm.code is the code of the graph before the pass",
            "call gm.recompile() after editing the graph: the forward still runs the old code.",
        )
    return None


def _run(run, what: str):
    """`run()`, the graph the student's pass left; if it raises, a failed test that says so."""
    try:
        with torch.no_grad():
            return run()
    except Exception as error:  # generated from the student's graph
        pytest.fail(
            explain(
                f"{what} runs",
                summarize_error(error),
                "print(gm.graph) and gm.code: every node must read values computed "
                "before it, and every call_module target must be a submodule of gm.",
                SEE_PREPARE,
            ),
            pytrace=False,
        )


# --- the tests --------------------------------------------------------------------------


@pytest.mark.parametrize("case", list(MODELS))
def test_is_relu_finds_the_relus_and_nothing_else(ex, case, monkeypatch):
    _guard(ex, monkeypatch)
    model, _ = _setup(case)
    gm = symbolic_trace(model)
    said = {
        node.name: _call(ex.is_relu, gm, node, what=f"is_relu(gm, %{node.name})", stub="is_relu")
        for node in gm.graph.nodes
    }
    got = [name for name, yes in said.items() if yes is True]
    wrong = [
        node for node in gm.graph.nodes if (node.name in RELUS[case]) != (said[node.name] is True)
    ]
    odd = next((name for name, yes in said.items() if type(yes) is not bool), None)
    if odd is not None:
        hint = (
            f"is_relu returns True or False, a bool: for %{odd} it returned {safe_repr(said[odd])}."
        )
    else:
        hint = _relu_hint(gm, wrong[0], said[wrong[0].name]) if wrong else ""
    assert odd is None and not wrong and got == RELUS[case], explain(
        f"is_relu true for {RELUS[case]} of the {case} model", f"true for {got}", hint, SEE
    )


def test_observers_follow_every_relu_in_the_graph(ex, monkeypatch):
    model, _ = _setup("spellings")
    gm, _ = _insert(ex, model, monkeypatch)
    gm.graph.lint()
    got = graph_text(gm.graph, "the graph after insert_relu_observers", SEE_PREPARE)
    assert got == SPELLINGS_AFTER, explain_graphs(
        "the graph after insert_relu_observers",
        SPELLINGS_AFTER,
        got,
        "insert each observer right after its relu, and move every other user of the relu onto it.",
        SEE_PREPARE,
    )


@pytest.mark.parametrize("case", list(MODELS))
def test_observers_are_registered_submodules(ex, case, monkeypatch):
    model, _ = _setup(case)
    gm, names = _insert(ex, model, monkeypatch)
    called = [
        node.target for node in gm.graph.nodes if node.op == "call_module" and node.target in names
    ]
    modules = {
        name: type(gm.get_submodule(name)).__name__ if hasattr(gm, name) else "missing"
        for name in names
    }
    assert called == names and all(
        isinstance(getattr(gm, n, None), MinMaxObserver) for n in names
    ), explain(
        f"a MinMaxObserver submodule and one call_module node for each of {names}",
        f"submodules {modules}, called {called}",
        "gm.add_submodule(name, MinMaxObserver()), then gm.graph.call_module(name, (relu,)).",
        SEE,
    )


@pytest.mark.parametrize("case", list(MODELS))
def test_outputs_are_unchanged(ex, case, device, monkeypatch):
    model, batches = _setup(case, device)
    gm, _ = _insert(ex, model, monkeypatch)
    got = _run(lambda: gm(batches[0]), "gm(x), the GraphModule after insert_relu_observers,")
    with torch.no_grad():
        want = model(batches[0])
    assert tensors_equal(got, want), explain(
        "the same output as the model: an observer returns its input",
        "a different output",
        "does every old user of the relu now read the observer, and the observer read the relu?",
        SEE,
    )


def _ranges(ex, gm) -> dict:
    return _call(ex.observed_ranges, gm, what="observed_ranges(gm)", stub="observed_ranges")


def _ranges_hint(got, want: dict, observed: dict[str, str]) -> str:
    """The hint for ranges `got` that are not `want`; `observed`: observer name -> observed node."""
    if not isinstance(got, dict):
        return "observed_ranges returns a dict: observed node's name -> (min, max)."
    by_observer = [k for k in got if k in observed and k not in want]
    if by_observer:
        return (
            f"key each range by the name of the observed node (the observer's argument, "
            f"here {observed[by_observer[0]]!r}), not by the observer's name {by_observer[0]!r}."
        )
    if set(got) != set(want):
        return (
            f"one entry per MinMaxObserver node of the graph, keyed by the name of the node it "
            f"observes: {sorted(want)}, not {sorted(got)}."
        )
    for key, value in got.items():
        if not (isinstance(value, tuple) and len(value) == 2):
            return f"each value is a pair (min, max); for {key!r} it is {value!r}."
        if not all(type(v) is float for v in value):
            return (
                f"the values are floats: observer.min_val.item(), not the tensor itself "
                f"({key!r}: {value!r})."
            )
        if value == want[key][::-1]:
            return f"each pair is (min, max), in that order ({key!r})."
    return "read each observer's min_val and max_val after calibration."


def _check_ranges(got, want: dict, observed: dict[str, str], expected: str):
    same = (
        type(got) is dict
        and not_plain(got) is None  # then == compares plain values only
        and got == want
        and all(isinstance(v, tuple) and all(type(x) is float for x in v) for v in got.values())
    )
    assert same, explain(expected, safe_repr(got), _ranges_hint(got, want, observed), SEE)


@pytest.mark.parametrize("case", list(MODELS))
def test_calibration_records_the_true_min_and_max(ex, case, device, monkeypatch):
    model, batches = _setup(case, device)
    gm, names = _insert(ex, model, monkeypatch)
    _run(lambda: _calibrate(gm, batches), "calibrate(gm, batches)")
    want = _true_ranges(model, batches, RELUS[case])
    _check_ranges(
        _ranges(ex, gm),
        want,
        {name: name.removesuffix("_observer") for name in names},
        f"the min and max of each relu's value over the 3 calibration batches: {want}",
    )


def _observed_by_hand():
    """A GraphModule with observers put in by hand: `watch` observes the input, `relu_observer`
    a relu; `identity_observer` is no observer, whatever its name says."""
    graph = Graph()
    x = graph.placeholder("x")
    watch = graph.call_module("watch", (x,))
    relu = graph.call_function(torch.relu, (watch,))
    observer = graph.call_module("relu_observer", (relu,))
    same = graph.call_module("identity_observer", (observer,))
    graph.output(same)
    root = {
        "watch": MinMaxObserver(),
        "relu_observer": MinMaxObserver(),
        "identity_observer": nn.Identity(),
    }
    return GraphModule(root, graph), {"watch": "x", "relu_observer": "relu"}


def test_observed_ranges_reads_every_observer(ex, monkeypatch):
    _guard(ex, monkeypatch)
    gm, observed = _observed_by_hand()
    generator = torch.Generator().manual_seed(2)
    batches = [torch.randn(4, 3, generator=generator) * (i + 1) for i in range(3)]
    _calibrate(gm, batches)
    low, high = min(b.min().item() for b in batches), max(b.max().item() for b in batches)
    want = {"x": (low, high), "relu": (max(low, 0.0), max(high, 0.0))}
    _check_ranges(
        _ranges(ex, gm),
        want,
        observed,
        f"{want}: `watch` observes %x and `relu_observer` %relu; the nn.Identity named "
        "identity_observer is no observer",
    )


def test_ranges_grow_with_more_data(ex, monkeypatch):
    model, batches = _setup("relu output")
    gm, _ = _insert(ex, model, monkeypatch)
    _calibrate(gm, batches[:1])
    first = _ranges(ex, gm)
    _calibrate(gm, batches[1:])
    after = _ranges(ex, gm)
    want = _true_ranges(model, batches, ["relu"])
    _check_ranges(
        after,
        want,
        {"relu_observer": "relu"},
        f"a running range: after three batches, the range over all of them, {want}",
    )
    assert first != after, explain(
        "a running range: after more (larger) batches, a wider range",
        f"{first} after one batch, {after} after three",
        "observed_ranges reads the observers' current min_val and max_val each time it is called.",
        SEE,
    )
