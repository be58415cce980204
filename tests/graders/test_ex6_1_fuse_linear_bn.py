"""Grader for exercise 6.1: fuse Linear and BatchNorm1d.

The oracles are golden data and torch eager, never a fusion: the fused graph must
print as written below (which is what torch.fx's `fuse` makes of the same model),
`fused_linear(linear, bn)` must compute what `bn(linear(x))` computes in float64 on
the grader's own modules, the fused GraphModule must compute what the unfused model
computes, and the pairs that cannot be fused (training mode, a Linear with another
use or user, a Conv1d) must be left alone.

The exercise says implement the fusion, so handing it to torch
(`torch.nn.utils.fusion.fuse_linear_bn_eval`, `torch.fx.experimental.optimization.fuse`)
or to chapter 6's pass (`minifx.passes.fuse_conv_bn`) fails: where the module names
them, and where they are called while the grader runs it.
"""

from __future__ import annotations

import ast
import copy
import functools
import inspect
import traceback
from pathlib import Path

import pytest
import torch
import torch.fx.experimental.optimization
import torch.nn.utils.fusion
from torch import nn

import minifx.passes.fuse_conv_bn
from minifx.codegen import symbolic_trace
from tests.graders.support import (
    call_graded,
    describe_error,
    explain,
    explain_graphs,
    graded_line,
    graph_module,
    graph_text,
    oracle_uses,
    tensors_close,
    tensors_equal,
)

pytestmark = pytest.mark.ch6

SEE = "chapters/06-conv-bn-fusion.md#exercise-61-fuse-linear-and-batchnorm1d"


# --- the oracles the exercise rebuilds: named or called, they fail the test ----------

ORACLES = {  # module -> the functions that would do the exercise's work
    torch.nn.utils.fusion: (
        "fuse_linear_bn_eval",
        "fuse_linear_bn_weights",
        "fuse_conv_bn_eval",
        "fuse_conv_bn_weights",
    ),
    torch.fx.experimental.optimization: ("fuse",),
    minifx.passes.fuse_conv_bn: ("fuse_conv_bn", "fuse_conv_bn_eval", "fuse_conv_bn_weights"),
}
# Names that may not appear in the student's module ("fuse" alone is too common a word).
ORACLE_NAMES = sorted(
    {name for names in ORACLES.values() for name in names} - {"fuse"} | {"optimization"}
)
_DELEGATED = (
    "implement the fusion yourself: the exercise asks for the algebra and the pass, "
    "which {tool} does for you. Compute scale = bn.weight / sqrt(running_var + eps) and "
    "the new weight and bias from the modules' tensors."
)


class OracleUses:
    """Replaces each oracle by a wrapper that records where graded code called it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def start(self, monkeypatch: pytest.MonkeyPatch, module) -> None:
        """Record the calls of one test: wrap the oracles until the test's teardown."""
        self.calls.clear()
        wrappers = {}
        for owner, names in ORACLES.items():
            for name in names:
                original = getattr(owner, name)
                wrappers[id(original)] = wrapper = self._recording(
                    original, f"{owner.__name__}.{name}"
                )
                monkeypatch.setattr(owner, name, wrapper)
        for name, value in list(vars(module).items()):  # `from torch.nn.utils.fusion import ...`
            if id(value) in wrappers:
                monkeypatch.setattr(module, name, wrappers[id(value)])

    def _recording(self, original, label: str):
        @functools.wraps(original)
        def recorded(*args, **kwargs):
            self.calls.append((label, graded_line(traceback.extract_stack()[:-1])))
            return original(*args, **kwargs)

        del recorded.__wrapped__  # functools.wraps keeps the original there: not for graded code
        return recorded

    def check(self, what: str) -> None:
        if self.calls:
            label, line = self.calls[0]
            pytest.fail(
                explain(
                    f"{what}, by your own code",
                    f"a call of {label}, at {line}",
                    _DELEGATED.format(tool=label),
                    SEE,
                ),
                pytrace=False,
            )


def _imports_from_oracles(module) -> list[str]:
    """`from <an oracle's module> import ...` (oracle_uses reads the names imported, not the module)."""
    modules = {owner.__name__ for owner in ORACLES}
    return [
        f"line {node.lineno}: {node.module}"
        for node in ast.walk(ast.parse(inspect.getsource(module)))
        if isinstance(node, ast.ImportFrom) and node.module in modules
    ]


