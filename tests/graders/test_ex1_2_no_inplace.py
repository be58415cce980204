"""Grader for exercise 1.2: a recorder that refuses in-place ops."""

import pytest
import torch
import torch.nn.functional as F

from minifx.proxy import TapeRecorder, TraceError
from tests.graders.support import explain

pytestmark = pytest.mark.ch1

SEE = "chapters/01-proxy.md#the-tracer-interface"


@pytest.fixture
def ex(impl):
    return impl.load("ch1_no_inplace")


@pytest.mark.parametrize(
    "name, want",
    [("add_", True), ("relu_", True), ("add", False), ("view", False), ("__call__", False)],
)
def test_is_inplace_method(ex, name, want):
    got = ex.is_inplace_method(name)
    assert got is want, explain(
        f"is_inplace_method({name!r}) is {want}", repr(got),
        "in-place methods end with one underscore; dunders like __call__ end with two.", SEE)


def _pure(x, y):
    z = torch.relu(x + y).view(-1)
    return z.sum(dim=0), F.relu(x, inplace=False), x[0]


def test_ordinary_functions_are_recorded_unchanged(ex):
    got = ex.NoInplaceRecorder().trace(_pure)
    want = TapeRecorder().trace(_pure)
    assert str(got) == str(want), explain(
        f"the same tape as TapeRecorder:\n{want}", str(got),
        "call super().create_proxy(...) for every operation you do not refuse.", SEE)


def _inplace_method(x):
    y = x * 2
    y.add_(1)
    return y


def _inplace_relu_method(x):
    return x.relu_()


def _inplace_on_a_real_tensor(x):
    return torch.ones(3).add_(x)


def _inplace_keyword(x):
    return F.relu(x, inplace=True)


@pytest.mark.parametrize(
    "fn, op",
    [(_inplace_method, "add_"), (_inplace_relu_method, "relu_"),
     (_inplace_on_a_real_tensor, "add_"), (_inplace_keyword, "relu")],
    ids=["x.add_(1)", "x.relu_()", "t.add_(x)", "F.relu(x, inplace=True)"],
)
def test_inplace_operations_are_refused(ex, fn, op):
    recorder = ex.NoInplaceRecorder()
    try:
        tape = recorder.trace(fn)
    except TraceError as error:
        assert op in str(error), explain(
            f"a TraceError whose message names {op!r}", str(error),
            "put the method's or function's name in the message.", SEE)
        return
    pytest.fail(explain(f"a TraceError for the in-place {op}", f"a tape:\n{tape}",
                        "check kind == 'call_method' with an in-place name, and kwargs.get('inplace') is True; args[0] may be a real tensor, not a Proxy.",
                        SEE))
