"""Grader for exercise 6.2: merge consecutive Linears.

torch.fx has no such pass, so the oracles are torch eager and golden data: the
merged Linear must compute `second(first(x))` (the grader's own two modules, run
in float64), the merged GraphModule must compute what the model computes, its
graph must be the one written out below (a chain of three Linears becomes one),
and pairs that cannot be merged (something in between, a first Linear with another
use or user, training mode) must be left alone. No torch or minifx function merges
Linears, so there is no oracle to refuse here.
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from minifx.codegen import symbolic_trace
from tests.graders.support import (
    call_graded,
    describe_error,
    explain,
    explain_graphs,
    graph_module,
    graph_text,
    tensors_close,
    tensors_equal,
)

pytestmark = pytest.mark.ch6

SEE = "chapters/06-conv-bn-fusion.md#exercise-62-merge-consecutive-linears"


@pytest.fixture
def ex(impl):
    return impl.load("ch6_merge_linears")


# --- running student code --------------------------------------------------------


_ORDER = (
    "the weight is second.weight @ first.weight, (out2 x mid) @ (mid x in1): first's "
    "weight acts on x first, so it is on the right."
)


def _raise_hint(error: BaseException) -> str:
    if isinstance(error, NotImplementedError):
        return "write it: the stub still raises NotImplementedError."
    text = str(error)
    if "cannot be multiplied" in text or "size mismatch" in text:
        return _ORDER
    if "must match the size of tensor" in text:
        return (
            "the first bias has first's out_features entries: map it through the second "
            "weight, second.weight @ b1, before adding b2."
        )
    if "dtype" in text or "Double" in text or "Float" in text:
        return "build the merged Linear with dtype=first.weight.dtype (float64 here)."
    return "your code raised at the line shown."


# --- merged_linear -----------------------------------------------------------------


def _pair(sizes=(6, 5, 3), bias1=True, bias2=True, dtype=torch.float32):
    torch.manual_seed(0)
    return (
        nn.Linear(sizes[0], sizes[1], bias=bias1, dtype=dtype).eval(),
        nn.Linear(sizes[1], sizes[2], bias=bias2, dtype=dtype).eval(),
    )


PAIRS = {  # name -> the two Linears, made fresh for each test
    "both biases": lambda: _pair(),
    "first bias only": lambda: _pair(bias2=False),
    "second bias only": lambda: _pair(bias1=False),
    "no bias": lambda: _pair(bias1=False, bias2=False),
    "square, both biases": lambda: _pair((6, 6, 6)),
    "float64": lambda: _pair(dtype=torch.float64),
}


def _eager(*modules):
    """The modules' composition in float64, on copies: the grader's own oracle."""
    chain = nn.Sequential(*(copy.deepcopy(m) for m in modules)).double().eval()
    return lambda x: chain(x.double())


def _close(a, b) -> bool:
    return tensors_close(a, b, rtol=1e-5, atol=1e-6)


def _without_bias(linear: nn.Linear) -> nn.Linear:
    copied = copy.deepcopy(linear)
    copied.bias = None
    return copied


def _merged_hint(merged: nn.Linear, first: nn.Linear, second: nn.Linear) -> str:
    """What `merged` got wrong, found by running it and eager variants of the pair."""
    x = torch.randn(
        16, first.in_features, generator=torch.Generator().manual_seed(2), dtype=torch.float64
    )
    zero = torch.zeros(1, first.in_features, dtype=torch.float64)
    with torch.no_grad():
        run = lambda x: copy.deepcopy(merged).double()(x)  # noqa: E731
        want = _eager(first, second)
        if first.in_features == second.out_features and _close(run(x), _eager(second, first)(x)):
            return _ORDER
        if not _close(run(x) - run(zero), want(x) - want(zero)):
            return (
                _ORDER
                if first.in_features == second.out_features
                else "the weight is second.weight @ first.weight."
            )
        if first.bias is not None and _close(run(x), _eager(_without_bias(first), second)(x)):
            return (
                "the first bias goes through the second Linear too: the bias is "
                "second.weight @ b1 + b2."
            )
        if second.bias is not None and _close(run(x), _eager(first, _without_bias(second))(x)):
            return "add the second bias: second.weight @ b1 + b2."
        added = (
            first.bias is not None
            and first.out_features == second.out_features
            and _close(run(zero), _eager(first)(zero) + _eager(second)(zero))
        )  # b1 + b2
        if added:
            return (
                "b1 + b2 is not the bias: b1 goes through the second weight, "
                "second.weight @ b1 + b2."
            )
    return "the bias is second.weight @ b1 + b2, a missing bias counting as 0."


def _check_merged(ex, first: nn.Linear, second: nn.Linear) -> tuple[str, str] | None:
    """What is wrong with `ex.merged_linear(first, second)`, as (got, hint); None if nothing."""
    has_bias = first.bias is not None or second.bias is not None
    before = copy.deepcopy(nn.Sequential(first, second)).state_dict()
    merged, raised = call_graded(ex.merged_linear, first, second)
    if raised is not None:
        return describe_error(raised), _raise_hint(raised)
    if type(merged) is not nn.Linear:  # a subclass of the student's could forward as it likes
        return repr(merged), "return a new nn.Linear (torch's own class, not a subclass)."
    if (merged.bias is not None) != has_bias:
        return repr(merged), (
            "the merged Linear has a bias unless neither Linear has one: b1 and "
            "b2 both end up in it."
            if has_bias
            else "no bias when neither Linear has one (bias=False)."
        )
    if merged.weight.dtype != first.weight.dtype:
        return f"a {merged.weight.dtype} weight", (
            "build it in the weights' dtype: dtype=first.weight.dtype."
        )
    after = nn.Sequential(first, second).state_dict()
    changed = [k for k in before if not tensors_equal(before[k], after[k])]
    if changed:
        return (
            f"first and second changed: {changed}",
            "build a new nn.Linear; write only its parameters.",
        )
    x = torch.randn(16, first.in_features, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        want, got = _eager(first, second)(x), copy.deepcopy(merged).double()(x.double())
    if not _close(got, want):
        return (
            f"outputs off by up to {(got - want).abs().max().item():.3g}",
            _merged_hint(merged, first, second),
        )
    return None


@pytest.mark.parametrize("case", PAIRS)
def test_merged_linear(ex, case):
    first, second = PAIRS[case]()
    has_bias = first.bias is not None or second.bias is not None
    what = (
        f"merged_linear ({case}): a new nn.Linear({first.in_features}, {second.out_features}, "
        f"bias={has_bias}, dtype={first.weight.dtype}) computing second(first(x)); first and "
        "second unchanged"
    )
    problem = _check_merged(ex, first, second)
    if problem:
        pytest.fail(explain(what, *problem, SEE), pytrace=False)


def _merged_linear_wrong(ex) -> str | None:
    """The hint for the first PAIRS case merged_linear gets wrong, or None if it is right."""
    for make in PAIRS.values():
        problem = _check_merged(ex, *make())
        if problem:
            return "fix merged_linear first: " + problem[1]
    return None


# --- the pass ----------------------------------------------------------------------


class Chain(nn.Module):
    """Three Linears in a row (the middle one without bias), a relu, and a head."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = (
            nn.Linear(6, 16),
            nn.Linear(16, 8, bias=False),
            nn.Linear(8, 8),
        )
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        return self.head(torch.relu(self.fc3(self.fc2(self.fc1(x)))))


