"""Exact `TraceError` messages: what went wrong, where, why, and how to fix it.

Each untraceable line below is preceded by a `# marker: NAME` comment; the tests
compute the line number from the marker, so editing this file cannot silently
break them.
"""

from __future__ import annotations

import pytest
import torch

from minifx.proxy import TraceError, trace_to_tape
from tests import markers

pytestmark = pytest.mark.ch1

THIS_FILE = __file__


def line_after(marker: str) -> int:
    return markers.line_after(THIS_FILE, marker)


def where(marker: str, function: str, source: str) -> str:
    return markers.traceback_lines(THIS_FILE, marker, function, source)


def trace_error(fn) -> str:
    with pytest.raises(TraceError) as error:
        trace_to_tape(fn)
    return str(error.value)


BOOL_WHY_FIX = (
    "Why: symbolically traced variables cannot be used as inputs to control flow: %{0} "
    "stands for a value that is only computed when the program runs, so the tracer cannot "
    "know which branch to record.\n"
    "How to fix: compute both branches and choose with torch.where(condition, a, b); or, "
    "if the condition depends only on settings or shapes, decide it with plain Python "
    "values before tracing."
)


def bool_message(name: str, location: str) -> str:
    return (
        f"%{name} was used as a Python bool (in `if`, `while`, `and`, `or`, `not`, "
        f"`assert`, a chained comparison like `0 < x < 1`, or `min()` / `max()`).\n{location}\n"
        + BOOL_WHY_FIX.format(name)
    )


def iter_message(name: str, location: str) -> str:
    return (
        f"%{name} was iterated over (a `for` loop, `*{name}`, `list({name})`, a starred "
        f"assignment, or `**` unpacking, which iterates over `keys()`).\n{location}\n"
        f"Why: Proxy object cannot be iterated: the number of elements of %{name} is not "
        "known while tracing.\n"
        f"How to fix: loop over a range of known length and index (`for i in range(n): "
        f"{name}[i]`), unpack a fixed number of names (`a, b = {name}.chunk(2)`), "
        f"or pass keyword arguments by name instead of `**`."
    )


def number_message(name: str, kind: str, location: str) -> str:
    return (
        f"%{name} was converted to {kind}.\n{location}\n"
        f"Why: a Python number must be known now, but %{name} is only known when the "
        f"program runs.\n"
        "How to fix: keep the value a tensor (torch functions accept tensors), or pass "
        "plain numbers into the traced function as arguments."
    )


INT_KIND = "an int (int(), range() or a list index)"
FLOAT_KIND = "a float (float() or a math function)"


def test_trace_error_is_a_value_error():
    assert issubclass(TraceError, ValueError)


def test_chained_comparison_and_max_name_the_value():
    def chained(x):
        # marker: chained
        return 0 < x < 1

    def maximum(x):
        # marker: max
        return max(x, 1)

    assert trace_error(chained) == bool_message(
        "gt", where("chained", "chained", "return 0 < x < 1")
    )
    assert trace_error(maximum) == bool_message("lt", where("max", "maximum", "return max(x, 1)"))


def test_if_on_a_proxy():
    def branchy(x):
        # marker: if
        if x.sum() > 0:
            return x
        return -x

    location = where("if", "branchy", "if x.sum() > 0:")
    assert trace_error(branchy) == bool_message("gt", location)


def test_while_on_a_proxy():
    def loopy(x):
        # marker: while
        while x < 10:
            x = x * 2
        return x

    assert trace_error(loopy) == bool_message("lt", where("while", "loopy", "while x < 10:"))


def test_and_on_a_proxy():
    def both(x, y):
        # marker: and
        return x > 0 and y

    assert trace_error(both) == bool_message("gt", where("and", "both", "return x > 0 and y"))


def test_not_on_a_proxy():
    def negated(x):
        # marker: not
        return not x

    assert trace_error(negated) == bool_message("x", where("not", "negated", "return not x"))


def test_for_loop_over_a_proxy():
    def rows(x):
        total = 0
        # marker: for
        for v in x:
            total = total + v
        return total

    assert trace_error(rows) == iter_message("x", where("for", "rows", "for v in x:"))


def test_star_call_on_a_proxy():
    def spread(x):
        # marker: star
        return torch.stack(*x.relu())

    location = where("star", "spread", "return torch.stack(*x.relu())")
    assert trace_error(spread) == iter_message("relu", location)


def test_len_of_a_proxy():
    def length(x):
        # marker: len
        return x.view(len(x), -1)

    location = where("len", "length", "return x.view(len(x), -1)")
    assert trace_error(length) == (
        f"len() was called on %x.\n{location}\n"
        "Why: 'len' is not supported in symbolic tracing by default: len() must return a "
        "Python int now, but the size of %x is not known while tracing.\n"
        "How to fix: use x.size(0) or x.shape[0], which are recorded like any other "
        "operation (or record the call itself with minifx.wrap('len') at module scope)."
    )


