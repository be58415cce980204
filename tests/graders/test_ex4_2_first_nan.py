"""Grader for exercise 4.2: find the first NaN.

Expected values are golden: each model below has its first non-finite value
at a node written out by name, and `is_finite` has a table of values with the
answer for each. The grader runs the student's `NonFiniteChecker` with its own
copy of the given `first_nonfinite`.
"""

import traceback
from pathlib import Path

import pytest
import torch
from torch import nn

from minifx.codegen import GraphModule
from minifx.graph import Tracer
from tests.graders.support import describe_error, explain, not_plain, plain, tensors_equal

pytestmark = [pytest.mark.ch4, pytest.mark.filterwarnings("ignore:std_mean")]

SEE = "chapters/04-interpreter.md#exercise-42-find-the-first-nan"
NAN, INF = float("nan"), float("inf")


@pytest.fixture
def ex(impl):
    return impl.load("ch4_first_nan")


# --- hints ----------------------------------------------------------------------------

INPUTS = (
    "check the value the node produced (super().run_node(n)), not the values it read: "
    "the node to report is the one whose own value is not finite."
)
INFINITY = "an infinity is not finite either: test with torch.isfinite, not only torch.isnan."
ANY = (
    "one NaN among finite values is enough: torch.isfinite(t).all(), not .any(), which is "
    "True when a single element is finite."
)
TUPLE = (
    "look inside tuples and lists (torch.std_mean returns a tuple): the value is finite "
    "only if each item is."
)
DICT = (
    "look inside dicts, at their values, and nest: call is_finite on each item, so that a "
    "tuple in a dict is looked into too."
)
NESTED = "nest: call is_finite on each item, so that a tuple in a list in a dict is looked into."
FLOAT = (
    "a Python float can be NaN or infinite too (`s * 1e308` overflows to inf): check it with "
    "math.isfinite."
)
ENTRY = (
    "check every node, placeholder and get_attr nodes too: a NaN in an input or a "
    "parameter is reported where it enters the graph."
)
OTHER = (
    "anything other than a tensor, a float, or a tuple, list or dict counts as finite: an "
    "int, None, a string, a torch.dtype, ..."
)
INTEGRAL = "a bool or an int tensor holds no NaN: torch.isfinite says so; it is finite."


# --- models ---------------------------------------------------------------------------


class LogOfNegative(nn.Module):
    def forward(self, x):
        y = x * 2
        return torch.log(y - 3).exp() + y  # %log: log of a negative number


class ZeroOverZero(nn.Module):
    def forward(self, x):
        d = x - x
        return (d / d).sum() + x  # %truediv: 0 / 0


class InfPlusOne(nn.Module):
    def forward(self, x):
        big = torch.exp(x * 1000) + 1  # %exp: inf, still inf after + 1
        return big - big  # NaN only here