@pytest.fixture
def ex(impl, monkeypatch):
    module = impl.load("ch6_fuse_linear_bn")
    used = oracle_uses(module, ORACLE_NAMES) + _imports_from_oracles(module)
    if used:
        path = Path(module.__file__)
        pytest.fail(
            explain(
                "a fusion written with your own code",
                f"{path.parent.name}/{path.name} names {', '.join(used)}",
                _DELEGATED.format(tool=" / ".join(sorted({u.split(": ")[1] for u in used}))),
                SEE,
            ),
            pytrace=False,
        )
    _RECORDER.start(monkeypatch, module)
    return module


_RECORDER = OracleUses()  # the oracles' calls in the running test


# --- running student code --------------------------------------------------------


def _raise_hint(error: BaseException) -> str:
    if isinstance(error, NotImplementedError):
        return "write it: the stub still raises NotImplementedError."
    if "must match the size of tensor" in str(error):
        return (
            "a Linear's weight is (out_features, in_features) and scale has one number per "
            "output feature: scale the rows, linear.weight * scale[:, None]."
        )
    return "your code raised at the line shown."


def _run(what: str, fn, *args):
    """`fn(*args)`, or a failed test that names the student's line; no oracle may be called."""
    got, raised = call_graded(fn, *args)
    _RECORDER.check(what)
    if raised is not None:
        pytest.fail(explain(what, describe_error(raised), _raise_hint(raised), SEE), pytrace=False)
    return got


# --- models ----------------------------------------------------------------------


def with_statistics(model: nn.Module) -> nn.Module:
    """Eval mode, and BatchNorm statistics and parameters away from 0 and 1."""
    generator = torch.Generator().manual_seed(1)
    for bn in model.modules():
        if isinstance(bn, nn.BatchNorm1d):
            shape = bn.running_mean.shape
            bn.running_mean.copy_(torch.rand(shape, generator=generator) * 2 - 1)
            bn.running_var.copy_(torch.rand(shape, generator=generator) * 2 + 0.5)
            bn.weight.data.copy_(torch.rand(shape, generator=generator) + 0.5)
            bn.bias.data.copy_(torch.rand(shape, generator=generator) - 0.5)
    return model.eval()


class MLP(nn.Module):
    """Two Linear + BatchNorm1d pairs (one Linear without bias, one BatchNorm with a large
    eps), and a head with no BN."""

    def __init__(self):
        super().__init__()
        self.fc1, self.bn1 = nn.Linear(6, 16), nn.BatchNorm1d(16)
        self.fc2, self.bn2 = nn.Linear(16, 8, bias=False), nn.BatchNorm1d(8, eps=0.1)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        x = torch.relu(self.bn1(self.fc1(x)))
        return self.head(torch.relu(self.bn2(self.fc2(x))))


def mlp() -> MLP:
    torch.manual_seed(0)
    return with_statistics(MLP())


# What torch.fx.experimental.optimization.fuse makes of MLP, printed (written out).
EXPECTED_MLP = """\
graph():
    %x : [num_users=1] = placeholder[target=x]
    %fc1 : [num_users=1] = call_module[target=fc1](args = (%x,), kwargs = {})
    %relu : [num_users=1] = call_function[target=torch.relu](args = (%fc1,), kwargs = {})
    %fc2 : [num_users=1] = call_module[target=fc2](args = (%relu,), kwargs = {})
    %relu_1 : [num_users=1] = call_function[target=torch.relu](args = (%fc2,), kwargs = {})
    %head : [num_users=1] = call_module[target=head](args = (%relu_1,), kwargs = {})
    return head"""


