"""Grader for exercise 3.1: method relu.

torch.fx is the oracle: each graph and each generated forward must be what the
same transform (written below, for torch.fx) makes of torch.fx's
`symbolic_trace` of the same model. Outputs must be the eager model's with
gelu in place of every out-of-place relu.
"""

import textwrap

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

from minifx.codegen import symbolic_trace
from tests.graders.support import explain, explain_graphs, explain_texts

pytestmark = pytest.mark.ch3

SEE = "chapters/03-codegen.md#exercise-31-method-relu"
HINT = ("for a call_method node whose target is the string 'relu', set node.op = 'call_function' "
        "and node.target = F.gelu; keep its args (args[0], the receiver, is F.gelu's input).")


@pytest.fixture
def ex(impl):
    return impl.load("ch3_method_relu")


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
    """Every out-of-place relu: a method (twice, once inside a submodule), torch.relu, F.relu."""

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
    """In-place relus and nn.ReLU, which stay, around one x.relu(), which goes."""

    def __init__(self, gelu=False):
        super().__init__()
        self.gelu = gelu
        self.fc = nn.Linear(6, 6)
        self.act = nn.ReLU()

    def forward(self, x):
        y = self.fc(x).relu_()
        y = F.relu(self.act(y) - 0.5, inplace=True)
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

GOLDEN_MIXED = textwrap.dedent("""
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
    """).strip("\n")  # fmt: skip


def _fx_relu_to_gelu(model: nn.Module) -> torch.fx.GraphModule:
    """The expected result: the same transform, on torch.fx's GraphModule."""
    gm = torch.fx.symbolic_trace(model)
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in (torch.relu, F.relu) \
                and not node.kwargs.get("inplace", False):
            node.target, node.kwargs = F.gelu, {}
        elif node.op == "call_method" and node.target == "relu":
            node.op, node.target = "call_function", F.gelu
    gm.recompile()
    return gm


def _transformed(ex, model: nn.Module):
    gm = symbolic_trace(model)
    returned = ex.relu_to_gelu(gm)
    assert returned is gm, explain(
        "relu_to_gelu(gm) returns gm itself, edited in place", repr(type(returned)),
        "end with `return gm`, as the given code does.", SEE)
    return gm


def test_the_chapter_model_becomes_all_gelu(ex):
    gm = _transformed(ex, Mixed())
    got = str(gm.graph)
    assert got == GOLDEN_MIXED, explain_graphs(
        "every relu of Mixed calls gelu (torch.relu, F.relu and both x.relu())", GOLDEN_MIXED, got,
        HINT, SEE)


@pytest.mark.parametrize("case", list(MODELS))
def test_graph_matches_torch_fx(ex, case):
    torch.manual_seed(0)
    model = MODELS[case]()
    want = str(_fx_relu_to_gelu(model).graph)
    got = str(_transformed(ex, model).graph)
    assert got == want, explain_graphs(
        f"the graph torch.fx gets from the same transform ({case})", want, got,
        HINT + " Leave x.relu_(), F.relu(x, inplace=True) and nn.ReLU modules alone.", SEE)


def test_generated_code_calls_gelu(ex):
    model = Mixed()
    want = _fx_relu_to_gelu(model).code
    assert "gelu(" in want and "relu(" not in want  # the reference itself
    got = _transformed(ex, model).code
    assert got == want, explain_texts(
        "gm.code, generated again after the edit, is torch.fx's: it calls gelu, never relu",
        want, got, "the code follows the graph: the given relu_to_gelu calls gm.recompile() "
        "after the loop. Make every out-of-place relu a call_function of F.gelu.", SEE, kind="code")


@pytest.mark.parametrize("case", list(MODELS))
def test_graph_still_lints(ex, case):
    gm = _transformed(ex, MODELS[case]())
    try:
        gm.graph.lint()
    except RuntimeError as error:
        pytest.fail(explain(f"gm.graph.lint() passes after relu_to_gelu ({case})", str(error),
                            "change only node.op and node.target; the args and the users stay.",
                            SEE))


def test_in_place_relus_and_modules_stay(ex):
    gm = _transformed(ex, InPlace())
    label = {F.relu: "F.relu", F.gelu: "F.gelu"}
    got = [f"%{node.name} = {node.op}[target={label.get(node.target, node.target)}]"
           for node in gm.graph.nodes if node.name in ("relu_", "act", "relu", "relu_1")]
    want = ["%relu_ = call_method[target=relu_]", "%act = call_module[target=act]",
            "%relu = call_function[target=F.relu]", "%relu_1 = call_function[target=F.gelu]"]
    assert got == want, explain(
        f"x.relu_(), nn.ReLU and F.relu(..., inplace=True) unchanged, x.relu() now gelu: {want}",
        repr(got), "rewrite only call_method nodes whose target is exactly 'relu'.", SEE)


@pytest.mark.parametrize("case", list(MODELS))
def test_outputs_are_the_eager_model_with_gelu(ex, case, device):
    torch.manual_seed(0)
    model = MODELS[case]().to(device)
    reference = MODELS[case](gelu=True).to(device)
    reference.load_state_dict(model.state_dict())
    gm = _transformed(ex, model)
    x = torch.randn(SHAPES[case], device=device)
    want, got = reference(x.clone()), gm(x.clone())
    assert torch.allclose(got, want, atol=1e-6), explain(
        f"gm(x) equals the eager model with F.gelu in place of each out-of-place relu ({case}): "
        f"{want}", repr(got), HINT + " The given code recompiles, so forward follows the graph.",
        SEE)


def test_the_pass_runs_on_torch_fx_graph_modules(ex):
    model = Mixed()
    gm = torch.fx.symbolic_trace(model)
    ex.relu_to_gelu(gm)
    want = str(_fx_relu_to_gelu(model).graph)
    assert str(gm.graph) == want, explain_graphs(
        "on torch.fx's GraphModule of Mixed, the same graph", want, str(gm.graph),
        "use only the public Node API (node.op, node.target, node.args); minifx and torch.fx "
        "share it.", SEE)
