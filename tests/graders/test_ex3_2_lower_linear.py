"""Grader for exercise 3.2: lower nn.Linear.

torch.fx is the oracle: each graph, generated forward and list of submodules
must be what the same pass (written below, for torch.fx) makes of torch.fx's
`symbolic_trace` of the same model. The parameters must be the model's own
objects, and the outputs the eager model's.
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

SEE = "chapters/03-codegen.md#exercise-32-lower-nnlinear"
HINT = ("for each call_module node of an nn.Linear: register its weight (and bias) on gm, then, "
        "inserting before the node, get_attr the weight, get_attr the bias (if any), "
        "call_function(F.linear, (node.args[0], weight, bias)); replace_all_uses_with, erase_node.")


@pytest.fixture
def ex(impl):
    return impl.load("ch3_lower_linear")


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        return self.norm(self.fc(x)).relu()


class Net(nn.Module):
    """A Linear inside a submodule, next to a LayerNorm that must stay, and a Linear head."""

    def __init__(self):
        super().__init__()
        self.layer1 = Layer()
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(self.layer1(x) + x)


class Twice(nn.Module):
    """One Linear called twice."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(self.fc(x).tanh())


def _mlp():
    """Linears at the paths "0" and "2", the second without bias."""
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4, bias=False))


MODELS = {"net": Net, "mlp": _mlp, "twice": Twice}
SHAPES = {"net": (3, 8), "mlp": (3, 8), "twice": (2, 4)}

GOLDEN_NET = textwrap.dedent("""
    graph():
        %x : [num_users=2] = placeholder[target=x]
        %layer1_fc_weight : [num_users=1] = get_attr[target=layer1_fc_weight]
        %layer1_fc_bias : [num_users=1] = get_attr[target=layer1_fc_bias]
        %linear : [num_users=1] = call_function[target=torch._C._nn.linear](args = (%x, %layer1_fc_weight, %layer1_fc_bias), kwargs = {})
        %layer1_norm : [num_users=1] = call_module[target=layer1.norm](args = (%linear,), kwargs = {})
        %relu : [num_users=1] = call_method[target=relu](args = (%layer1_norm,), kwargs = {})
        %add : [num_users=1] = call_function[target=operator.add](args = (%relu, %x), kwargs = {})
        %head_weight : [num_users=1] = get_attr[target=head_weight]
        %head_bias : [num_users=1] = get_attr[target=head_bias]
        %linear_1 : [num_users=1] = call_function[target=torch._C._nn.linear](args = (%add, %head_weight, %head_bias), kwargs = {})
        return linear_1
    """).strip("\n")  # fmt: skip


def _fx_lower_linear(model: nn.Module) -> torch.fx.GraphModule:
    """The expected result: the same pass, on torch.fx's GraphModule."""
    gm = torch.fx.symbolic_trace(model)
    for node in gm.graph.nodes:
        module = gm.get_submodule(node.target) if node.op == "call_module" else None
        if not isinstance(module, nn.Linear):
            continue
        prefix = node.target.replace(".", "_")
        gm.register_parameter(f"{prefix}_weight", module.weight)
        if module.bias is not None:
            gm.register_parameter(f"{prefix}_bias", module.bias)
        with gm.graph.inserting_before(node):
            weight = gm.graph.get_attr(f"{prefix}_weight")
            bias = gm.graph.get_attr(f"{prefix}_bias") if module.bias is not None else None
            linear = gm.graph.call_function(F.linear, (node.args[0], weight, bias))
        node.replace_all_uses_with(linear)
        gm.graph.erase_node(node)
    gm.recompile()
    gm.delete_all_unused_submodules()
    return gm


def _lowered(ex, model: nn.Module):
    gm = symbolic_trace(model)
    returned = ex.lower_linear(gm)
    assert returned is gm, explain("lower_linear(gm) returns gm itself, edited in place",
                                   repr(type(returned)), "end with `return gm`.", SEE)
    return gm


def _linear_calls(gm) -> list[str]:
    return [node.name for node in gm.graph.nodes if node.op == "call_module"
            and isinstance(gm.get_submodule(node.target), nn.Linear)]


def test_the_net_calls_f_linear(ex):
    gm = _lowered(ex, Net())
    got = str(gm.graph)
    assert got == GOLDEN_NET, explain_graphs(
        "both Linears of Net lowered to get_attr nodes and F.linear", GOLDEN_NET, got,
        HINT + " Name the parameters with state_name(node.target, 'weight') and 'bias'.", SEE)


