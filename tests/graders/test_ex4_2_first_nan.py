"""Grader for exercise 4.2: find the first NaN.

Two oracles: each model below has its first non-finite value at a known node,
written out by name; and the same check, written here on `torch.fx.Interpreter`
and torch.fx's trace of the model, must find that same node.
"""

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

from minifx.codegen import GraphModule, symbolic_trace
from minifx.graph import Tracer
from tests.graders.support import explain

pytestmark = pytest.mark.ch4

SEE = "chapters/04-interpreter.md#exercise-42-find-the-first-nan"
HINT = ("in run_node, compute the value with super().run_node(n), then raise NonFiniteError(n) "
        "if is_finite(value) is False; is_finite checks tensors with torch.isfinite(t).all() and "
        "looks inside tuples, lists and dicts.")
NAN = float("nan")


@pytest.fixture
def ex(impl):
    return impl.load("ch4_first_nan")


class LogOfNegative(nn.Module):
    def forward(self, x):
        y = x * 2
        return torch.log(y - 3).exp() + y           # %log: log of a negative number


class ZeroOverZero(nn.Module):
    def forward(self, x):
        d = x - x
        return (d / d).sum() + x                    # %truediv: 0 / 0


class InfMinusInf(nn.Module):
    def forward(self, x):
        big = torch.exp(x * 1000)                   # %exp: inf already, before inf - inf
        return big - big


