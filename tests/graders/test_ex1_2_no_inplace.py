"""Grader for exercise 1.2: a recorder that refuses in-place ops.

Expected tapes are golden: the printouts `TapeRecorder` records for the grader's own
functions.
"""

import textwrap

import pytest
import torch
import torch.nn.functional as F

from minifx.proxy import TraceError
from tests.graders.support import (
    call_graded,
    describe_error,
    explain,
    explain_texts,
    stub_hint,
    text,
)

pytestmark = pytest.mark.ch1

SEE = "chapters/01-proxy.md#the-tracer-interface"


@pytest.fixture
def ex(impl):
    return impl.load("ch1_no_inplace")


# Where an error that no line of the student's raised comes from.
TRACED = "(not in your code: in the grader's traced function)"


_RETURN = (
    "create_proxy returned None: return what super().create_proxy(...) returns, the "
    "Proxy that the traced code goes on computing with."
)


def _returns_none(ex) -> bool:
    """Whether the student's create_proxy returns None for an ordinary placeholder."""
    recorder, raised = call_graded(ex.NoInplaceRecorder)
    if raised is None:
        proxy, raised = call_graded(recorder.create_proxy, "placeholder", "x", (), {})
    return raised is None and proxy is None


@pytest.mark.parametrize(
    "name, want",
    [
        ("add_", True),
        ("relu_", True),
        ("zero_", True),
        ("index_add_", True),
        ("add", False),
        ("view", False),
        ("__call__", False),
        ("__iadd__", False),
    ],
)
def test_is_inplace_method(ex, name, want):
    got, raised = call_graded(ex.is_inplace_method, name)
    if raised is not None:
        pytest.fail(
            explain(
                f"is_inplace_method({name!r}) is {want}",
                describe_error(raised, outside=TRACED),
                stub_hint(raised),
                SEE,
            ),
            pytrace=False,
        )
    if got is want:
        return
    if got in (True, False) and want:
        hint = "an in-place method is every method whose name ends with one underscore."
    elif got in (True, False):
        hint = (
            f"{name} is not in-place: dunders such as __call__ end with two underscores, "
            "ordinary methods with none."
        )
    else:
        hint = "return True or False, not another value."
    pytest.fail(
        explain(f"is_inplace_method({name!r}) is {want}", repr(got), hint, SEE), pytrace=False
    )


