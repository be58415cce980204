"""Grader for exercise 0.1: Faithful, refused or silently wrong?

Expected verdicts are golden: each program below was written to end one way (its
comment says why), and the messages of the refusals are minifx's, which match
torch.fx's. The opcode counts are computed by torch.fx: `torch.fx.symbolic_trace` of the
same program, counted by opcode.
"""

from collections import Counter

import pytest
import torch
import torch.fx
from torch import nn

import minifx
from tests.graders.support import call_graded, describe_error, explain, plain, stub_hint

pytestmark = pytest.mark.ch0

SEE = "chapters/00-why-capture.md#exercise-01-faithful-refused-or-silently-wrong"
SEE_SPECIALISE = "chapters/00-why-capture.md#specialisation-what-a-capture-bakes-in"


@pytest.fixture
def ex(impl):
    return impl.load("ch0_faithful_capture")


# --- the programs ---------------------------------------------------------------------


class TinyNet(nn.Module):
    """Chapter 0's TinyNet: no control flow on values, nothing baked in."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.linear = nn.Linear(4, 3)

    def forward(self, x):
        return torch.relu(self.linear(x)).sum(dim=1)


def shift(x):
    if x.sum() > 0:  # a Python bool of a Proxy: refused
        return x + 1
    return x - 1


def plus_zeros(x):
    n = int(x.shape[0])  # an int of a Proxy: refused
    return x.new_zeros(n) + x


def jitter(x):
    # torch.randn(3) has no Proxy among its arguments: it runs while tracing, and its
    # result is baked into the graph as a constant. Eager draws new noise on every call.
    return x + torch.randn(3) * x.abs().max()


def maybe_negate(x, negate):
    if negate:  # fine with concrete_args: decided while tracing, checked when run
        return -x
    return x


def repeat(x, times):
    for _ in range(times):  # unrolled while tracing
        x = x * 2
    return x


def buggy(x):
    return x + undefined_scale  # noqa: F821  (a plain bug: a NameError while tracing)


X, Y, ZEROS = torch.arange(3.0), torch.tensor([-2.0, 0.5, 4.0]), torch.zeros(3)
# name -> (the program, its inputs, its concrete_args, the golden verdict)
CASES = {
    "TinyNet": (TinyNet, [(torch.ones(2, 4),), (torch.randn(5, 4, generator=torch.Generator().manual_seed(1)),)], None, ("faithful", None)),
    "shift": (shift, [(X,)], None, ("refused", "%gt was used as a Python bool (in `if`, `while`, `and`, `or`, `not`, `assert`, a chained comparison like `0 < x < 1`, or `min()` / `max()`).")),
    "plus_zeros": (plus_zeros, [(X,)], None, ("refused", "%getitem was converted to an int (int(), range() or a list index).")),
    "jitter": (jitter, [(ZEROS,), (X,), (Y,)], None, ("wrong", 1)),
    "maybe_negate": (maybe_negate, [(X, False), (Y, False), (X, True), (Y, True)], {"negate": False}, ("fails", 2)),
    "repeat, times fixed": (repeat, [(X, 2), (Y, 2)], {"times": 2}, ("faithful", None)),
    "repeat, times not fixed": (repeat, [(X, 2)], None, ("refused", "%times was converted to an int (int(), range() or a list index).")),
    "repeat, times changed": (repeat, [(X, 2), (Y, 2), (X, 3)], {"times": 2}, ("fails", 2)),
}  # fmt: skip

HINTS = {
    "refused": "symbolic tracing raised a TraceError: return Verdict('refused', <the first line "
    "of its message>), and stop there.",
    "fails": "the captured program raised on this input (a concrete_args check, here): catch "
    "that and return Verdict('fails', index).",
    "wrong": "the captured program returned another tensor than the program did: compare each "
    "pair with torch.equal and return Verdict('wrong', index) at the first that differs.",
    "faithful": "every input agreed: return Verdict('faithful', None).",
}


def _program(name: str):
    program = CASES[name][0]
    return program() if isinstance(program, type) else program


def _verdict(ex, name: str):
    program, inputs, concrete_args, _ = CASES[name]
    torch.manual_seed(0)
    got, error = call_graded(ex.check_capture, _program(name), inputs, concrete_args)
    if error is not None:
        hint = stub_hint(error, "check_capture")
        if isinstance(error, minifx.TraceError):
            hint = "catch the TraceError of symbolic_trace and return Verdict('refused', ...)."
        elif not isinstance(error, NotImplementedError):
            hint = HINTS["fails"] if CASES[name][3][0] == "fails" else hint
            if isinstance(error, RuntimeError) and "ambiguous" in str(error):
                hint = (
                    "a tensor comparison with == is a tensor, not a bool: compare with "
                    "torch.equal(got, want)."
                )
        pytest.fail(
            explain(f"check_capture({name}) returns a Verdict", describe_error(error), hint, SEE),
            pytrace=False,
        )
    return _plain_verdict(got, f"check_capture({name})")


def _plain_verdict(got, what: str):
    """`got`, once a Verdict's fields are known to be plain values: a field of graded code's
    own could answer `==` with True for anything."""
    if isinstance(got, tuple):
        plain(tuple(got), "a Verdict(kind, detail) of a str and a str, int or None", what, SEE)
    return got


def _hint(got, want: tuple) -> str:
    kind, detail = want
    got_kind = getattr(got, "kind", None)
    got_detail = getattr(got, "detail", None)
    if got_kind != kind:
        if kind == "wrong" and got_kind == "faithful":
            return (
                "check every input, not only the first: the baked-in noise is multiplied by 0 "
                "on input 0, so only later inputs show it."
            )
        return HINTS[kind]
    if kind == "refused":
        if isinstance(got_detail, str) and got_detail.startswith(detail):
            return "detail is the first line of the message only: str(error).splitlines()[0]."
        return "detail is the first line of the TraceError's message: str(error).splitlines()[0]."
    if isinstance(got_detail, int) and isinstance(detail, int) and got_detail == detail + 1:
        return f"detail is the index in inputs, counted from 0: input {detail} is inputs[{detail}]."
    if kind == "faithful":
        return "a faithful capture has no detail: Verdict('faithful', None)."
    return f"detail is the index of the first input where it happened: {detail}; stop at the first."


@pytest.mark.parametrize("name", list(CASES))
def test_verdict(ex, name):
    _, inputs, concrete_args, want = CASES[name]
    got = _verdict(ex, name)
    if not isinstance(got, ex.Verdict) or tuple(got) != want:
        shown = f", concrete_args={concrete_args}" if concrete_args else ""
        pytest.fail(
            explain(
                f"check_capture({name}, {len(inputs)} input(s){shown}): Verdict{want}",
                repr(got)[:400],
                _hint(got, want),
                SEE_SPECIALISE if want[0] in ("wrong", "fails") else SEE,
            ),
            pytrace=False,
        )


def test_a_bug_is_not_a_verdict(ex):
    got, error = call_graded(ex.check_capture, buggy, [(X,)])
    if isinstance(error, NameError):
        return
    if isinstance(error, NotImplementedError):
        got = describe_error(error)
        hint = stub_hint(error, "check_capture")
    else:
        got = describe_error(error) if error else repr(got)[:300]
        hint = (
            "catch only TraceError: a NameError while tracing is a bug in the program, "
            "which check_capture lets propagate."
        )
    pytest.fail(
        explain("check_capture(buggy, ...) raises buggy's NameError", got, hint, SEE),
        pytrace=False,
    )


def test_the_program_is_run_on_each_input_once(ex):
    calls = []

    def counted(x):
        calls.append(1)
        return x * 2

    got = _verdict_of(ex, counted, [(X,), (Y,), (ZEROS,)])
    # One call while tracing, then one eager call per input.
    if got != ("faithful", None) or len(calls) != 4:
        pytest.fail(
            explain(
                "Verdict('faithful', None), the program traced once and run once per input "
                "(4 calls)",
                f"{got!r}, {len(calls)} call(s)",
                "trace once, then call the program and the capture once on each input.",
                SEE,
            ),
            pytrace=False,
        )


def _verdict_of(ex, program, inputs):
    got, error = call_graded(ex.check_capture, program, inputs)
    if error is not None:
        pytest.fail(
            explain(
                "check_capture returns a Verdict",
                describe_error(error),
                stub_hint(error, "check_capture"),
                SEE,
            ),
            pytrace=False,
        )
    got = _plain_verdict(got, "check_capture")
    return tuple(got) if isinstance(got, tuple) else got


class WithGetAttr(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(3))
        self.linear = nn.Linear(3, 3)

    def forward(self, x, y):
        return (self.linear(x) * self.scale).relu() + torch.sigmoid(y)


@pytest.mark.parametrize("name", ["TinyNet", "repeat", "WithGetAttr"])
def test_opcode_counts(ex, name):
    root = {"TinyNet": TinyNet, "repeat": lambda: repeat, "WithGetAttr": WithGetAttr}[name]()
    concrete = {"times": 3} if name == "repeat" else None
    gm = minifx.symbolic_trace(root, concrete_args=concrete)
    want = dict(
        Counter(n.op for n in torch.fx.symbolic_trace(root, concrete_args=concrete).graph.nodes)
    )
    got, error = call_graded(ex.opcode_counts, gm)
    if error is not None:
        pytest.fail(
            explain(
                f"opcode_counts of {name}",
                describe_error(error),
                stub_hint(error, "opcode_counts"),
                SEE,
            ),
            pytrace=False,
        )
    got = plain(got, "a dict, opcode (a str) -> count (an int)", f"opcode_counts of {name}", SEE)
    if got != want:
        if isinstance(got, dict) and set(got) - set(want):
            hint = f"key the counts by node.op, the opcode; {sorted(set(got) - set(want))[0]!r} is none."
        elif isinstance(got, dict) and set(want) - set(got):
            hint = f"count every node, {sorted(set(want) - set(got))[0]} nodes included."
        else:
            hint = "one count per opcode: how many nodes of gm.graph.nodes have that op."
        pytest.fail(
            explain(f"opcode_counts of {name}: {want}", repr(got)[:300], hint, SEE),
            pytrace=False,
        )
