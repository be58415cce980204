"""Exact messages of the errors a user can hit with stage 2's `Tracer` (those of `wrap`
are in test_wrapping.py).

Each error is checked by its full text: what went wrong, where (the user's
`file:line` and source line, for errors raised while tracing), why, and how to
fix it. The line a message must point at follows a `# marker: NAME` comment,
and the tests compute its number from the marker, so editing this file cannot
silently break them.
"""

import functools
import inspect

import pytest
import torch
import torch.fx
import torch.nn as nn

import minifx
import minifx.graph
from minifx.graph import PH, Tracer
from tests import markers
from tests.graph.support import error_of

pytestmark = pytest.mark.ch2

THIS_FILE = __file__


def line_after(marker: str) -> int:
    return markers.line_after(THIS_FILE, marker)


def error_of_both(kind: type, also: type, thunk) -> str:
    """The message of the error `thunk()` raises, which must be both `kind` and `also`."""
    with pytest.raises(kind) as error:
        thunk()
    assert isinstance(error.value, also), (
        f"{type(error.value).__name__} is not also {also.__name__}"
    )
    return str(error.value)


def where(marker: str, function: str, source: str) -> str:
    return markers.traceback_lines(THIS_FILE, marker, function, source)


def bool_message(name: str, location: str) -> str:
    return (
        f"%{name} was used as a Python bool (in `if`, `while`, `and`, `or`, `not`, "
        f"`assert`, a chained comparison like `0 < x < 1`, or `min()` / `max()`).\n{location}\n"
        "Why: symbolically traced variables cannot be used as inputs to control flow: "
        f"%{name} stands for a value that is only computed when the program runs, so the "
        "tracer cannot know which branch to record.\n"
        "How to fix: compute both branches and choose with torch.where(condition, a, b); or, "
        "if the condition depends only on settings or shapes, decide it with plain Python "
        "values before tracing."
    )


# -- a module that is not a submodule ---------------------------------------------------


def not_a_submodule_message(kind: str, location: str) -> str:
    return (
        f"a {kind} module was called that is not a submodule of the traced module.\n"
        f"{location}\n"
        "Why: a call_module node names its module by its path in the root module, and this "
        "one has no path (it was probably created inside forward).\n"
        f"How to fix: create it in __init__ and store it as an attribute (self.layer = "
        f"nn.{kind}(...)), or call the functional form (torch.nn.functional)."
    )


class CreatesReluInForward(nn.Module):
    def forward(self, x):
        # marker: relu-in-forward
        return nn.ReLU()(x)


STRAY_LINEAR = nn.Linear(2, 2)


class CallsAGlobalLinear(nn.Module):
    def forward(self, x):
        # marker: global-linear
        return STRAY_LINEAR(x) + 1


def test_module_created_inside_forward_is_not_a_submodule():
    message = error_of(NameError, lambda: Tracer().trace(CreatesReluInForward()))
    location = where("relu-in-forward", "forward", "return nn.ReLU()(x)")
    assert message == not_a_submodule_message("ReLU", location)


def test_module_owned_by_no_one_is_not_a_submodule():
    message = error_of(NameError, lambda: Tracer().trace(CallsAGlobalLinear()))
    location = where("global-linear", "forward", "return STRAY_LINEAR(x) + 1")
    assert message == not_a_submodule_message("Linear", location)


# -- a parameter that the root does not own ---------------------------------------------


def foreign_parameter_message(location: str) -> str:
    return (
        "a parameter that is not part of the traced module was used.\n"
        f"{location}\n"
        "Why: a get_attr node reads a parameter by its path in the root module, and this one "
        "has none (it was probably created inside forward, or belongs to another module).\n"
        "How to fix: create the parameter in __init__ and store it as an attribute of the module."
    )


class UsesAnotherModulesWeight(nn.Module):
    def forward(self, x):
        # marker: foreign-weight
        return x @ STRAY_LINEAR.weight


class CreatesParameterInForward(nn.Module):
    def forward(self, x):
        # marker: parameter-in-forward
        return x * nn.Parameter(torch.ones(2))


def test_parameter_of_another_module():
    message = error_of(NameError, lambda: Tracer().trace(UsesAnotherModulesWeight()))
    location = where("foreign-weight", "forward", "return x @ STRAY_LINEAR.weight")
    assert message == foreign_parameter_message(location)


def test_parameter_created_inside_forward():
    message = error_of(NameError, lambda: Tracer().trace(CreatesParameterInForward()))
    location = where("parameter-in-forward", "forward", "return x * nn.Parameter(torch.ones(2))")
    assert message == foreign_parameter_message(location)


class ReturnsAStrayModule(nn.Module):
    def forward(self, x):
        # marker: stray-module-argument
        return x.type_as(STRAY_LINEAR)


def test_a_module_argument_of_another_module_raises_what_torch_fx_raises():
    # torch.fx finds no path for it and refuses it as an argument of an unknown type.
    with pytest.raises(NotImplementedError, match="argument of type"):
        torch.fx.Tracer().trace(ReturnsAStrayModule())
    message = error_of_both(
        NameError, NotImplementedError, lambda: Tracer().trace(ReturnsAStrayModule())
    )
    location = where("stray-module-argument", "forward", "return x.type_as(STRAY_LINEAR)")
    assert message == (
        "a module that is not part of the traced module was used.\n"
        f"{location}\n"
        "Why: a get_attr node reads a module by its path in the root module, and this one "
        "has none (it was probably created inside forward, or belongs to another module).\n"
        "How to fix: create the module in __init__ and store it as an attribute of the module."
    )