class Stats(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("shift", torch.tensor([0.0, NAN, 0.0, 0.0]))


class PoisonedBuffer(nn.Module):
    """A NaN in a buffer of a submodule, read by a get_attr node."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.stats = Stats()

    def forward(self, x):
        return torch.relu(self.fc(x)) + self.stats.shift  # %stats_shift


class BadBatchNorm(nn.Module):
    """A BatchNorm (a call_module node) whose running variance went negative: sqrt of < 0."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(4)
        self.bn.running_var.fill_(-1.0)
        self.eval()

    def forward(self, x):
        return self.bn(self.fc(x)).relu()           # %bn


class TwoInputs(nn.Module):
    def forward(self, x, y):
        return x.sigmoid() * y                      # %y, when y holds a NaN


class SingleSampleStd(nn.Module):
    """torch.std_mean returns a tuple; the std of one sample is NaN."""

    def forward(self, x):
        std, mean = torch.std_mean(x, dim=0)        # %std_mean, a tuple
        return (x - mean) / std


class Head(nn.Module):
    """Returns a dict holding a tuple; the NaN is inside the tuple."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        mean = self.fc(x)
        return {"mean": mean, "spread": (mean.abs(), torch.sqrt(mean - 100))}


class WithHead(nn.Module):
    """The Head is a leaf module (see `_trace`): one call_module node, %head, returns the dict."""

    def __init__(self):
        super().__init__()
        self.head = Head()

    def forward(self, x):
        out = self.head(x)
        return out["mean"] + out["spread"][1]


class AllFinite(nn.Module):
    """Finite values of every kind: tensors, ints, a torch.Size, a bool tensor, a tuple."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        n = x.shape[0]
        positive = x > 0
        first, second = self.fc(x).chunk(2, dim=-1)
        return (first * positive[:, :2] + second.softmax(-1)) * n, x.size()


def _uniform(*shape: int, low: float = 0.0, high: float = 1.0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(0)
    return low + (high - low) * torch.rand(shape, generator=generator)


# case -> (model class, inputs, the first node whose value is not finite)
CASES = {
    "log of a negative number": (LogOfNegative, lambda: (_uniform(3, 4),), "log"),
    "0 / 0": (ZeroOverZero, lambda: (_uniform(3, 4),), "truediv"),
    "inf is not finite either": (InfMinusInf, lambda: (_uniform(3, 4, low=0.5),), "exp"),
    "NaN in a buffer (get_attr)": (PoisonedBuffer, lambda: (_uniform(2, 4),), "stats_shift"),
    "NaN inside a submodule (call_module)": (BadBatchNorm, lambda: (_uniform(2, 4),), "bn"),
    "NaN in an input (placeholder)":
        (TwoInputs, lambda: (_uniform(2, 3), torch.tensor([1.0, NAN, 2.0])), "y"),
    "NaN in a returned tuple": (SingleSampleStd, lambda: (_uniform(1, 5),), "std_mean"),
    "NaN in a tuple in a dict": (WithHead, lambda: (_uniform(2, 4),), "head"),
}


class _HeadLeafMinifx(Tracer):
    def is_leaf_module(self, m, module_qualified_name):
        return isinstance(m, Head) or super().is_leaf_module(m, module_qualified_name)


class _HeadLeafFx(torch.fx.Tracer):
    def is_leaf_module(self, m, module_qualified_name):
        return isinstance(m, Head) or super().is_leaf_module(m, module_qualified_name)


def _trace(model: nn.Module) -> GraphModule:
    """minifx's GraphModule of `model`, with `Head` as a leaf module."""
    return GraphModule(model, _HeadLeafMinifx().trace(model))


def _fx_first_nonfinite(model: nn.Module, inputs: tuple) -> str | None:
    """The reference: the same check on torch.fx's trace, run by torch.fx's Interpreter."""
    gm = torch.fx.GraphModule(model, _HeadLeafFx().trace(model))

    class Found(Exception):
        def __init__(self, name):
            super().__init__(name)
            self.name = name  # torch.fx's Interpreter appends to args[0]; this stays as it is

    class Reference(torch.fx.Interpreter):
        def run_node(self, n):
            value = super().run_node(n)
            tensors = [v for v in torch.utils._pytree.tree_leaves(value)
                       if isinstance(v, torch.Tensor)]
            if not all(bool(torch.isfinite(t).all()) for t in tensors):
                raise Found(n.name)
            return value

    try:
        Reference(gm).run(*inputs)
    except Found as found:
        return found.name
    return None


@pytest.mark.filterwarnings("ignore:std_mean")
@pytest.mark.parametrize("case", list(CASES))
def test_first_nonfinite_node(ex, case):
    model_class, inputs, name = CASES[case]
    torch.manual_seed(0)
    model = model_class()
    assert _fx_first_nonfinite(model, inputs()) == name  # the two oracles agree
    got = ex.first_nonfinite(_trace(model), *inputs())
    assert got == name, explain(
        f"first_nonfinite names %{name}, the first node whose value is not finite ({case})",
        repr(got), HINT + " Check every node, placeholders and get_attr nodes too.", SEE)


def test_all_finite_returns_none(ex):
    model = AllFinite()
    x = _uniform(3, 4, low=-1.0)
    assert _fx_first_nonfinite(model, (x,)) is None
    got = ex.first_nonfinite(_trace(model), x)
    assert got is None, explain(
        "None: every value is finite (tensors, ints, a torch.Size, a bool tensor, a tuple)",
        repr(got), "count only NaN and infinities as non-finite; an int, a torch.Size or a "
        "bool tensor is finite.", SEE)


@pytest.mark.parametrize("case", ["all finite", "the log model on inputs that keep it finite"])
def test_outputs_are_unchanged(ex, case):
    torch.manual_seed(0)
    model = AllFinite() if case == "all finite" else LogOfNegative()
    x = _uniform(3, 4, low=-1.0) if case == "all finite" else _uniform(3, 4, low=2.0, high=3.0)
    gm = _trace(model)
    want, got = gm(x), ex.NonFiniteChecker(gm).run(x)
    pairs = zip(got, want) if isinstance(want, tuple) else [(got, want)]
    same = type(got) is type(want) and len(got) == len(want) and all(
        torch.equal(g, w) if isinstance(w, torch.Tensor) else g == w for g, w in pairs)
    assert same, explain(
        f"NonFiniteChecker(gm).run(x) returns what gm(x) returns ({case}): {want!r}", repr(got),
        "check the value, then return it unchanged.", SEE)


def test_error_names_the_node_its_op_target_and_inputs(ex):
    gm = _trace(LogOfNegative())
    with pytest.raises(ex.NonFiniteError) as caught:
        ex.NonFiniteChecker(gm).run(_uniform(3, 4))
    error = caught.value
    want = ("log", "call_function", torch.log, ["sub"])
    got = (error.node, error.op, error.target, error.inputs)
    assert got == want, explain(
        f"NonFiniteError for %log: (node, op, target, inputs) == {want}", repr(got),
        "raise NonFiniteError(n) with the node being run, n.", SEE)


def test_stops_at_the_first_non_finite_node(ex):
    gm = _trace(LogOfNegative())
    checker = ex.NonFiniteChecker(gm, garbage_collect_values=False)
    with pytest.raises(ex.NonFiniteError):
        checker.run(_uniform(3, 4))
    want = ["x", "mul", "sub"]
    got = [node.name for node in checker.env]
    assert got == want, explain(
        f"the run stops at %log: env holds only the nodes before it, {want}", repr(got),
        "raise as soon as a value is not finite, before it reaches env and before later nodes "
        "run.", SEE)


def test_on_device(ex, device):
    model = BadBatchNorm().to(device)
    x = _uniform(2, 4).to(device)
    got = ex.first_nonfinite(_trace(model), x)
    assert got == "bn", explain(f"%bn on {device}", repr(got), HINT, SEE)
    finite = LogOfNegative().to(device)
    x = _uniform(3, 4, low=2.0, high=3.0).to(device)
    got = ex.first_nonfinite(_trace(finite), x)
    assert got is None, explain(f"None on {device}: log(2x - 3) with x >= 2 is finite", repr(got),
                                HINT, SEE)