def chain() -> Chain:
    torch.manual_seed(0)
    return Chain().eval()


EXPECTED_CHAIN = """\
graph():
    %x : [num_users=1] = placeholder[target=x]
    %fc1 : [num_users=1] = call_module[target=fc1](args = (%x,), kwargs = {})
    %relu : [num_users=1] = call_function[target=torch.relu](args = (%fc1,), kwargs = {})
    %head : [num_users=1] = call_module[target=head](args = (%relu,), kwargs = {})
    return head"""


class OutputUsedTwice(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(6, 6), nn.Linear(6, 6)

    def forward(self, x):
        y = self.fc1(x)
        return self.fc2(y) + y


class FirstCalledTwice(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(6, 6), nn.Linear(6, 6)

    def forward(self, x):
        return self.fc2(self.fc1(x)) + self.fc1(x)


class ReluBetween(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(6, 6), nn.Linear(6, 6)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def in_training(part: str) -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 6), nn.Linear(6, 6)).eval()
    model.get_submodule(part).train()
    return model


def _seeded(factory):
    def make():
        torch.manual_seed(0)
        return factory().eval()

    return make


LEFT_ALONE = {  # name -> model, the hint if a Linear node goes; every Linear node must stay
    "first output used twice": (
        _seeded(OutputUsedTwice),
        "leave the pair alone when the first Linear's output has another "
        "user (len(first_node.users) == 1): it needs that output as it is.",
    ),
    "first Linear called twice": (
        _seeded(FirstCalledTwice),
        "leave the pair alone when the first module has another use "
        "(other_uses(first_node)): that call needs its weights unchanged.",
    ),
    "relu in between": (
        _seeded(ReluBetween),
        "merge only when the second Linear's input is the first Linear's call "
        "node: a relu in between is not linear.",
    ),
    "first Linear in training mode": (
        lambda: in_training("0"),
        "leave the pair alone when the first Linear is in training "
        "mode (first.training): merge only eval-mode Linears.",
    ),
    "second Linear in training mode": (
        lambda: in_training("1"),
        "leave the pair alone when the second Linear is in training "
        "mode (second.training): merge only eval-mode Linears.",
    ),
}


def _merge(ex, model, what: str):
    """`ex.merge_linears` of a traced copy of `model`, or a failed test that says why it raised."""
    gm, raised = call_graded(ex.merge_linears, symbolic_trace(copy.deepcopy(model)))
    if raised is not None:
        hint = _raise_hint(raised)
        if hint == _ORDER:  # a shape error in the pass: merged_linear's, or stale modules'
            hint = _merged_linear_wrong(ex) or _STALE
        pytest.fail(explain(what, describe_error(raised), hint, SEE), pytrace=False)
    return graph_module(gm, what, SEE)  # printed and run only as minifx's own


def _outputs_differ(gm, model, device="cpu") -> str | None:
    """None when `gm` computes what `model` computes on a random input, else how far off."""
    x = torch.randn(5, 6, generator=torch.Generator().manual_seed(0)).to(device)
    with torch.no_grad():
        want = model(x)
        got, raised = call_graded(gm, x)
    if raised is not None:
        return f"running the merged GraphModule raised {describe_error(raised)}"
    if tensors_close(got, want, rtol=1e-4, atol=1e-5) and got.device == want.device:
        return None
    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        return f"an output of {type(got).__name__} {getattr(got, 'shape', '')}"
    if got.device != want.device:
        return f"an output on {got.device}"
    return f"outputs that differ by up to {(got - want).abs().max().item():.3g}"


_STALE = (
    "after each merge, modules[first_node.target] = merged: fc3 then merges into the "
    "merged fc1, not into the fc1 you started with."
)


def test_a_chain_of_three_becomes_one(ex):
    gm = _merge(ex, chain(), "merge_linears of the chain fc1 -> fc2 -> fc3 -> relu -> head")
    got = graph_text(gm.graph, "gm.graph after merge_linears of the chain", SEE)
    if got != EXPECTED_CHAIN:
        if "%fc2" in got and "%fc3" in got:
            hint = (
                "nothing was merged: merge each nn.Linear call whose only argument is another "
                "eval-mode nn.Linear call (modules = dict(gm.named_modules()))."
            )
        elif "%fc1" not in got:
            hint = "keep the first node (fc1) and erase the second; the merged Linear takes fc1's name."
        else:
            hint = (
                "keep the first node, erase the second; walking in order, the merged fc1 is "
                "then the input of fc3, which merges into it again."
            )
        pytest.fail(
            explain_graphs(
                "the chain's graph after merge_linears: fc1 (merged) -> relu -> head",
                EXPECTED_CHAIN,
                got,
                hint,
                SEE,
            ),
            pytrace=False,
        )
    modules = sorted(name for name, _ in gm.named_modules())
    if modules != ["", "fc1", "head"]:
        pytest.fail(
            explain(
                "the submodules '', 'fc1', 'head'",
                repr(modules),
                "remove the modules no node uses: gm.delete_all_unused_submodules().",
                SEE,
            ),
            pytrace=False,
        )


def test_outputs_equal_the_model(ex):
    model = chain()
    gm = _merge(ex, model, "merge_linears of the chain")
    differ = _outputs_differ(gm, model)
    if differ:
        hint = _merged_linear_wrong(ex) or _STALE
        pytest.fail(
            explain("the merged GraphModule computes what the model computes", differ, hint, SEE),
            pytrace=False,
        )


@pytest.mark.parametrize("case", list(LEFT_ALONE))
def test_pairs_that_cannot_be_merged_are_left_alone(ex, case):
    make, hint = LEFT_ALONE[case]
    model = make()
    want = str(symbolic_trace(model).graph)
    gm = _merge(ex, model, f"merge_linears of the {case} model, which it leaves alone")
    got = graph_text(gm.graph, f"gm.graph after merge_linears ({case})", SEE)
    if got != want:
        pytest.fail(
            explain_graphs(f"{case}: the graph unchanged", want, got, hint, SEE),
            pytrace=False,
        )
    differ = _outputs_differ(gm, model)
    if differ:
        pytest.fail(
            explain(
                f"the {case} model computes what it did before the pass",
                differ,
                _merged_linear_wrong(ex) or hint,
                SEE,
            ),
            pytrace=False,
        )


def test_on_device(ex, device):
    model = chain().to(device)
    gm = _merge(ex, model, f"merge_linears of the chain on {device}")
    fc1 = dict(gm.named_modules()).get("fc1")
    if not isinstance(fc1, nn.Linear) or fc1.weight.device.type != device:
        pytest.fail(
            explain(
                f"the merged Linear fc1 on {device}",
                repr(getattr(fc1, "weight", fc1)),
                "create it with device=first.weight.device.",
                SEE,
            ),
            pytrace=False,
        )
    differ = _outputs_differ(gm, model, device)
    if differ:
        pytest.fail(
            explain(
                f"the merged GraphModule computes what the model computes, on {device}",
                differ,
                _merged_linear_wrong(ex) or _STALE,
                SEE,
            ),
            pytrace=False,
        )