class Stats(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("shift", torch.tensor([0.0, NAN, 0.0, 0.0]))


class PoisonedBuffer(nn.Module):
    """One NaN among finite values in a buffer of a submodule, read by a get_attr node."""

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
        return self.bn(self.fc(x)).relu()  # %bn


class TwoInputs(nn.Module):
    def forward(self, x, y):
        return x.sigmoid() * y  # %y, when y holds a NaN


class SingleSampleStd(nn.Module):
    """torch.std_mean returns a tuple; the std of one sample is NaN."""

    def forward(self, x):
        std, mean = torch.std_mean(x, dim=0)  # %std_mean, a tuple
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


class FloatOverflow(nn.Module):
    """A Python float that overflows: %item is a float, %mul = item * 1e308 is inf."""

    def forward(self, x):
        s = x.sum().item()
        return x * (s * 1e308)


class AllFinite(nn.Module):
    """Finite values of every kind: tensors, ints, a torch.Size, a torch.dtype, a bool
    tensor, a tuple."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        n = x.shape[0]
        positive = x > 0
        first, second = self.fc(x).chunk(2, dim=-1)
        return (first * positive[:, :2] + second.softmax(-1)).to(x.dtype) * n, x.size()


def _uniform(*shape: int, low: float = 0.0, high: float = 1.0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(0)
    return low + (high - low) * torch.rand(shape, generator=generator)


# case -> (model class, inputs, the first node whose value is not finite, and what plausible
# mistakes name instead, with the hint for each).
CASES = {
    "log of a negative number": (LogOfNegative, lambda: (_uniform(3, 4),), "log", {}),
    "0 / 0": (ZeroOverZero, lambda: (_uniform(3, 4),), "truediv", {}),
    "inf is not finite either": (InfPlusOne, lambda: (_uniform(3, 4, low=0.5),), "exp",
                                 {"sub": INFINITY}),
    "NaN in a buffer (get_attr)": (PoisonedBuffer, lambda: (_uniform(2, 4),), "stats_shift",
                                   {"add": ENTRY, None: ANY}),
    "NaN inside a submodule (call_module)": (BadBatchNorm, lambda: (_uniform(2, 4),), "bn", {}),
    "NaN in an input (placeholder)":
        (TwoInputs, lambda: (_uniform(2, 3), torch.tensor([1.0, NAN, 2.0])), "y",
         {"mul": ENTRY, None: ANY}),
    "NaN in a returned tuple": (SingleSampleStd, lambda: (_uniform(1, 5),), "std_mean",
                                {"getitem": TUPLE}),
    "NaN in a tuple in a dict": (WithHead, lambda: (_uniform(2, 4),), "head",
                                 {"getitem_1": DICT, "getitem_2": TUPLE}),
    "inf in a Python float": (FloatOverflow, lambda: (_uniform(3, 4),), "mul", {"mul_1": FLOAT}),
}  # fmt: skip


class _HeadLeaf(Tracer):
    def is_leaf_module(self, m, module_qualified_name):
        return isinstance(m, Head) or super().is_leaf_module(m, module_qualified_name)


def _trace(model: nn.Module) -> GraphModule:
    """minifx's GraphModule of `model`, with `Head` as a leaf module."""
    return GraphModule(model, _HeadLeaf().trace(model))


# --- running the student's checker ----------------------------------------------------


def _fail_raised(what: str, error: BaseException, hint: str | None = None):
    """Fail with the student's line, and the hint for the error they made."""
    frames = traceback.extract_tb(error.__traceback__)
    last = frames[-1] if frames else None
    ours = [f for f in frames if Path(f.filename).parent.name in ("exercises", "solutions")]
    if hint is None:
        if isinstance(error, NotImplementedError):
            hint = "write is_finite and NonFiniteChecker.run_node: the stub still raises."
        elif isinstance(error, AttributeError) and "'str' object has no attribute" in str(error):
            hint = (
                "raise NonFiniteError(n), with the node itself: the given error reads its "
                "name, op, target and inputs off the node."
            )
        elif isinstance(error, TypeError) and ours and ours[-1].name == "is_finite":
            hint = OTHER
        elif (
            last is not None
            and ours
            and last is ours[-1]
            and last.name == "run_node"
            and (last.line or "").strip().startswith("raise")
        ):
            hint = "raise NonFiniteError(n), the given error, which first_nonfinite catches."
        else:
            hint = "your code raised at the line shown."
    pytest.fail(explain(what, describe_error(error), hint, SEE), pytrace=False)


def _first_nonfinite(ex, model: nn.Module, inputs: tuple, what: str) -> str | None:
    """The given `first_nonfinite`, copied, with the student's checker: the name of the first
    node whose value is not finite, or None."""
    try:
        ex.NonFiniteChecker(_trace(model)).run(*inputs)
    except ex.NonFiniteError as error:
        # A str, compared only then: a node of graded code's could answer == with True.
        return plain(getattr(error, "node", None), "the node's name, a str", "error.node", SEE)
    except Exception as error:  # student code: any error becomes a message
        raised = error
    else:
        return None
    _fail_raised(what, raised)


def _hint(ex, case: str, got: str | None) -> str:
    """The hint for what the student's checker named instead of the golden node."""
    model_class, inputs, want, wrong = CASES[case]
    names = [node.name for node in _trace(model_class()).graph.nodes]
    log_case = CASES["log of a negative number"]
    probe = _first_nonfinite(ex, LogOfNegative(), log_case[1](), "the checker runs")
    if probe == "exp":
        return INPUTS
    if got in wrong:
        return wrong[got]
    if got is None:
        if probe is None:
            return (
                "raise NonFiniteError(n) in run_node when is_finite(value) is False: nothing "
                "was raised."
            )
        return f"%{want}'s value is not finite, and nothing was reported."
    if got in names and names.index(got) < names.index(want):
        return (
            f"%{got}'s value is finite, so is_finite must say True for it: count only NaN "
            "and infinities as not finite."
        )
    return f"the first node whose own value is not finite is %{want}; check each node's value."


@pytest.mark.parametrize("case", list(CASES))
def test_first_nonfinite_node(ex, case):
    model_class, inputs, want, _ = CASES[case]
    torch.manual_seed(0)
    got = _first_nonfinite(ex, model_class(), inputs(), f"first_nonfinite runs ({case})")
    if got != want:
        pytest.fail(
            explain(
                f"first_nonfinite names %{want}, the first node whose value is not finite ({case})",
                repr(got),
                _hint(ex, case, got),
                SEE,
            ),
            pytrace=False,
        )


def test_all_finite_returns_none(ex):
    x = _uniform(3, 4, low=-1.0)
    got = _first_nonfinite(ex, AllFinite(), (x,), "first_nonfinite runs on finite values")
    if got is not None:
        pytest.fail(
            explain(
                "None: every value is finite (tensors, ints, a torch.Size, a "
                "torch.dtype, a bool tensor, a tuple)",
                repr(got),
                f"%{got}'s value is finite: count only NaN and infinities as not "
                "finite; an int, a torch.Size, a dtype or a bool tensor is finite.",
                SEE,
            ),
            pytrace=False,
        )


# (what, value, is_finite(value), the hint when the answer is wrong)
TENSORS = [
    ("a tensor with one NaN among finite values", torch.tensor([1.0, NAN, 2.0]), False, ANY),
    ("a tensor with an infinity", torch.tensor([[1.0], [-INF]]), False, INFINITY),
    ("a tensor of NaN", torch.full((2, 2), NAN), False, "a tensor with a NaN is not finite."),
    (
        "a finite tensor",
        torch.tensor([[1.0, -2.0], [0.0, 3.5]]),
        True,
        "a tensor without NaN or infinity is finite.",
    ),
    ("a bool tensor", torch.tensor([True, False]), True, INTEGRAL),
    ("an int tensor", torch.arange(3), True, INTEGRAL),
]
PYTHON_VALUES = [
    ("float('nan')", NAN, False, FLOAT),
    ("float('-inf')", -INF, False, FLOAT),
    ("2.5", 2.5, True, "a finite float is finite."),
    ("3", 3, True, OTHER),
    ("None", None, True, OTHER),
    ("'relu'", "relu", True, OTHER),
    ("torch.Size([2, 3])", torch.Size([2, 3]), True, OTHER),
    ("torch.float32", torch.float32, True, OTHER),
]
CONTAINERS = [
    ("a tuple holding a NaN tensor", (torch.ones(2), torch.tensor([NAN])), False, TUPLE),
    ("a list holding a NaN tensor", [torch.ones(1), torch.tensor([NAN])], False, TUPLE),
    ("a dict whose value is a NaN tensor", {"mean": torch.tensor([NAN])}, False, DICT),
    (
        "a dict holding a list holding a tuple with a NaN tensor",
        {"x": [1, (2.0, torch.tensor([NAN]))]},
        False,
        NESTED,
    ),
    ("an empty tuple", (), True, "an empty tuple holds nothing that is not finite."),
    (
        "a finite dict holding a tuple and a list",
        {"a": (torch.ones(2), [3, 4.5])},
        True,
        "a container of finite values is finite.",
    ),
]


def _check_is_finite(ex, table) -> None:
    for what, value, want, hint in table:
        try:
            got = ex.is_finite(value)
            answer = bool(got)
        except Exception as error:  # student code: any error becomes a message
            raised = error
        else:
            if answer is want:
                continue
            pytest.fail(
                explain(f"is_finite({what}) is {want}", repr(got), hint, SEE), pytrace=False
            )
        _fail_raised(
            f"is_finite({what}) returns {want}",
            raised,
            None if isinstance(raised, NotImplementedError) else hint,
        )


def test_is_finite_on_tensors(ex):
    _check_is_finite(ex, TENSORS)


def test_is_finite_on_python_values(ex):
    _check_is_finite(ex, PYTHON_VALUES)


def test_is_finite_looks_inside_containers(ex):
    _check_is_finite(ex, CONTAINERS)


def _same(got, want) -> bool:
    if isinstance(want, tuple):
        return type(got) is type(want) and len(got) == len(want) and all(map(_same, got, want))
    if isinstance(want, torch.Tensor):
        return tensors_equal(got, want)
    return type(got) is type(want) and got == want


@pytest.mark.parametrize("case", ["all finite", "the log model on inputs that keep it finite"])
def test_outputs_are_unchanged(ex, case):
    torch.manual_seed(0)
    model = AllFinite() if case == "all finite" else LogOfNegative()
    x = _uniform(3, 4, low=-1.0) if case == "all finite" else _uniform(3, 4, low=2.0, high=3.0)
    want = model(x)
    try:
        got, raised = ex.NonFiniteChecker(_trace(model)).run(x), None
    except Exception as error:  # student code: any error becomes a message
        got, raised = None, error
    if raised is not None:
        _fail_raised(f"NonFiniteChecker(gm).run(x) runs ({case})", raised)
    if not _same(got, want):
        pytest.fail(
            explain(
                f"NonFiniteChecker(gm).run(x) returns what the model returns ({case}): {want!r}",
                repr(got)[:300],
                "check the value, then return it unchanged.",
                SEE,
            ),
            pytrace=False,
        )


def test_error_names_the_node_its_op_target_and_inputs(ex):
    error = None
    try:
        ex.NonFiniteChecker(_trace(LogOfNegative())).run(_uniform(3, 4))
    except Exception as raised:  # student code: any error becomes a message
        error = raised
    if error is None:
        pytest.fail(
            explain(
                "NonFiniteError for %log",
                "nothing raised",
                "raise NonFiniteError(n) when the value of n is not finite.",
                SEE,
            ),
            pytrace=False,
        )
    if not isinstance(error, ex.NonFiniteError):
        _fail_raised("NonFiniteChecker(gm).run(x) raises NonFiniteError", error)
    want = ("log", "call_function", torch.log, ["sub"])
    got = (error.node, error.op, error.target, error.inputs)
    # The names compared only once plain, the target by identity: values of graded code's
    # own could answer == with True.
    same = not_plain(got[:2] + got[3:]) is None and got[2] is want[2] and got == want
    if not same:
        pytest.fail(
            explain(
                f"NonFiniteError for %log: (node, op, target, inputs) == {want}",
                repr(got),
                INPUTS
                if got[0] == "exp"
                else "raise NonFiniteError(n) with the node being run, n.",
                SEE,
            ),
            pytrace=False,
        )


def test_stops_at_the_first_non_finite_node(ex):
    checker = ex.NonFiniteChecker(_trace(LogOfNegative()), garbage_collect_values=False)
    error = None
    try:
        checker.run(_uniform(3, 4))
    except Exception as raised:  # student code: any error becomes a message
        error = raised
    if error is not None and not isinstance(error, ex.NonFiniteError):
        _fail_raised("NonFiniteChecker(gm).run(x) raises NonFiniteError", error)
    want = ["x", "mul", "sub"]
    got = plain(
        [node.name for node in checker.env], "a list of node names", "the names in env", SEE
    )
    if got != want:
        hint = (
            "raise as soon as a value is not finite, in run_node, before it reaches env and "
            "before later nodes run."
        )
        if getattr(error, "node", None) == "exp":
            hint = INPUTS
        pytest.fail(
            explain(
                f"the run stops at %log: env holds only the nodes before it, {want}",
                repr(got),
                hint,
                SEE,
            ),
            pytrace=False,
        )


def test_on_device(ex, device):
    model = BadBatchNorm().to(device)
    got = _first_nonfinite(ex, model, (_uniform(2, 4).to(device),), f"first_nonfinite on {device}")
    if got != "bn":
        pytest.fail(
            explain(
                f"%bn on {device}",
                repr(got),
                _hint(ex, "NaN inside a submodule (call_module)", got),
                SEE,
            ),
            pytrace=False,
        )
    finite = LogOfNegative().to(device)
    x = _uniform(3, 4, low=2.0, high=3.0).to(device)
    got = _first_nonfinite(ex, finite, (x,), f"first_nonfinite on {device}")
    if got is not None:
        pytest.fail(
            explain(
                f"None on {device}: log(2x - 3) with x >= 2 is finite",
                repr(got),
                f"%{got}'s value is finite: count only NaN and infinities.",
                SEE,
            ),
            pytrace=False,
        )