class OutputUsedTwice(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.bn = nn.Linear(6, 6), nn.BatchNorm1d(6)

    def forward(self, x):
        y = self.fc(x)
        return self.bn(y) + y


class LinearCalledTwice(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.bn = nn.Linear(6, 6), nn.BatchNorm1d(6)

    def forward(self, x):
        return self.bn(self.fc(x)) + self.fc(x)


def training_bn() -> nn.Module:
    model = mlp()
    model.bn1.train()
    return model


def training_linear() -> nn.Module:
    model = mlp()
    model.fc2.train()
    return model


class ConvBN(nn.Module):
    """A Conv1d + BatchNorm1d pair: chapter 6's pass fuses it, this exercise does not."""

    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv1d(6, 6, 1), nn.BatchNorm1d(6)

    def forward(self, x):
        return self.bn(self.conv(x))


def _seeded(factory):
    def make():
        torch.manual_seed(0)
        return with_statistics(factory())

    return make


LEFT_ALONE = {  # name -> model, input shape, the BatchNorm nodes that must stay, the hint
    "output used twice": (
        _seeded(OutputUsedTwice),
        (5, 6),
        ["bn"],
        "leave the pair alone when the Linear's output has another user "
        "(len(linear_node.users) == 1): that user needs it unnormalized.",
    ),
    "Linear called twice": (
        _seeded(LinearCalledTwice),
        (5, 6),
        ["bn"],
        "leave the pair alone when the Linear module has another use "
        "(other_uses(linear_node)): that call needs the weights unchanged.",
    ),
    "BatchNorm1d in training mode": (
        training_bn,
        (5, 6),
        ["bn1"],
        "leave alone a BatchNorm in training mode (bn.training): it "
        "normalizes with the batch's statistics, not running ones.",
    ),
    "Linear in training mode": (
        training_linear,
        (5, 6),
        ["bn2"],
        "leave alone a Linear in training mode (linear.training): fuse only "
        "when both modules are in eval mode.",
    ),
    "Conv1d + BatchNorm1d": (
        _seeded(ConvBN),
        (5, 6, 4),
        ["bn"],
        "fuse only exactly an nn.Linear (type(module) is nn.Linear) before the "
        "BatchNorm1d: a Conv1d's weight has another shape.",
    ),
}


def _fuse(ex, model, what: str):
    gm = _run(what, ex.fuse_linear_bn, symbolic_trace(copy.deepcopy(model)))
    return graph_module(gm, what, SEE)  # printed and run only as minifx's own


def _require_fusing(ex, what: str) -> None:
    """Fail unless the pass fuses the MLP's pairs: a pass that does nothing would pass `what`
    (a graph left alone, outputs unchanged) without doing the exercise."""
    left = _batchnorm_nodes(_fuse(ex, mlp(), "fuse_linear_bn of the MLP"))
    if left:
        pytest.fail(
            explain(
                f"{what}, from a pass that also fuses the MLP's pairs",
                f"the MLP's BatchNorm node(s) {left} still in the graph",
                "a pass that does nothing passes this check too: fuse first (see "
                "test_batchnorm_modules_are_gone), then this test counts.",
                SEE,
            ),
            pytrace=False,
        )


def _batchnorm_nodes(gm) -> list[str]:
    return [
        n.name
        for n in gm.graph.nodes
        if n.op == "call_module" and isinstance(gm.get_submodule(n.target), nn.BatchNorm1d)
    ]


def _outputs_differ(gm, model, shape, device="cpu") -> str | None:
    """None when `gm` computes what `model` computes on a random input, else how far off."""
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0)).to(device)
    with torch.no_grad():
        want, got = model(x), gm(x)
    if tensors_close(got, want, rtol=1e-4, atol=1e-5) and got.device == want.device:
        return None
    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        return f"an output of {type(got).__name__} {getattr(got, 'shape', '')}"
    if got.device != want.device:
        return f"an output on {got.device}"
    return f"outputs that differ by up to {(got - want).abs().max().item():.3g}"


# --- fused_linear -------------------------------------------------------------------


def _square_pair():
    torch.manual_seed(0)
    pair = with_statistics(nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8, eps=0.5)))
    return pair[0], pair[1]


PAIRS = {  # name -> (linear, bn), made fresh for each test
    "a Linear with bias": lambda: (lambda m: (m.fc1, m.bn1))(mlp()),
    "a Linear without bias, eps 0.1": lambda: (lambda m: (m.fc2, m.bn2))(mlp()),
    "a square Linear, eps 0.5": _square_pair,
}


def _eager(*modules):
    """The modules' composition in float64, on copies: the grader's own oracle."""
    chain = nn.Sequential(*(copy.deepcopy(m) for m in modules)).double().eval()
    return lambda x: chain(x.double())


def _close(a, b) -> bool:
    return tensors_close(a, b, rtol=1e-5, atol=1e-6)