# -- concrete_args -------------------------------------------------------------------------


def two_inputs(x, y):
    return x + y


class TwoInputForward(nn.Module):
    def forward(self, x, mask):
        return x * mask


def test_concrete_args_tuple_too_long_for_a_function():
    message = error_of_both(
        TypeError, RuntimeError, lambda: Tracer().trace(two_inputs, (PH, PH, 3))
    )
    assert message == "concrete_args has 3 values but the traced function takes 2 inputs (x, y)."


def test_concrete_args_tuple_too_short_for_a_module():
    # `self` is not an input: the module's forward takes two.
    message = error_of_both(
        TypeError, RuntimeError, lambda: Tracer().trace(TwoInputForward(), (PH, PH, PH, PH))
    )
    assert message == "concrete_args has 4 values but the traced function takes 2 inputs (x, mask)."


# -- what can be traced --------------------------------------------------------------------


class CallableObject:
    def __call__(self, x):
        return x + 1

    def __repr__(self) -> str:
        return "CallableObject()"


def not_a_function_message(shown: str) -> str:
    return (
        f"cannot trace {shown}: the tracer needs a Python function (or a module whose forward "
        "is one), because it reads the parameter names from its code. Wrap the callable in a def."
    )


@pytest.mark.parametrize(
    "make, shown",
    [
        (lambda: CallableObject(), "CallableObject()"),
        (
            lambda: CallableObject().__call__,
            "<bound method CallableObject.__call__ of CallableObject()>",
        ),
        (lambda: len, "<built-in function len>"),
    ],
    ids=["callable-object", "bound-method", "builtin"],
)
def test_tracing_a_callable_that_is_not_a_function(make, shown):
    message = error_of_both(TypeError, AssertionError, lambda: Tracer().trace(make()))
    assert message == not_a_function_message(shown)
    with pytest.raises(AssertionError):  # torch.fx's type for the same mistake
        torch.fx.Tracer().trace(make())


class PartialForward(nn.Module):
    forward = functools.partial(two_inputs, y=1)


def test_module_whose_forward_is_not_a_function():
    message = error_of_both(TypeError, AssertionError, lambda: Tracer().trace(PartialForward()))
    assert message == not_a_function_message(repr(PartialForward.forward))


def test_an_unknown_traced_func_name_is_torch_fx_s_assertion_error():
    for tracer in (torch.fx.Tracer(), Tracer()):
        tracer.traced_func_name = "predict"
        with pytest.raises(
            AssertionError, match="traced_func_name=predict doesn't exist in Linear"
        ):
            tracer.trace(nn.Linear(2, 2))


class SelfInArgs(nn.Module):
    def forward(*args):  # no `self`: the mistake under test
        return torch.relu(args[1])


def test_self_inside_star_args_is_torch_fx_s_runtime_error():
    for tracer in (torch.fx.Tracer(), Tracer()):
        with pytest.raises(RuntimeError, match=r"cannot be part of \*args expansion"):
            tracer.trace(SelfInArgs())


# -- untraceable code inside a traced module -----------------------------------------------


class Branchy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def forward(self, x):
        x = self.lin(x)
        # marker: module-if
        if x.sum() > 0:
            return x
        return -x


class BranchyInside(nn.Module):
    """The failing line is in a user submodule's forward, one call deeper."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = Branchy()

    def forward(self, x):
        return self.inner(x) * 2


def test_if_on_a_proxy_inside_a_module():
    message = error_of(minifx.TraceError, lambda: Tracer().trace(Branchy()))
    assert message == bool_message("gt", where("module-if", "forward", "if x.sum() > 0:"))


def test_if_on_a_proxy_inside_a_submodule():
    message = error_of(minifx.TraceError, lambda: Tracer().trace(BranchyInside()))
    assert message == bool_message("gt", where("module-if", "forward", "if x.sum() > 0:"))


class NoLeaves(Tracer):
    """Traces into every module, torch.nn's included."""

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        return False


class WithBatchNorm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bn = nn.BatchNorm2d(3)

    def forward(self, x):
        return self.bn(x)


def test_if_on_a_proxy_inside_torch_nn_code_points_at_torch_nn():
    """A tracer that traces into BatchNorm2d fails on its input check; the message shows
    that line of torch.nn, since that is the line the user needs to see."""
    check = nn.BatchNorm2d._check_input_dim
    lines, first = inspect.getsourcelines(check)
    offset = next(i for i, line in enumerate(lines) if "if input.dim()" in line)
    location = (
        f'  File "{inspect.getsourcefile(check)}", line {first + offset}, in _check_input_dim\n'
        f"    {lines[offset].strip()}"
    )
    message = error_of(minifx.TraceError, lambda: NoLeaves().trace(WithBatchNorm()))
    assert message == bool_message("ne", location)


def test_a_failed_trace_restores_torch_nn():
    call, getattr_ = nn.Module.__call__, nn.Module.__getattr__
    error_of(minifx.TraceError, lambda: Tracer().trace(BranchyInside()))
    assert (nn.Module.__call__, nn.Module.__getattr__) == (call, getattr_)
