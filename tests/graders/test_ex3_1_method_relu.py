"""Grader for exercise 3.1: method relu.

Expected values are golden: the graphs and the generated code below were
written out once, for the models below, and the node-by-node form of the
torch.fx graph too. The whole transform is run by the grader's own copy of
the given `relu_to_gelu`, which calls the `method_relu_to_gelu` under test;
outputs are checked against the eager models with F.gelu written in.
"""

import textwrap
from itertools import zip_longest

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

from minifx.codegen import symbolic_trace
from tests.graders.support import (
    describe_error,
    explain,
    explain_graphs,
    explain_texts,
    graph_text,
    safe_repr,
    stub_hint,
    summarize_error,
    tensors_close,
)

pytestmark = pytest.mark.ch3

SEE = "chapters/03-codegen.md#exercise-31-method-relu"


@pytest.fixture
def ex(impl):
    return impl.load("ch3_method_relu")


# --- the grader's own copy of the given code ------------------------------------------

RELU_FUNCTIONS = (torch.relu, F.relu)


def _function_relu_to_gelu(node) -> bool:
    """The given `function_relu_to_gelu`, copied: the student may edit theirs."""
    if node.op != "call_function" or node.target not in RELU_FUNCTIONS:
        return False
    if node.kwargs.get("inplace", False):
        return False
    node.target = F.gelu
    node.kwargs = {}
    return True


def _relu_to_gelu(ex, gm, results: list | None = None):
    """The given `relu_to_gelu`, copied, calling the student's `method_relu_to_gelu`
    (what it returns is appended to `results`, where given)."""
    for node in gm.graph.nodes:
        if not _function_relu_to_gelu(node):
            result = _call(ex.method_relu_to_gelu, node, what="method_relu_to_gelu(node)")
            (results if results is not None else []).append(result)
    try:
        gm.recompile()
    except Exception as error:  # the graph the student's edits left cannot be written
        return error
    return None


# --- student code that raises ---------------------------------------------------------


def _call(fn, *args, what: str):
    """`fn(*args)`; if it raises, a failed test that names the student's line."""
    try:
        return fn(*args)
    except Exception as raised:  # student code: any error becomes a message
        error = raised
    pytest.fail(
        explain(
            f"{what} runs", describe_error(error), stub_hint(error, "method_relu_to_gelu"), SEE
        ),
        pytrace=False,
    )


# --- models ---------------------------------------------------------------------------


def _relu(x, gelu: bool, how: str):
    """`x.relu()` or `torch.relu(x)` or `F.relu(x)`; F.gelu(x) in the reference model."""
    if gelu:
        return F.gelu(x)
    if how == "method":
        return x.relu()
    return torch.relu(x) if how == "torch" else F.relu(x)


class Inner(nn.Module):
    def __init__(self, gelu=False):
        super().__init__()
        self.gelu = gelu
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return _relu(self.fc(x), self.gelu, "method")


class Mixed(nn.Module):
    """Every out-of-place relu: a method (twice, once inside a submodule), torch.relu, F.relu,
    and a call_method node that is no relu (sum)."""

    def __init__(self, gelu=False):
        super().__init__()
        self.gelu = gelu
        self.inner = Inner(gelu)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        y = self.inner(x)
        z = _relu(self.fc(y), self.gelu, "torch") + _relu(y, self.gelu, "F").sum(-1, keepdim=True)
        return _relu(z, self.gelu, "method") * 2


class InPlace(nn.Module):
    """In-place relus and an nn.ReLU submodule named `relu` (a call_module node whose target
    is the string 'relu'), which stay, around one x.relu(), which goes."""

    def __init__(self, gelu=False):
        super().__init__()
        self.gelu = gelu
        self.fc = nn.Linear(6, 6)
        self.relu = nn.ReLU()

    def forward(self, x):
        y = self.fc(x).relu_()
        y = F.relu(self.relu(y) - 0.5, inplace=True)
        return _relu(y - 0.5, self.gelu, "method")


class Returned(nn.Module):
    """x.relu() of the input, returned as it is: its only user is the output."""

    def __init__(self, gelu=False):
        super().__init__()
        self.gelu = gelu

    def forward(self, x):
        return _relu(x, self.gelu, "method")