def _fused_linear_hint(fused: nn.Linear, linear: nn.Linear, bn: nn.BatchNorm1d) -> str:
    """What `fused` got wrong, found by running it and eager variants of the pair."""
    x = torch.randn(
        16, linear.in_features, generator=torch.Generator().manual_seed(2), dtype=torch.float64
    )
    zero = torch.zeros(1, linear.in_features, dtype=torch.float64)
    with torch.no_grad():
        run = lambda x: copy.deepcopy(fused).double()(x)  # noqa: E731
        want = _eager(linear, bn)
        got_bias, want_bias = run(zero), want(zero)
        no_eps = copy.deepcopy(bn)
        no_eps.eps = 1e-300  # as good as none; torch 2.11's BatchNorm refuses an eps of 0
        if _close(run(x), _eager(linear, no_eps)(x)):
            return f"divide by sqrt(running_var + eps): bn.eps is {bn.eps:g} here."
        if _close(run(x) - got_bias, want(x) - want_bias):  # the weight is right
            if linear.bias is not None:
                no_bias = copy.deepcopy(linear)
                no_bias.bias = None
                if _close(got_bias, _eager(no_bias, bn)(zero)):
                    return (
                        "the bias misses the Linear's own bias: start from b = linear.bias (0 "
                        "only when it is None), then (b - running_mean) * scale + bn.bias."
                    )
            no_mean = copy.deepcopy(bn)
            no_mean.running_mean.zero_()
            if _close(got_bias, _eager(linear, no_mean)(zero)):
                return "subtract running_mean from the bias: (b - running_mean) * scale + bn.bias."
            return "the weight is right, the bias is not: (b - running_mean) * scale + bn.bias."
        scale = _eager(bn)(torch.ones(1, bn.num_features)) - _eager(bn)(
            torch.zeros(1, bn.num_features)
        )
        by_column = copy.deepcopy(linear).double()
        if linear.in_features == linear.out_features and _close(
            run(x) - got_bias, by_column(x * scale) - by_column(zero)
        ):
            return (
                "row i of the weight is output feature i: scale the rows, "
                "linear.weight * scale[:, None], not the columns."
            )
        if _close(fused.weight.detach().double(), linear.weight.detach().double()):
            return "scale the weight too: row i times scale[i] (linear.weight * scale[:, None])."
    return (
        "scale = bn.weight / sqrt(running_var + eps), one per output feature; weight rows "
        "times scale (weight * scale[:, None]); bias (b - running_mean) * scale + bn.bias."
    )


