"""Grader for exercise 4.1: FLOP counting.

Two oracles: the FLOPs of each node are written out below from the shapes
(2 FLOPs per multiply-add, bias adds not counted), keyed by the node names of
torch.fx's trace of the same model; and the totals must be what
`torch.utils.flop_counter.FlopCounterMode` counts on the eager model.
"""

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from minifx.codegen import symbolic_trace
from tests.graders.support import explain

pytestmark = pytest.mark.ch4

SEE = "chapters/04-interpreter.md#exercise-41-flop-counting"
HINT = ("each counted op costs 2 * output.numel() * K FLOPs: K = a.shape[-1] for a matmul a @ b, "
        "weight.shape[1] for a linear; conv2d_flops(output, weight) for a conv. For a call_module "
        "node the weight is the submodule's: self.fetch_attr(n.target).weight.")


@pytest.fixture
def ex(impl):
    return impl.load("ch4_flop_counting")


class MLP(nn.Module):
    """nn.Linear with and without bias, around a relu (call_module nodes)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8, bias=False)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class SmallCNN(nn.Module):
    """Convolutions with stride, padding, dilation and groups, as modules and as F.conv2d."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, stride=2, padding=1)                 # 16x16 -> 8x8
        self.grouped = nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=4, bias=False)  # 8x8
        self.weight = nn.Parameter(torch.randn(4, 8, 1, 1) / 3)             # 8x8 -> 4x4
        self.head = nn.Linear(4 * 4 * 4, 10)

    def forward(self, x):
        y = self.stem(x).relu()
        y = self.grouped(y) + y
        y = F.conv2d(y, self.weight, stride=2)
        return self.head(y.flatten(1))


class Matmuls(nn.Module):
    """Every spelling of a matmul: @, torch.bmm, x.matmul (broadcast), x.mm, torch.mm,
    torch.matmul, F.linear on a batch of matrices."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 5) / 3)
        self.proj = nn.Parameter(torch.randn(6, 5) / 3)
        self.bias = nn.Parameter(torch.randn(6))

    def forward(self, x, y):                        # x: (3, 4, 8), y: (2, 1, 8, 4)
        a = x @ self.w                              # (3, 4, 5)
        b = torch.bmm(x, x.transpose(1, 2))         # (3, 4, 4)
        c = y.matmul(x)                             # (2, 3, 8, 8): batch dims broadcast
        d = x[0].mm(self.w) + torch.mm(x[1], self.w)  # (4, 5)
        e = torch.matmul(b, a)                      # (3, 4, 5)
        f = F.linear(e, self.proj, bias=self.bias)  # (3, 4, 6)
        return c.sum() + d.sum() + f.sum()


class NoCountedOp(nn.Module):
    """Elementwise ops, a reduction, LayerNorm and ReLU modules: nothing counted."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(6)
        self.act = nn.ReLU()

    def forward(self, x):
        return torch.softmax(self.act(self.norm(x * 2 + 1)), dim=-1).sum(0)


MODELS = {"mlp": MLP, "cnn": SmallCNN, "matmuls": Matmuls, "no counted op": NoCountedOp}


def _inputs(case: str, device: str = "cpu") -> tuple:
    shapes = {"mlp": [(4, 16)], "cnn": [(2, 3, 16, 16)], "matmuls": [(3, 4, 8), (2, 1, 8, 4)],
              "no counted op": [(5, 6)]}[case]
    generator = torch.Generator().manual_seed(0)
    return tuple(torch.randn(shape, generator=generator).to(device) for shape in shapes)


# The FLOPs of each counted node, from the shapes: 2 * (multiply-adds), no bias adds.
EXPECTED = {
    "mlp": {
        "fc1": 2 * 4 * 32 * 16,                 # (4, 16) -> (4, 32): 16 per output element
        "fc2": 2 * 4 * 8 * 32,                  # (4, 32) -> (4, 8), no bias
    },
    "cnn": {
        "stem": 2 * 2 * 8 * 8 * 8 * 3 * 3 * 3,  # N, C_out, H_out, W_out, C_in, kh, kw
        "grouped": 2 * 2 * 8 * 8 * 8 * 2 * 3 * 3,  # C_in / groups = 8 / 4 = 2
        "conv2d": 2 * 2 * 4 * 4 * 4 * 8 * 1 * 1,    # 1x1 filters, stride 2: 8x8 -> 4x4
        "head": 2 * 2 * 10 * 64,
    },
    "matmuls": {
        "matmul": 2 * 3 * 4 * 5 * 8,            # (3, 4, 8) @ (8, 5)
        "bmm": 2 * 3 * 4 * 4 * 8,               # (3, 4, 8) @ (3, 8, 4)
        "matmul_1": 2 * (2 * 3) * 8 * 8 * 4,    # (2, 1, 8, 4) @ (3, 4, 8): batch 2 x 3
        "mm": 2 * 4 * 5 * 8,                    # (4, 8) @ (8, 5)
        "mm_1": 2 * 4 * 5 * 8,
        "matmul_2": 2 * 3 * 4 * 5 * 4,          # (3, 4, 4) @ (3, 4, 5)
        "linear": 2 * 3 * 4 * 6 * 5,            # (3, 4, 5) -> (3, 4, 6)
    },
    "no counted op": {},
}