@pytest.mark.parametrize("case", list(MODELS))
def test_graph_matches_torch_fx(ex, case):
    model = MODELS[case]()
    want = str(_fx_lower_linear(model).graph)
    got = str(_lowered(ex, model).graph)
    assert got == want, explain_graphs(
        f"the graph torch.fx gets from the same pass ({case})", want, got,
        HINT + " A Linear without bias gets no bias get_attr and None as F.linear's bias; "
        "a Linear called twice is lowered at both calls.", SEE)


def test_generated_code_calls_f_linear(ex):
    model = Net()
    want = _fx_lower_linear(model).code
    got = _lowered(ex, model).code
    assert got == want, explain_texts(
        "gm.code, generated again after the edit, is torch.fx's", want, got,
        "gm.code and forward follow the graph only when you call gm.recompile() after "
        "editing gm.graph.", SEE, kind="code")


@pytest.mark.parametrize("case", list(MODELS))
def test_linear_submodules_are_deleted(ex, case):
    model = MODELS[case]()
    want = [name for name, _ in _fx_lower_linear(model).named_modules()]
    gm = _lowered(ex, model)
    got = [name for name, _ in gm.named_modules()]
    assert got == want, explain(
        f"gm's submodules ({case}), named: {want} (the root is ''); no Linear, every other stays",
        repr(got), "after the graph edit, gm.delete_all_unused_submodules() removes what no node "
        "uses; it keeps a Linear if a get_attr still reads through it (target 'fc.weight' instead "
        "of state_name('fc', 'weight')).", SEE)


def test_parameters_are_the_models_own(ex):
    model = Net()
    want = {"layer1_fc_weight": model.layer1.fc.weight, "layer1_fc_bias": model.layer1.fc.bias,
            "head_weight": model.head.weight, "head_bias": model.head.bias,
            "layer1.norm.weight": model.layer1.norm.weight, "layer1.norm.bias": model.layer1.norm.bias}
    gm = _lowered(ex, model)
    got = dict(gm.named_parameters())
    assert sorted(got) == sorted(want), explain(
        f"gm's parameters named {sorted(want)}", repr(sorted(got)),
        "gm.register_parameter(state_name(node.target, 'weight'), linear.weight), and the same "
        "for the bias; then delete_all_unused_submodules() drops the Linears' own names.", SEE)
    copied = [name for name, parameter in want.items() if got[name] is not parameter]
    assert not copied, explain(
        "each parameter of gm is the model's own nn.Parameter object (so training gm trains "
        "the model)", f"copies or new tensors under {copied}",
        "register linear.weight itself: no .clone(), .data, .detach() or nn.Parameter(...).", SEE)


@pytest.mark.parametrize("case", list(MODELS))
def test_graph_still_lints(ex, case):
    gm = _lowered(ex, MODELS[case]())
    try:
        gm.graph.lint()
    except RuntimeError as error:
        pytest.fail(explain(f"gm.graph.lint() passes after lower_linear ({case})", str(error),
                            "edit through the graph's methods (get_attr, call_function, "
                            "replace_all_uses_with, erase_node), with the parameters registered "
                            "on gm before the get_attr nodes read them.", SEE))


@pytest.mark.parametrize("case", list(MODELS))
def test_outputs_are_the_eager_model_s(ex, case, device):
    torch.manual_seed(0)
    model = MODELS[case]().to(device)
    gm = _lowered(ex, model)
    left = _linear_calls(gm)
    assert not left, explain(f"no call_module node of an nn.Linear left in gm.graph ({case})",
                             f"still there: {left}", HINT, SEE)
    x = torch.randn(SHAPES[case], device=device)
    want = model(x)
    try:
        got = gm(x)
    except Exception as error:  # noqa: BLE001  (any error is the student's to see)
        pytest.fail(explain(f"gm(x) runs and returns the eager model's output ({case})",
                            f"{type(error).__name__}: {error}",
                            "call gm.recompile() after editing the graph, or forward still "
                            "calls the deleted Linears.", SEE))
    assert torch.allclose(got, want, atol=1e-6), explain(
        f"gm(x) equals the eager model's output ({case}): {want}", repr(got),
        "F.linear's args are (input, weight, bias), input being node.args[0].", SEE)


def test_the_pass_runs_on_torch_fx_graph_modules(ex):
    model = Net()
    gm = torch.fx.symbolic_trace(model)
    ex.lower_linear(gm)
    want = _fx_lower_linear(model)
    assert str(gm.graph) == str(want.graph), explain_graphs(
        "on torch.fx's GraphModule of Net, the same graph", str(want.graph), str(gm.graph),
        "use only the API minifx shares with torch.fx (gm.get_submodule, gm.register_parameter, "
        "graph.inserting_before, graph.get_attr, graph.call_function, ...).", SEE)