def _check_fused(ex, linear: nn.Linear, bn: nn.BatchNorm1d) -> tuple[str, str] | None:
    """What is wrong with `ex.fused_linear(linear, bn)`, as (got, hint); None if nothing."""
    before = copy.deepcopy(nn.Sequential(linear, bn)).state_dict()
    fused, raised = call_graded(ex.fused_linear, linear, bn)
    _RECORDER.check("fused_linear(linear, bn)")
    if raised is not None:
        return describe_error(raised), _raise_hint(raised)
    if type(fused) is not nn.Linear or fused.bias is None:  # a subclass could forward as it likes
        return repr(fused), (
            "return an nn.Linear (torch's own class, not a subclass) with a bias "
            "(copy.deepcopy(linear), then new nn.Parameters), even when linear has none."
        )
    after = nn.Sequential(linear, bn).state_dict()
    changed = [k for k in before if not tensors_equal(before[k], after[k])]
    if changed or fused is linear:
        return (
            f"linear and bn changed: {changed or 'linear itself returned'}",
            "copy.deepcopy(linear), then give the copy new nn.Parameters: the modules you are "
            "given may be used elsewhere.",
        )
    x = torch.randn(16, linear.in_features, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        want, got = _eager(linear, bn)(x), copy.deepcopy(fused).double()(x.double())
    if not _close(got, want):
        return (
            f"outputs off by up to {(got - want).abs().max().item():.3g}",
            _fused_linear_hint(fused, linear, bn),
        )
    return None


@pytest.mark.parametrize("case", PAIRS)
def test_fused_linear(ex, case):
    problem = _check_fused(ex, *PAIRS[case]())
    if problem:
        pytest.fail(
            explain(
                f"fused_linear for {case}: a new nn.Linear computing bn(linear(x)); "
                "linear and bn unchanged",
                *problem,
                SEE,
            ),
            pytrace=False,
        )


# --- the pass ----------------------------------------------------------------------


def _fused_linear_wrong(ex) -> str | None:
    """The hint for the first PAIRS case fused_linear gets wrong, or None if it is right."""
    for make in PAIRS.values():
        problem = _check_fused(ex, *make())
        if problem:
            return "fix fused_linear first: " + problem[1]
    return None


def test_the_graph_is_torch_fx_fused_graph(ex):
    gm = _fuse(ex, mlp(), "fuse_linear_bn of the MLP")
    got = graph_text(gm.graph, "gm.graph after fuse_linear_bn of the MLP", SEE)
    if got == EXPECTED_MLP:
        return
    if _batchnorm_nodes(gm) == ["bn1", "bn2"]:
        hint = (
            "nothing was fused: fold every eval-mode BatchNorm1d whose input is a call_module "
            "node of an nn.Linear (modules = dict(gm.named_modules()))."
        )
    elif not any(n.name in ("fc1", "fc2") for n in gm.graph.nodes):
        hint = "keep the Linear node and its name; erase the BatchNorm node."
    else:
        hint = (
            "point the BatchNorm node's users at the Linear node (replace_all_uses_with), then "
            "erase the BatchNorm node; keep the Linear node and its name."
        )
    pytest.fail(
        explain_graphs(
            "the MLP's graph after fuse_linear_bn: no BatchNorm node, each "
            "Linear node where it was",
            EXPECTED_MLP,
            got,
            hint,
            SEE,
        ),
        pytrace=False,
    )


def test_outputs_equal_the_unfused_model(ex):
    _require_fusing(ex, "the outputs of the unfused model")
    model = mlp()
    gm = _fuse(ex, model, "fuse_linear_bn of the MLP")
    differ = _outputs_differ(gm, model, (5, 6))
    if differ:
        hint = _fused_linear_wrong(ex) or (
            "install the fused Linear under the Linear's name (gm.add_submodule(linear_node.target, "
            "fused)) and recompile: the GraphModule runs the modules its nodes name."
        )
        pytest.fail(
            explain(
                "the fused GraphModule computes what the unfused model computes", differ, hint, SEE
            ),
            pytrace=False,
        )


def test_batchnorm_modules_are_gone(ex):
    gm = _fuse(ex, mlp(), "fuse_linear_bn of the MLP")
    left = [name for name, m in gm.named_modules() if isinstance(m, nn.BatchNorm1d)]
    nodes = _batchnorm_nodes(gm)
    if left or nodes:
        hint = (
            "erase the BatchNorm nodes (gm.graph.erase_node) once their users read the Linear."
            if nodes
            else "after erasing the nodes, gm.delete_all_unused_submodules()."
        )
        pytest.fail(
            explain(
                "no BatchNorm1d node and no BatchNorm1d submodule left",
                f"nodes {nodes}, submodules {left}",
                hint,
                SEE,
            ),
            pytrace=False,
        )


@pytest.mark.parametrize("case", list(LEFT_ALONE))
def test_pairs_that_cannot_be_fused_are_left_alone(ex, case):
    make, shape, kept, hint = LEFT_ALONE[case]
    _require_fusing(ex, f"{case}: the pair left alone")
    model = make()
    want = str(symbolic_trace(model).graph)
    gm = _fuse(ex, model, f"fuse_linear_bn of the {case} model, which it leaves alone")
    if [name for name in _batchnorm_nodes(gm) if name in kept] != kept:
        pytest.fail(
            explain_graphs(
                f"{case}: the BatchNorm node(s) {kept} left in the graph",
                want,
                str(gm.graph),
                hint,
                SEE,
            ),
            pytrace=False,
        )
    differ = _outputs_differ(gm, model, shape)
    if differ:
        pytest.fail(
            explain(
                f"the {case} model computes what it did before the pass",
                differ,
                _fused_linear_wrong(ex) or hint,
                SEE,
            ),
            pytrace=False,
        )


def test_on_device(ex, device):
    model = mlp().to(device)
    gm = _fuse(ex, model, f"fuse_linear_bn of the MLP on {device}")
    fc1 = dict(gm.named_modules()).get("fc1")
    if _batchnorm_nodes(gm):
        pytest.fail(
            explain(
                f"the MLP fused on {device}",
                f"the BatchNorm node(s) {_batchnorm_nodes(gm)} still in the graph",
                "fuse every eval-mode Linear + BatchNorm1d pair, wherever its tensors live.",
                SEE,
            ),
            pytrace=False,
        )
    if not isinstance(fc1, nn.Linear) or fc1.weight.device.type != device:
        pytest.fail(
            explain(
                f"the fused Linear fc1 on {device}",
                repr(getattr(fc1, "weight", fc1)),
                "compute from the modules' own tensors, which are on the device "
                "already; create nothing on the CPU.",
                SEE,
            ),
            pytrace=False,
        )
    differ = _outputs_differ(gm, model, (5, 6), device)
    if differ:
        pytest.fail(
            explain(
                f"the fused GraphModule computes what the model computes, on {device}",
                differ,
                _fused_linear_wrong(ex) or "compute from the modules' own tensors.",
                SEE,
            ),
            pytrace=False,
        )