def _expected_by_node(case: str) -> dict[str, int]:
    """Every node of torch.fx's trace of the model, with its FLOPs (0 unless counted)."""
    names = [node.name for node in torch.fx.symbolic_trace(MODELS[case]()).graph.nodes]
    counted = EXPECTED[case]
    assert set(counted) <= set(names), (counted, names)  # the table names torch.fx's nodes
    return {name: counted.get(name, 0) for name in names}


def _counter(ex, case: str, device: str = "cpu"):
    torch.manual_seed(0)
    model = MODELS[case]().to(device)
    counter = ex.FlopCounter(symbolic_trace(model))
    output = counter.run(*_inputs(case, device))
    return model, counter, output


def _differences(want: dict[str, int], got: dict) -> str:
    wrong = [f"%{name}: {got.get(name, 'missing')} (expected {flops})"
             for name, flops in want.items() if got.get(name) != flops]
    extra = [f"%{name} is no node of the graph" for name in got if name not in want]
    return "; ".join(wrong + extra) or "the same counts"


def _difference(got, want: torch.Tensor) -> str:
    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        return f"{got!r}, not a tensor of shape {tuple(want.shape)}"
    return f"a tensor that differs by up to {(got - want).abs().max().item():.3g}"


def _check_by_node(ex, case: str) -> None:
    want = _expected_by_node(case)
    _, counter, _ = _counter(ex, case)
    got = counter.flops_by_node
    assert got == want, explain(
        f"flops_by_node of the {case} model: an entry for every node, {EXPECTED[case] or 'all 0'}",
        _differences(want, got), HINT, SEE)


def test_linear_modules_per_node(ex):
    _check_by_node(ex, "mlp")


def test_convolutions_per_node(ex):
    _check_by_node(ex, "cnn")


def test_matmul_spellings_per_node(ex):
    _check_by_node(ex, "matmuls")


def test_no_counted_op_counts_zero(ex):
    _check_by_node(ex, "no counted op")


def test_linear_without_bias_on_extra_leading_dims(ex):
    model = MLP()
    x = torch.randn(2, 3, 5, 16)
    want = {"x": 0, "fc1": 2 * 30 * 32 * 16, "relu": 0, "fc2": 2 * 30 * 8 * 32, "output": 0}
    counter = ex.FlopCounter(symbolic_trace(model))
    counter.run(x)
    assert counter.flops_by_node == want, explain(
        f"an input of shape (2, 3, 5, 16) is 30 rows of 16: {want}",
        _differences(want, counter.flops_by_node),
        "output.numel() counts every leading dimension; K is the weight's in_features, "
        "weight.shape[1].", SEE)


@pytest.mark.parametrize("case", list(MODELS))
def test_total_matches_flop_counter_mode(ex, case):
    torch.manual_seed(0)
    model = MODELS[case]()
    with FlopCounterMode(display=False) as mode:
        model(*_inputs(case))
    want = mode.get_total_flops()
    assert want == sum(EXPECTED[case].values())  # the two oracles agree
    got = ex.count_flops(symbolic_trace(model), *_inputs(case))
    assert got == want, explain(
        f"count_flops on the {case} model is FlopCounterMode's total on the eager model: {want}",
        repr(got), HINT, SEE)


def test_counts_follow_the_input_shapes(ex):
    gm = symbolic_trace(MLP())
    counts = [ex.count_flops(gm, torch.randn(batch, 16)) for batch in (1, 4, 10)]
    want = [batch * 2 * (32 * 16 + 8 * 32) for batch in (1, 4, 10)]
    assert counts == want, explain(
        f"one GraphModule, run on batches of 1, 4 and 10 rows: {want}", repr(counts),
        "read the sizes off the values of this run (the arguments and the output), not off "
        "the module alone.", SEE)


@pytest.mark.parametrize("case", list(MODELS))
def test_outputs_are_unchanged(ex, case):
    model, _, got = _counter(ex, case)
    want = symbolic_trace(model)(*_inputs(case))
    assert torch.equal(got, want), explain(
        f"FlopCounter(gm).run(*inputs) returns exactly what gm(*inputs) returns ({case})",
        _difference(got, want), "count, but return the value the opcode method computed.", SEE)


def test_counts_and_outputs_on_device(ex, device):
    model, counter, got = _counter(ex, "cnn", device)
    inputs = _inputs("cnn", device)
    with FlopCounterMode(display=False) as mode:
        want = model(*inputs)
    assert counter.total_flops == mode.get_total_flops() == sum(EXPECTED["cnn"].values()), explain(
        f"the same FLOPs on {device} as FlopCounterMode: {mode.get_total_flops()}",
        repr(counter.total_flops), "count from shapes, which do not depend on the device.", SEE)
    assert got.device == want.device and torch.allclose(got, want, atol=1e-5), explain(
        f"the eager model's output, on {device}", f"{_difference(got, want)}, on {got.device}",
        "return the value the opcode method computed.", SEE)