def _golden(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


def _pure(x: torch.Tensor, y):
    z = torch.relu(x + y).view(-1)
    return z.sum(dim=0), torch.ones(3).add(x), x[0]


def _inplace_false(x):
    return F.relu(x, inplace=False), F.dropout(x, 0.5, False, inplace=False)


def _underscored(x_, scale_=2.0):
    return (x_ * scale_).add(1)


_ANNOTATION = (
    "pass *rest and **more on to super().create_proxy(...): the placeholder's "
    "type annotation (type_expr=...) travels in them."
)
_RECORD = (
    "call super().create_proxy(...) for every operation you do not refuse, and return its result."
)
ORDINARY = {
    "ordinary ops": (_pure, "nothing here is in-place: refuse only in-place methods and inplace=True.", """
        tape():
            %x : torch.Tensor = placeholder[target=x]
            %y = placeholder[target=y]
            %add = call_function[target=operator.add](args = (%x, %y), kwargs = {})
            %relu = call_function[target=torch.relu](args = (%add,), kwargs = {})
            %view = call_method[target=view](args = (%relu, -1), kwargs = {})
            %sum_1 = call_method[target=sum](args = (%view,), kwargs = {dim: 0})
            %add_1 = call_method[target=add](args = (<Tensor 3 float32>, %x), kwargs = {})
            %getitem = call_function[target=operator.getitem](args = (%x, 0), kwargs = {})
            return (sum_1, add_1, getitem)
        """),
    "inplace=False": (_inplace_false,
                      "refuse only inplace=True: F.relu(x, inplace=False) is not in-place.", """
        tape():
            %x = placeholder[target=x]
            %relu = call_function[target=torch.nn.functional.relu](args = (%x,), kwargs = {inplace: False})
            %dropout = call_function[target=torch.nn.functional.dropout](args = (%x,), kwargs = {p: 0.5, training: False, inplace: False})
            return (relu, dropout)
        """),
    "parameters named x_": (_underscored,
                            "only call_method targets are method names: a placeholder's target "
                            "(x_, scale_) is a parameter's name.", """
        tape():
            %x_ = placeholder[target=x_]
            %scale_ = placeholder[target=scale_](default=2.0)
            %mul = call_function[target=operator.mul](args = (%x_, %scale_), kwargs = {})
            %add = call_method[target=add](args = (%mul, 1), kwargs = {})
            return add
        """),
}  # fmt: skip


@pytest.mark.parametrize("case", list(ORDINARY))
def test_ordinary_operations_are_recorded_unchanged(ex, case):
    fn, hint, golden = ORDINARY[case]  # hint: for an error raised on this case
    want = _golden(golden)
    recorder, raised = call_graded(ex.NoInplaceRecorder)
    if raised is None:
        tape, raised = call_graded(recorder.trace, fn)
    if raised is not None:
        if isinstance(raised, NotImplementedError):
            hint = stub_hint(raised)
        elif not isinstance(raised, TraceError) and _returns_none(ex):
            hint = _RETURN
        pytest.fail(
            explain(
                f"the tape TapeRecorder records ({case}):\n{want}",
                describe_error(raised, outside=TRACED),
                hint,
                SEE,
            ),
            pytrace=False,
        )
    got = text(tape)  # an exact str: a tape of graded code's could print as anything
    if got == want:
        return
    lost_annotation = "%x : torch.Tensor" in want and "%x = placeholder" in got
    hint = _ANNOTATION if lost_annotation else _RECORD
    pytest.fail(
        explain_texts(f"the tape TapeRecorder records ({case})", want, got, hint, SEE, kind="tape"),
        pytrace=False,
    )


def _inplace_method(x):
    y = x * 2
    y.add_(1)
    return y


def _inplace_relu_method(x):
    return x.relu_()


def _inplace_clamp_method(x):
    return (x + 1).clamp_(0, 1)


def _inplace_on_a_real_tensor(x):
    return torch.ones(3).add_(x)


def _inplace_keyword(x):
    return F.relu(x, inplace=True)


_METHOD = (
    "refuse kind == 'call_method' when is_inplace_method(target): `target` is the method's name."
)
REFUSED = {
    "x.add_(1)": (_inplace_method, "add_", _METHOD),
    "x.relu_()": (_inplace_relu_method, "relu_", _METHOD),
    "x.clamp_(0, 1)": (_inplace_clamp_method, "clamp_", _METHOD),
    "t.add_(x)": (
        _inplace_on_a_real_tensor,
        "add_",
        "here args[0] is a real tensor (torch.ones(3)), not a Proxy: refuse an in-place "
        "method whatever its receiver.",
    ),
    "F.relu(x, inplace=True)": (
        _inplace_keyword,
        "relu",
        "refuse any call whose kwargs.get('inplace') is True: F.relu passes inplace as a keyword.",
    ),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_inplace_operations_are_refused(ex, case):
    fn, op, hint = REFUSED[case]
    recorder, raised = call_graded(ex.NoInplaceRecorder)
    if raised is None:
        tape, raised = call_graded(recorder.trace, fn)
    if raised is None:
        pytest.fail(
            explain(
                f"a TraceError that names {op!r}", f"a tape, nothing refused:\n{tape}", hint, SEE
            ),
            pytrace=False,
        )
    if isinstance(raised, NotImplementedError):
        pytest.fail(
            explain(
                f"a TraceError that names {op!r}",
                describe_error(raised, outside=TRACED),
                stub_hint(raised),
                SEE,
            ),
            pytrace=False,
        )
    if not isinstance(raised, TraceError) and _returns_none(ex):
        pytest.fail(
            explain(
                f"a TraceError that names {op!r}",
                describe_error(raised, outside=TRACED),
                _RETURN,
                SEE,
            ),
            pytrace=False,
        )
    if not isinstance(raised, TraceError):
        pytest.fail(
            explain(
                f"a TraceError that names {op!r}",
                describe_error(raised, outside=TRACED),
                f"raise minifx's TraceError (from minifx.proxy), not {type(raised).__name__}.",
                SEE,
            ),
            pytrace=False,
        )
    assert op in text(raised), explain(
        f"a TraceError whose message names {op!r}",
        text(raised)[:300],
        f"name the operation ({op}) in the message: the method's name, or the function's __name__.",
        SEE,
    )