def test_int_of_a_proxy():
    def to_int(x):
        # marker: int
        return x * int(x.max())

    location = where("int", "to_int", "return x * int(x.max())")
    assert trace_error(to_int) == number_message("max_1", INT_KIND, location)


def test_float_of_a_proxy():
    def to_float(x):
        # marker: float
        return x * float(x.mean())

    location = where("float", "to_float", "return x * float(x.mean())")
    assert trace_error(to_float) == number_message("mean", FLOAT_KIND, location)


def test_range_of_a_proxy():
    def counted(x, n):
        # marker: range
        for i in range(n):
            x = x + i
        return x

    location = where("range", "counted", "for i in range(n):")
    assert trace_error(counted) == number_message("n", INT_KIND, location)


def test_proxy_as_a_dict_key():
    def keyed(x):
        # marker: dict-key
        return x.view({x: 1})

    location = where("dict-key", "keyed", "return x.view({x: 1})")
    assert trace_error(keyed) == (
        f"%x was used as a dict key.\n{location}\n"
        "Why: keys for dictionaries used as an argument cannot contain a Node: keys are "
        "hashed now, but a Proxy's value is only known later.\n"
        "How to fix: use plain Python values (strings, numbers) as keys."
    )


def test_proxy_as_a_dict_key_names_the_value():
    def keyed(x):
        return x.view({x: 1})

    assert "%x" in trace_error(keyed)


class Opaque:
    def __repr__(self) -> str:
        return "<Opaque>"


def test_unsupported_argument_type():
    def opaque(x):
        # marker: unsupported
        return x.view(Opaque())

    location = where("unsupported", "opaque", "return x.view(Opaque())")
    assert trace_error(opaque) == (
        f"an argument of type Opaque cannot be recorded: <Opaque>\n{location}\n"
        "Why: a record holds only Proxies, Python numbers and strings, tensors, dtypes, "
        "devices, None, Ellipsis and lists, tuples, dicts, slices and dataclasses of those.\n"
        "How to fix: pass the value in another form (for example a tensor or a number), "
        "compute it outside the traced code, or give its class a method "
        "__fx_create_arg__(self, tracer) that records it."
    )


def test_star_args_parameter():
    def variadic(x, *rest):
        return x

    with pytest.raises(TraceError) as error:
        # marker: star-args
        trace_to_tape(variadic)

    location = where("star-args", "test_star_args_parameter", "trace_to_tape(variadic)")
    assert str(error.value) == (
        "test_star_args_parameter.<locals>.variadic() takes *rest, which has no fixed "
        f"number of inputs.\n{location}\n"
        "Why: each input becomes one placeholder, so the inputs must be named.\n"
        "How to fix: give the function named parameters, or trace a small wrapper that "
        "has them."
    )


def test_errors_name_the_innermost_user_frame():
    def helper(v):
        # marker: helper
        return v if v.sum() else v

    def outer(x):
        return helper(x.relu())

    location = where("helper", "helper", "return v if v.sum() else v")
    assert trace_error(outer) == bool_message("sum_1", location)


def test_location_without_source_line():
    namespace = {}
    exec(
        compile("def generated(x):\n    if x:\n        return x\n", "<generated>", "exec"),
        namespace,
    )
    assert trace_error(namespace["generated"]) == bool_message(
        "x", '  File "<generated>", line 2, in generated'
    )


def test_no_location_when_no_frame_is_outside_the_libraries(monkeypatch):
    import minifx.proxy.errors as errors

    # Treat every file (and every frozen or generated `<...>` one) as library code:
    # then no frame is the user's.
    monkeypatch.setattr(errors, "_LIBRARY_DIRS", ("/", "<"))

    def branchy(x):
        if x:
            return x

    message = trace_error(branchy)
    assert message == bool_message("x", "").replace("\n\n", "\n")
    assert "File" not in message


def test_item_assignment_names_the_value():
    def assign(x):
        # marker: setitem
        x[0] = 1
        return x

    location = where("setitem", "assign", "x[0] = 1")
    assert trace_error(assign) == (
        f"%x was assigned to by index (`x[...] = value`).\n{location}\n"
        "Why: item assignment changes a tensor in place, and a Proxy records only "
        "operations that return new values.\n"
        "How to fix: build the new value instead, for example with "
        "torch.where(mask, value, x) or x.index_put(...), or write into a real tensor "
        "outside the traced code."
    )


def test_double_star_unpacking_explains_keys():
    def splat(x):
        # marker: splat
        return torch.sum(**x)

    message = trace_error(splat)
    assert message.startswith("%keys was iterated over") and "`**` unpacking" in message
    assert "pass keyword arguments by name instead of `**`" in message
