"""Grader for exercise 8.1: PTQ observers.

Oracles: the relu nodes of torch.fx's trace of the same model (same node names), the
true min and max of each relu's value over the calibration batches, recorded by a
torch.fx Interpreter, and the graph after the pass, written out below.
"""

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

from minifx.codegen import symbolic_trace
from minifx.passes.quantize import MinMaxObserver
from tests.graders.support import explain, explain_graphs

pytestmark = pytest.mark.ch8

SEE = "chapters/08-quantization.md#exercise-81-ptq-observers"


@pytest.fixture
def ex(impl):
    return impl.load("ch8_ptq_observers")


class Spellings(nn.Module):
    """The four spellings of a relu, two relus used twice, and two look-alikes (ReLU6, sigmoid)."""

    def __init__(self):
        super().__init__()
        self.fc1, self.act, self.fc2, self.six = nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU6()

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


class NoRelu(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x) * torch.relu_(x.clone())


MODELS = {"spellings": (Spellings, (4, 8)), "relu output": (ReluOut, (2, 3, 6, 6)), "no relu": (NoRelu, (5,))}
RELUS = {"spellings": ["relu", "relu_1", "act", "relu_2"], "relu output": ["relu"], "no relu": []}

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
    for batch in batches:
        recorder.run(batch)
    return {name: (min(v.min().item() for v in vs), max(v.max().item() for v in vs)) for name, vs in values.items()}


@pytest.mark.parametrize("case", list(MODELS))
def test_is_relu_finds_the_relus_and_nothing_else(ex, case):
    model, _ = _setup(case)
    gm = symbolic_trace(model)
    got = [node.name for node in gm.graph.nodes if ex.is_relu(gm, node)]
    assert got == RELUS[case], explain(
        f"is_relu true for {RELUS[case]} of the {case} model", f"true for {got}",
        "four spellings: call_function torch.relu or F.relu, call_method 'relu', call_module of an "
        "nn.ReLU (check the submodule's type, not its name); ReLU6, sigmoid and relu_ are not relus.", SEE)


def test_observers_follow_every_relu_in_the_graph(ex):
    model, _ = _setup("spellings")
    gm = symbolic_trace(model)
    names = ex.insert_relu_observers(gm)
    want_names = [f"{relu}_observer" for relu in RELUS["spellings"]]
    assert names == want_names, explain(f"the names {want_names}", repr(names),
                                        "one observer per relu, named f'{relu.name}_observer', in graph order.", SEE)
    gm.graph.lint()
    assert str(gm.graph) == SPELLINGS_AFTER, explain_graphs(
        "the graph after insert_relu_observers", SPELLINGS_AFTER, str(gm.graph),
        "insert each observer right after its relu, and move every other user of the relu onto it "
        "(replace_all_uses_with with a delete_user_cb that skips the observer).", SEE)


@pytest.mark.parametrize("case", list(MODELS))
def test_observers_are_registered_submodules(ex, case):
    model, _ = _setup(case)
    gm = symbolic_trace(model)
    names = ex.insert_relu_observers(gm)
    called = [node.target for node in gm.graph.nodes if node.op == "call_module" and node.target in names]
    modules = {name: type(gm.get_submodule(name)).__name__ if hasattr(gm, name) else "missing" for name in names}
    assert called == names and all(isinstance(getattr(gm, n, None), MinMaxObserver) for n in names), explain(
        f"a MinMaxObserver submodule and one call_module node for each of {names}",
        f"submodules {modules}, called {called}",
        "gm.add_submodule(name, MinMaxObserver()), then gm.graph.call_module(name, (relu,)).", SEE)


@pytest.mark.parametrize("case", list(MODELS))
def test_outputs_are_unchanged(ex, case, device):
    model, batches = _setup(case, device)
    gm = symbolic_trace(model)
    ex.insert_relu_observers(gm)
    with torch.no_grad():
        got, want = gm(batches[0]), model(batches[0])
    assert torch.equal(got, want), explain(
        "the same output as the model: an observer returns its input", "a different output",
        "did you recompile after editing the graph (gm.recompile())? Does every old user of the relu "
        "now read the observer, and the observer read the relu?", SEE)


@pytest.mark.parametrize("case", list(MODELS))
def test_calibration_records_the_true_min_and_max(ex, case, device):
    model, batches = _setup(case, device)
    gm = symbolic_trace(model)
    ex.insert_relu_observers(gm)
    ex.calibrate(gm, batches)
    want = _true_ranges(model, batches, RELUS[case])
    got = ex.observed_ranges(gm)
    assert got == want, explain(
        f"the min and max of each relu's value over the 3 calibration batches: {want}", repr(got),
        "key each range by the name of the observed node (the observer's argument); read "
        "observer.min_val.item() and observer.max_val.item().", SEE)


def test_ranges_grow_with_more_data(ex):
    model, batches = _setup("relu output")
    gm = symbolic_trace(model)
    ex.insert_relu_observers(gm)
    ex.calibrate(gm, batches[:1])
    first = ex.observed_ranges(gm)["relu"]
    ex.calibrate(gm, batches[1:])
    assert ex.observed_ranges(gm)["relu"] == _true_ranges(model, batches, ["relu"])["relu"] != first, explain(
        "a running range: after more (larger) batches, the range over all of them",
        f"{first} after one batch, {ex.observed_ranges(gm)['relu']} after three",
        "the observers keep their min/max between calls; observed_ranges reads them.", SEE)
