"""`check_mutable_operations`: torch operators that change an argument in place are refused.

PyTorch's FX tests run with `TracerBase.check_mutable_operations = True`; these
tests switch it on the same ways (a subclass attribute, the base class) and
require minifx to refuse exactly what torch.fx refuses, with the same type.
"""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.fx

import minifx.graph
import minifx.proxy
from tests.graph.corpus import CASES, resolve_ph

pytestmark = pytest.mark.ch2


def out_variant(x):
    y = torch.rand_like(x)
    torch.sigmoid(x, out=y)
    return y


def inplace_function(x):
    torch.relu_(x)
    return x


def inplace_overload(x):
    torch.ops.aten.add_.Tensor(x, 1)
    return x


def out_overload(x):
    return torch.ops.aten.add.out(x, x, out=x)


def inplace_method(x):
    x.add_(1)  # a method, not a call_function: neither library checks it
    return x


def functional(x):
    return torch.add(x, 1) + torch.sigmoid(x) + torch.cat([x, x]).sum() + torch.sigmoid(input=x)


def ambiguous(x):
    return torch.add(x, x, alpha=2)  # add.Tensor and add.Scalar both accept it: let through


PROGRAMS = [
    out_variant,
    inplace_function,
    inplace_overload,
    out_overload,
    inplace_method,
    functional,
    ambiguous,
]
REFUSED = {out_variant, inplace_function, inplace_overload, out_overload}


def outcome(base: type, fn) -> str:
    class Checking(base):
        check_mutable_operations = True

    try:
        Checking().trace(fn)
    except RuntimeError as error:
        return f"RuntimeError: {str(error).split('mutable operation ')[1].split(')')[0]})"
    return "traced"


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_the_same_operations_are_refused_as_in_torch_fx(fn):
    ours = outcome(minifx.graph.Tracer, fn)
    assert ours == outcome(torch.fx.Tracer, fn)
    assert ours.startswith("RuntimeError") == (fn in REFUSED)


def test_the_message_names_the_schema_the_line_and_the_fix():
    class Checking(minifx.graph.Tracer):
        check_mutable_operations = True

    with pytest.raises(RuntimeError) as info:
        Checking().trace(out_variant)
    lines = str(info.value).split("\n")
    assert lines[0] == (
        "torch.sigmoid was called as the mutable operation aten::sigmoid.out(Tensor self, *, "
        "Tensor(a!) out) -> Tensor(a!), which changes one of its arguments in place "
        "(check_mutable_operations is on)."
    )
    assert lines[1].endswith("in out_variant") and lines[2] == "    torch.sigmoid(x, out=y)"
    assert lines[4].startswith("How to fix: use the functional form")


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_it_is_off_by_default(fn):
    assert minifx.proxy.TracerBase.check_mutable_operations is False
    minifx.graph.Tracer().trace(fn)


def corpus_outcome(base: type, case, ph) -> str:
    root, concrete_args = case.make()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            case.tracer(base).trace(root, resolve_ph(concrete_args, ph))
    except Exception as error:  # an untraceable case: only whether it traces is compared
        return f"{type(error).__name__}{' (mutable)' if 'mutable operation' in str(error) else ''}"
    return "traced"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_switched_on_for_every_tracer_it_refuses_no_corpus_program(case, monkeypatch):
    # The corpus is functional code (its in-place calls are methods), and uses torch
    # operators with many overloads: no false refusal, in either library.
    monkeypatch.setattr(minifx.proxy.TracerBase, "check_mutable_operations", True)
    monkeypatch.setattr(torch.fx.proxy.TracerBase, "check_mutable_operations", True)
    ours = corpus_outcome(minifx.graph.Tracer, case, minifx.graph.PH)
    theirs = corpus_outcome(torch.fx.Tracer, case, torch.fx._symbolic_trace.PH)
    assert "(mutable)" not in ours and "(mutable)" not in theirs
    assert (ours == "traced") == (theirs == "traced"), (ours, theirs)