class Chain(nn.Module):
    """Methods on methods: the receiver of one relu is another relu."""

    def __init__(self, gelu=False):
        super().__init__()
        self.gelu = gelu

    def forward(self, x):
        return _relu(_relu(x.neg(), self.gelu, "method"), self.gelu, "method").mean(0)


MODELS = {"mixed": Mixed, "in place": InPlace, "returned": Returned, "chain": Chain}
SHAPES = {"mixed": (3, 8), "in place": (3, 6), "returned": (5,), "chain": (4, 3)}


def _golden(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


# Each model's graph after relu_to_gelu, written out.
GOLDEN = {
    "mixed": _golden("""
        graph():
            %x : [num_users=1] = placeholder[target=x]
            %inner_fc : [num_users=1] = call_module[target=inner.fc](args = (%x,), kwargs = {})
            %relu : [num_users=2] = call_function[target=torch._C._nn.gelu](args = (%inner_fc,), kwargs = {})
            %fc : [num_users=1] = call_module[target=fc](args = (%relu,), kwargs = {})
            %relu_1 : [num_users=1] = call_function[target=torch._C._nn.gelu](args = (%fc,), kwargs = {})
            %relu_2 : [num_users=1] = call_function[target=torch._C._nn.gelu](args = (%relu,), kwargs = {})
            %sum_1 : [num_users=1] = call_method[target=sum](args = (%relu_2, -1), kwargs = {keepdim: True})
            %add : [num_users=1] = call_function[target=operator.add](args = (%relu_1, %sum_1), kwargs = {})
            %relu_3 : [num_users=1] = call_function[target=torch._C._nn.gelu](args = (%add,), kwargs = {})
            %mul : [num_users=1] = call_function[target=operator.mul](args = (%relu_3, 2), kwargs = {})
            return mul
        """),
    "in place": _golden("""
        graph():
            %x : [num_users=1] = placeholder[target=x]
            %fc : [num_users=1] = call_module[target=fc](args = (%x,), kwargs = {})
            %relu_ : [num_users=1] = call_method[target=relu_](args = (%fc,), kwargs = {})
            %relu : [num_users=1] = call_module[target=relu](args = (%relu_,), kwargs = {})
            %sub : [num_users=1] = call_function[target=operator.sub](args = (%relu, 0.5), kwargs = {})
            %relu_1 : [num_users=1] = call_function[target=torch.nn.functional.relu](args = (%sub,), kwargs = {inplace: True})
            %sub_1 : [num_users=1] = call_function[target=operator.sub](args = (%relu_1, 0.5), kwargs = {})
            %relu_2 : [num_users=1] = call_function[target=torch._C._nn.gelu](args = (%sub_1,), kwargs = {})
            return relu_2
        """),
    "returned": _golden("""
        graph():
            %x : [num_users=1] = placeholder[target=x]
            %relu : [num_users=1] = call_function[target=torch._C._nn.gelu](args = (%x,), kwargs = {})
            return relu
        """),
    "chain": _golden("""
        graph():
            %x : [num_users=1] = placeholder[target=x]
            %neg : [num_users=1] = call_method[target=neg](args = (%x,), kwargs = {})
            %relu : [num_users=1] = call_function[target=torch._C._nn.gelu](args = (%neg,), kwargs = {})
            %relu_1 : [num_users=1] = call_function[target=torch._C._nn.gelu](args = (%relu,), kwargs = {})
            %mean : [num_users=1] = call_method[target=mean](args = (%relu_1, 0), kwargs = {})
            return mean
        """),
}  # fmt: skip

GOLDEN_MIXED_CODE = _golden("""
    def forward(self, x):
        inner_fc = self.inner.fc(x);  x = None
        relu = torch._C._nn.gelu(inner_fc);  inner_fc = None
        fc = self.fc(relu)
        relu_1 = torch._C._nn.gelu(fc);  fc = None
        relu_2 = torch._C._nn.gelu(relu);  relu = None
        sum_1 = relu_2.sum(-1, keepdim = True);  relu_2 = None
        add = relu_1 + sum_1;  relu_1 = sum_1 = None
        relu_3 = torch._C._nn.gelu(add);  add = None
        mul = relu_3 * 2;  relu_3 = None
        return mul
    """)  # fmt: skip

# torch.fx's graph of Mixed after the transform, node by node: (name, op, target, args).
GOLDEN_FX_MIXED = [
    ("x", "placeholder", "x", ()),
    ("inner_fc", "call_module", "inner.fc", ("%x",)),
    ("relu", "call_function", "gelu", ("%inner_fc",)),
    ("fc", "call_module", "fc", ("%relu",)),
    ("relu_1", "call_function", "gelu", ("%fc",)),
    ("relu_2", "call_function", "gelu", ("%relu",)),
    ("sum_1", "call_method", "sum", ("%relu_2", "-1")),
    ("add", "call_function", "add", ("%relu_1", "%sum_1")),
    ("relu_3", "call_function", "gelu", ("%add",)),
    ("mul", "call_function", "mul", ("%relu_3", "2")),
    ("output", "output", "output", ("%mul",)),
]


# --- running the transform, and what went wrong ----------------------------------------


def _snapshot(gm) -> dict:
    """name -> (op, target, args, kwargs) of each node, args naming nodes as `%name`."""
    return {n.name: (n.op, n.target, _names(n.args), _names(n.kwargs)) for n in gm.graph.nodes}


def _names(value):
    if isinstance(value, (tuple, list)):
        return tuple(_names(v) for v in value)
    if isinstance(value, dict):
        return {k: _names(v) for k, v in value.items()}
    return f"%{value.name}" if hasattr(value, "graph") and hasattr(value, "op") else repr(value)


def _lines(graph_text: str) -> dict[str, str]:
    """`%name` -> its line, for each node line of a printed graph."""
    return {
        line.split()[0][1:]: line.strip()
        for line in graph_text.splitlines()
        if line.strip().startswith("%")
    }


def _diagnosis(before: dict, golden: str, gm) -> str | None:
    """The hint for the first node that is not what the golden graph says, or None."""
    want = _lines(golden)
    after = {n.name: n for n in gm.graph.nodes}
    for name in after:
        if name not in before:
            return (
                f"your code added the node %{name}: edit the node in place (its op and "
                "target) instead, so that it keeps its name, its place and its users."
            )
    for name, (op, target, args, kwargs) in before.items():
        line = want.get(name)
        node = after.get(name)
        changes = line is not None and "torch._C._nn.gelu" in line and target != F.gelu
        if node is None:
            return (
                f"%{name} is gone: edit the node in place (its op and target) instead of "
                "erasing it, so that it keeps its name, its place and its users."
            )
        now = (node.op, node.target, _names(node.args), _names(node.kwargs))
        if changes and op == "call_method":
            if now[:2] == (op, target):
                return (
                    f"%{name} is still call_method[target=relu]: x.relu() is a call_method "
                    "node whose target is the string 'relu' (not the function torch.relu); "
                    "rewrite it."
                )
            if node.op == "call_method" and node.target is F.gelu:
                return (
                    f"%{name} is call_method with target F.gelu: set node.op = "
                    "'call_function' too; a call_method node calls the method its target "
                    "names on args[0]."
                )
            if node.op == "call_method":
                return (
                    f"%{name} is call_method[target={node.target}]: tensors have no "
                    f"`{node.target}` method; make the node a call_function of F.gelu."
                )
            if node.op != "call_function" or node.target is not F.gelu:
                return (
                    f"%{name} is {node.op} of {node.target!r}: it must be a call_function "
                    "whose target is F.gelu itself, the function (torch._C._nn.gelu)."
                )
            if now[2] != args:
                return (
                    f"%{name}'s args are {now[2]}, not {args}: keep node.args; args[0], "
                    "the tensor x.relu() was called on, is F.gelu's input."
                )
            if now[3] != kwargs:
                return f"%{name}'s kwargs are {now[3]}: keep node.kwargs as they were ({{}})."
        elif not changes and now != (op, target, args, kwargs):
            if op == "call_method" and target == "relu_":
                return (
                    f"leave x.relu_() alone (%{name}): it is in place, and gelu has no "
                    "in-place form; compare the target with 'relu' exactly."
                )
            if op == "call_module":
                return (
                    f"leave call_module nodes alone: %{name} calls an nn.ReLU submodule "
                    "whose target is the string 'relu' too; check node.op as well."
                )
            if op == "call_method":
                return (
                    f"only call_method nodes whose target is 'relu' change; %{name} calls "
                    f".{target}() and must stay as it was."
                )
            return (
                f"%{name} ({op}) changed; method_relu_to_gelu must leave every node but "
                "x.relu() as it was and return False for it."
            )
    return None


def _transformed(ex, case: str, model: nn.Module | None = None, results: list | None = None):
    """A minifx GraphModule of the model, after the transform; the graph before it."""
    gm = symbolic_trace(model if model is not None else MODELS[case]())
    before = _snapshot(gm)
    failed = _relu_to_gelu(ex, gm, results)
    if failed is not None:
        hint = _diagnosis(before, GOLDEN[case], gm) or "the graph can no longer be written as code."
        pytest.fail(
            explain(
                f"gm.recompile() writes code for the transformed graph ({case})",
                f"{type(failed).__name__}: {str(failed).splitlines()[0]}",
                hint,
                SEE,
            ),
            pytrace=False,
        )
    return gm, before


def _check_graph(ex, case: str, what: str):
    gm, before = _transformed(ex, case)
    got = graph_text(gm.graph, f"gm.graph after method_relu_to_gelu ({case})", SEE)
    if got != GOLDEN[case]:
        hint = _diagnosis(before, GOLDEN[case], gm) or "compare the graphs line by line."
        pytest.fail(explain_graphs(what, GOLDEN[case], got, hint, SEE), pytrace=False)
    return gm


# --- tests ----------------------------------------------------------------------------


def test_the_chapter_model_becomes_all_gelu(ex):
    _check_graph(
        ex, "mixed", "every relu of Mixed calls gelu (torch.relu, F.relu and both x.relu())"
    )


@pytest.mark.parametrize("case", ["in place", "returned", "chain"])
def test_graph(ex, case):
    _check_graph(ex, case, f"the graph after relu_to_gelu ({case})")


def test_it_returns_whether_it_rewrote(ex):
    for case in ("in place", "chain"):  # no out-of-place call_function relu: all is the student's
        gm = symbolic_trace(MODELS[case]())
        before = _snapshot(gm)
        got = {
            node.name: _call(ex.method_relu_to_gelu, node, what="method_relu_to_gelu(node)")
            for node in gm.graph.nodes
        }
        hint = _diagnosis(before, GOLDEN[case], gm)
        if hint is not None:
            what = f"method_relu_to_gelu called on every node ({case})"
            printed = graph_text(gm.graph, f"gm.graph after {what}", SEE)
            pytest.fail(explain_graphs(what, GOLDEN[case], printed, hint, SEE), pytrace=False)
        rewritten = {name for name, line in _lines(GOLDEN[case]).items() if "gelu" in line}
        want = {name: name in rewritten for name in got}
        for name, result in got.items():
            if result is want[name]:
                continue
            if want[name]:
                hint = f"return True after rewriting the node; for %{name} it returned {result!r}."
            elif result is None:
                hint = (
                    f"return False for every node you leave alone; for %{name} it "
                    "returned None (a bare `return`, or no return at all)."
                )
            else:
                hint = (
                    f"return False for a node you leave alone; for %{name} it returned {result!r}."
                )
            pytest.fail(
                explain(
                    f"True for x.relu() only, False for every other node ({case}): {want}",
                    repr(got),
                    hint,
                    SEE,
                ),
                pytrace=False,
            )


def test_generated_code_calls_gelu(ex):
    gm = _check_graph(ex, "mixed", "every relu of Mixed calls gelu")
    got = "\n".join(line.rstrip() for line in gm.code.strip("\n").splitlines()).rstrip()
    assert got == GOLDEN_MIXED_CODE, explain_texts(
        "gm.code, generated again after the edit: it calls gelu, never relu",
        GOLDEN_MIXED_CODE,
        got,
        "the code follows the graph once gm.recompile() runs, as the "
        "given relu_to_gelu does after the loop: leave the graph as the golden one shows.",
        SEE,
        kind="code",
    )


@pytest.mark.parametrize("case", list(MODELS))
def test_graph_still_lints(ex, case):
    results = []
    gm, before = _transformed(ex, case, results=results)
    # Only a pass that says what it did has done anything: an object of graded code's in
    # place of True or False could pass for either.
    odd = next((r for r in results if type(r) is not bool), None)
    assert odd is None, explain(
        f"method_relu_to_gelu returns True or False ({case})",
        f"a {type(odd).__name__}: {safe_repr(odd)}",
        "return True after rewriting the node, False for a node you leave alone.",
        SEE,
    )
    try:
        gm.graph.lint()
    except RuntimeError as error:
        hint = _diagnosis(before, GOLDEN[case], gm) or "change only node.op and node.target."
        pytest.fail(
            explain(
                f"gm.graph.lint() passes after relu_to_gelu ({case})",
                str(error).splitlines()[0],
                hint,
                SEE,
            ),
            pytrace=False,
        )


@pytest.mark.parametrize("case", list(MODELS))
def test_outputs_are_the_eager_model_with_gelu(ex, case, device):
    torch.manual_seed(0)
    model = MODELS[case]().to(device)
    reference = MODELS[case](gelu=True).to(device)
    reference.load_state_dict(model.state_dict())
    gm, before = _transformed(ex, case, model)
    x = 3 * torch.randn(SHAPES[case], device=device)  # beyond 0.5: relu and gelu differ
    want = reference(x.clone())
    try:
        got = gm(x.clone())
    except Exception as error:  # the student's graph, run
        got = summarize_error(error)
    if not tensors_close(got, want, atol=1e-6):
        hint = _diagnosis(before, GOLDEN[case], gm) or "compare gm.graph with the eager model."
        pytest.fail(
            explain(
                f"gm(x) equals the eager model with F.gelu in place of each "
                f"out-of-place relu ({case}): {want}",
                str(got),
                hint,
                SEE,
            ),
            pytrace=False,
        )


def test_the_given_relu_to_gelu_returns_gm(ex):
    gm = symbolic_trace(Mixed())
    before = _snapshot(gm)
    try:
        returned = ex.relu_to_gelu(gm)
    except Exception as raised:  # student code, or recompile() of the graph it left
        error = raised
    else:
        error = None
    if error is not None:
        hint = stub_hint(
            error,
            "method_relu_to_gelu",
            _diagnosis(before, GOLDEN["mixed"], gm) or "your code raised at the line shown.",
        )
        pytest.fail(
            explain("relu_to_gelu(gm) runs", describe_error(error), hint, SEE), pytrace=False
        )
    assert returned is gm, explain(
        "relu_to_gelu(gm) returns gm itself, edited in place",
        repr(type(returned)),
        "keep the given relu_to_gelu as it is: it ends with `return gm`.",
        SEE,
    )
    got = graph_text(gm.graph, "gm.graph after relu_to_gelu (mixed)", SEE)
    if got != GOLDEN["mixed"]:
        hint = _diagnosis(before, GOLDEN["mixed"], gm) or (
            "keep the given relu_to_gelu and function_relu_to_gelu as they are."
        )
        pytest.fail(
            explain_graphs(
                "relu_to_gelu(gm), the given code with your function",
                GOLDEN["mixed"],
                got,
                hint,
                SEE,
            ),
            pytrace=False,
        )


def test_the_pass_runs_on_torch_fx_graph_modules(ex):
    gm = torch.fx.symbolic_trace(Mixed())
    before = _snapshot(gm)
    _relu_to_gelu(ex, gm)
    got = [
        (n.name, n.op, getattr(n.target, "__name__", n.target), _names(n.args))
        for n in gm.graph.nodes
    ]
    if got != GOLDEN_FX_MIXED:
        hint = _diagnosis(before, GOLDEN["mixed"], gm) or (
            "use only the Node API minifx and torch.fx share: node.op, node.target, node.args."
        )
        wrong = next((g, w) for g, w in zip_longest(got, GOLDEN_FX_MIXED) if g != w)
        pytest.fail(
            explain(
                f"on torch.fx's GraphModule of Mixed, the same graph; the first "
                f"node that differs: {wrong[1]}",
                repr(wrong[0]),
                hint,
                SEE,
            ),
            pytrace=False,
        )
