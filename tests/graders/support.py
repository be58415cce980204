"""Helpers for graders: failure messages that teach instead of a wall of traceback."""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import sys
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
import torch


def explain(expected: str, got: str, hint: str, see: str) -> str:
    """Build a grader's failure message, for `assert cond, explain(...)`.

    The grading tool shows this message first, so it reads top to bottom as: what the
    test expected, what the code under test did, a hint, and the book section to reread.

    Args:
        expected: What the test expected, in words or as a repr.
        got: What the implementation under test produced.
        hint: One or two sentences that point at the likely mistake.
        see: The book section, as `chapters/<page>.md#<anchor>`.

    Returns:
        The message, four lines: `Expected: ...`, `Got: ...`, `Hint: ...`, `See: ...`.

    Raises:
        ValueError: If `see` does not point into `chapters/` with an anchor.
    """
    if not (see.startswith("chapters/") and "#" in see):
        raise ValueError(
            f"explain(see={see!r}): point at a book section as 'chapters/<page>.md#<anchor>'"
        )
    return f"Expected: {expected}\nGot: {got}\nHint: {hint}\nSee: {see}"


def explain_graphs(what: str, want: str, got: str, hint: str, see: str) -> str:
    """`explain(...)` for two printed graphs: the first line that differs, then both graphs.

    Args:
        what: what the graph is, such as "the graph after remove_noops".
        want: the expected `str(graph)`.
        got: the `str(graph)` the code under test produced.
        hint: as for `explain`.
        see: as for `explain`.
    """
    return explain_texts(what, want, got, hint, see, kind="graph")


def explain_texts(what: str, want: str, got: str, hint: str, see: str, kind: str) -> str:
    """`explain_graphs` for any multi-line text, such as generated code (`kind="code"`).

    Args:
        what: what the text is, such as "gm.code after the pass".
        want: the expected text.
        got: the text the code under test produced.
        hint: as for `explain`.
        see: as for `explain`.
        kind: what to call the text in the message: "graph", "code", ...
    """
    want_lines, got_lines = want.splitlines(), got.splitlines()
    first_difference = next(
        (i for i, (a, b) in enumerate(zip(want_lines, got_lines)) if a != b),
        min(len(want_lines), len(got_lines)),
    )
    end = f"(the {kind} ends here)"
    want_line = want_lines[first_difference].strip() if first_difference < len(want_lines) else end
    got_line = got_lines[first_difference].strip() if first_difference < len(got_lines) else end
    line = first_difference + 1
    message = explain(
        f"{what}; line {line} of the {kind}: {want_line}", f"line {line}: {got_line}", hint, see
    )
    return f"{message}\n\nExpected {kind}:\n{want}\n\nGot {kind}:\n{got}"


# --- plausible wrong answers and oracles -------------------------------------------


@dataclass(frozen=True)
class Mistake:
    """A plausible wrong answer that a grader must catch.

    The mistakes each grader is written to catch are listed in `solutions/mistakes.py`,
    out of the student release (each `find` is a piece of an answer).
    `tests/test_grader_mistakes.py` makes each one by editing the solution (replace `find`
    with `replace` in `solutions/<module>.py`), grades it through the grading harness, and
    checks that the exercise loses points and that a failure message contains `expect`
    (the words of the hint written for this mistake).

    Attributes:
        name: What the student got wrong, in a few words.
        find: Text that occurs exactly once in `solutions/<module>.py`.
        replace: What the student wrote instead.
        expect: A phrase that the failure message for this mistake must contain.
    """

    name: str
    find: str
    replace: str
    expect: str


def oracle_uses(module: ModuleType, names: Iterable[str]) -> list[str]:
    """Where `module`'s source names one of `names`: `"line 12: FlopCounterMode"`, ...

    Graders of exercises that say "implement it yourself" use this to fail a solution
    that hands the work to the tool it reimplements (torch's `FlopCounterMode`,
    `fuse_linear_bn_eval`, torch.fx, minifx's own pass). Names, attributes, imports
    and string constants (not docstrings) all count, so `getattr(torch.fx, "symbolic_trace")` is found.

    Args:
        module: The student's module (from `impl.load`).
        names: Identifiers that must not appear, such as `"FlopCounterMode"`.
    """
    wanted = set(names)
    tree = ast.parse(inspect.getsource(module))
    # A string that is a statement of its own is a docstring: prose may name the oracle.
    prose = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
    found = []
    for node in ast.walk(tree):
        if id(node) in prose:
            continue
        words = []
        if isinstance(node, ast.Name):
            words = [node.id]
        elif isinstance(node, ast.Attribute):
            words = [node.attr]
        elif isinstance(node, ast.alias):
            words = node.name.split(".")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            words = [w for w in wanted if w in node.value]
        found += [f"line {node.lineno}: {w}" for w in words if w in wanted]
    return sorted(set(found), key=lambda s: int(s.split(":")[0].removeprefix("line ")))


def oracle_lines(module: ModuleType, names: Iterable[str]) -> str | None:
    """`exercises/<file>.py:<line>: <source> (<name>)` for each use of `names`, or None.

    The message a grader shows for delegation that `oracle_uses` found.
    """
    uses = oracle_uses(module, names)
    if not uses:
        return None
    path = Path(module.__file__)
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []
    for use in uses:
        line, name = use.removeprefix("line ").split(": ")
        found.append(
            f"{path.parent.name}/{path.name}:{line}: {lines[int(line) - 1].strip()} ({name})"
        )
    return "; ".join(found)


# --- running graded code ------------------------------------------------------------

GRADED_FOLDERS = ("exercises", "solutions")
OUTSIDE = "(outside your code)"


def call_graded(fn, *args, **kwargs) -> tuple[object, Exception | None]:
    """`(fn(*args, **kwargs), None)`, or `(None, error)` when it raised.

    Graded code may raise anything; a grader calls it through `call_graded` and fails the test
    outside the `except`, so that the failure shows the grader's message, not the error's
    traceback. Fails the test if graded code left a name of torch's swapped
    (`refuse_torch_swaps`).
    """
    try:
        result, error = fn(*args, **kwargs), None
    except Exception as raised:  # graded code: any error becomes a message
        result, error = None, raised
    refuse_torch_swaps()  # a patch graded code put back later would still be in place now
    return result, error


def graded_frames(frames: Iterable[traceback.FrameSummary]) -> list[traceback.FrameSummary]:
    """The frames of graded code (a file in `exercises/`, or `solutions/` in the project's run)."""
    return [f for f in frames if Path(f.filename).parent.name in GRADED_FOLDERS]


def frame_line(frame: traceback.FrameSummary) -> str:
    """`exercises/<file>.py:<line>: <source>`."""
    path = Path(frame.filename)
    return f"{path.parent.name}/{path.name}:{frame.lineno}: {(frame.line or '').strip()}"


def graded_line(frames: Iterable[traceback.FrameSummary], outside: str = OUTSIDE) -> str:
    """`frame_line(...)` of the last frame of graded code among `frames`, or `outside` if none."""
    found = graded_frames(frames)
    return frame_line(found[-1]) if found else outside


def error_line(error: BaseException, function: str | None = None, outside: str = OUTSIDE) -> str:
    """The line of graded code that raised `error` (the last one in `function`, if given)."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if function in (None, f.name)]
    return graded_line(frames, outside)


def summarize_error(error: BaseException) -> str:
    """`<Type>: <first line of its message>`."""
    first = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {first}"


def describe_error(
    error: BaseException, function: str | None = None, outside: str = OUTSIDE
) -> str:
    """`summarize_error(error)`, then the line of graded code that raised it."""
    return f"{summarize_error(error)}\n  raised at {error_line(error, function, outside)}"


def stub_hint(
    error: BaseException, stub: str = "it", otherwise: str = "your code raised at the line shown."
) -> str:
    """The hint for graded code that raised: finish the stub if it is one, else `otherwise`.

    Args:
        error: What the graded code raised.
        stub: What the student has to write, such as `"find_chains"`.
        otherwise: The hint for any other error.
    """
    if isinstance(error, NotImplementedError):
        return f"write {stub}: the stub still raises NotImplementedError."
    return otherwise


def running_line() -> str:
    """The line of graded code that is running now (for a call a grader intercepts)."""
    return graded_line(traceback.extract_stack())


# --- stand-ins for what an exercise reimplements ----------------------------------------


class Delegated(Exception):
    """Raised by a grader's stand-in for a ready-made tool that the exercise asks students to write."""


def refusing(what: str):
    """A stand-in that raises `Delegated(what)` whenever it is called."""

    def refuse(*args, **kwargs):
        raise Delegated(what)

    return refuse


def replace_for_student(patch, owner: object, name: str, stand_in, student: ModuleType) -> None:
    """Set `owner.name` to `stand_in` for one test, in the student's module too.

    `from torch.utils.flop_counter import mm_flop` binds the original in the student's
    module under a name of its own; each such name is replaced as well, so that no way of
    importing the original gets around the stand-in.

    Args:
        patch: The test's `monkeypatch`, which puts everything back when the test ends.
        owner: The module or class that holds the original.
        name: The original's attribute name on `owner`.
        stand_in: What to put in its place.
        student: The student's module (from `impl.load`).
    """
    original = getattr(owner, name)
    patch.setattr(owner, name, stand_in)
    for attribute, value in list(vars(student).items()):
        if value is original:
            patch.setattr(student, attribute, stand_in)


# --- values of graded code's, before a grader compares them ------------------------------

PLAIN_LEAVES = (str, int, float, bool, type(None))


def not_plain(value: object, kinds: tuple[type, ...] = PLAIN_LEAVES) -> str | None:
    """Where `value` is not made of plain Python values only, or None if it is.

    Plain means of exactly these types, subclasses (NamedTuples too) not counted: dict,
    list and tuple holding plain values, and the leaves in `kinds`. Only a plain value can
    be compared: an object of graded code's (or one such as `unittest.mock.ANY`, which any
    code can reach) may answer `==`, `in`, `sorted` or `str()` with whatever passes.

    Returns:
        `"a <type>"` for the first value that is not plain (`"a <type> in a dict"`...).
    """
    if type(value) in kinds:
        return None
    if type(value) in (list, tuple):
        inner = (not_plain(item, kinds) for item in value)
    elif type(value) is dict:
        inner = (not_plain(item, kinds) for pair in value.items() for item in pair)
    else:
        return f"a {type(value).__name__}"
    found = next((where for where in inner if where is not None), None)
    return None if found is None else f"{found} in a {type(value).__name__}"


def plain(value, kind: str, what: str, see: str, kinds: tuple[type, ...] = PLAIN_LEAVES):
    """`value`, once it is known to be made of plain values only (see `not_plain`); else
    the test fails with `explain(...)`, before any comparison could be fooled.

    Args:
        value: What graded code returned or stored.
        kind: What it should be, in words: "a dict, opcode (a str) -> count (an int)".
        what: What the value is: "opcode_counts(gm)".
        see: The book section, as for `explain`.
        kinds: The leaf types allowed (exact types).
    """
    found = not_plain(value, kinds)
    if found is None:
        return value
    pytest.fail(
        explain(
            f"{what}: {kind}",
            f"{found}: {safe_repr(value)}",
            "return plain Python values (dict, list, tuple, str, int, float, bool, None), "
            "not an object of your own.",
            see,
        ),
        pytrace=False,
    )


def safe_repr(value: object, limit: int = 200) -> str:
    """`repr(value)` cut to `limit` characters, or `<type> object` where its repr fails or
    is not a str (graded code's objects may define any repr)."""
    try:
        text = repr(value)
    except Exception:  # graded code's __repr__: any error just hides the repr
        text = None
    if type(text) is not str:
        return f"<{type(value).__name__} object>"
    return text[:limit]


def exactly(value: object, kind: type, what: str, see: str):
    """`value` if its type is exactly `kind` (a minifx or torch class, say `Graph`), else the
    test fails with `explain(...)`: a subclass of graded code's may compare or print as it likes."""
    if type(value) is kind:
        return value
    pytest.fail(
        explain(
            f"{what}: a {kind.__name__}",
            f"a {type(value).__name__}: {safe_repr(value)}",
            f"return a {kind.__name__} itself, not an object of your own.",
            see,
        ),
        pytrace=False,
    )


def graph_module(gm: object, what: str, see: str):
    """`gm` once it is a minifx `GraphModule` (minifx makes a subclass per instance, as
    torch.fx does) whose graph is exactly minifx's `Graph`, and which runs the code generated
    from it (`_runs_something_else`); else the test fails with `explain(...)`: an object
    of graded code's could print or answer anything."""
    from minifx.codegen import GraphModule  # here: graders of stages 1 and 2 need no codegen
    from minifx.graph import Graph

    if not isinstance(gm, GraphModule):
        pytest.fail(
            explain(what, f"a {type(gm).__name__}", "return gm, the GraphModule.", see),
            pytrace=False,
        )
    exactly(gm.graph, Graph, f"{what}: gm.graph", see)
    problem = _runs_something_else(gm)
    if problem:
        pytest.fail(
            explain(
                f"{what}: a GraphModule that runs the code generated from its graph",
                problem,
                "change gm.graph, install torch's own modules, and call gm.recompile(); "
                "do not replace forward, add hooks, or install modules of your own classes.",
                see,
            ),
            pytrace=False,
        )
    return gm


def _runs_something_else(gm) -> str:
    """What makes `gm` run other code than its graph's, or ''. Checked: its `forward`,
    compiled from the code generated now (graded code could leave a stale or a swapped one:
    minifx caches compiled code), its codegen, hooks, and its modules' classes."""
    from minifx.codegen import python_code

    if methods_of_its_own(gm):  # first: named_modules below could be one of them
        return f"methods of its own: {methods_of_its_own(gm)}"
    codegen = gm.graph._codegen
    if codegen is not None and type(codegen).__module__.split(".")[0] != "minifx":
        return f"a CodeGen of your own, {type(codegen).__name__}"
    for name, module in gm.named_modules():
        if type(module).__module__.split(".")[0] in GRADED_FOLDERS:
            return f"{name}, a {type(module).__name__}: a module of your own class"
        if vars(module).get("_forward_hooks") or vars(module).get("_forward_pre_hooks"):
            return f"forward hooks on {name or 'gm'}"
    if "forward" in vars(gm):
        return "a forward of its own, set on gm"
    # Compiled as minifx compiles it (no flags of this file's); code objects compare by
    # what they do, not by their file name.
    fresh = compile(python_code(gm.graph).src, "<the graph's code>", "exec", dont_inherit=True)
    (want,) = [c for c in fresh.co_consts if getattr(c, "co_name", None) == "forward"]
    if type(gm).forward.__code__ != want:
        return "a forward that is not the code of gm.graph (was gm.recompile() called?)"
    return ""


# --- comparisons graded code cannot swap ---------------------------------------------
# The guard compares torch with its snapshot after each test, so graded code could swap
# `torch.equal` (or `torch.round`, with which a grader works out what it expects) for a
# part of one test and put it back before the test ends: from a generator's `finally`,
# run when the grader drops the tensor that held it. A grader decides through
# `tensors_equal` and `tensors_close` below. They use torch's functions as bound here,
# when the graders load (before graded code runs), and first check that, at that moment,
# every name of torch, torch.nn.functional and the tensor classes is the object it was.
_EQUAL, _ALLCLOSE = torch.equal, torch.allclose
TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)
_WATCHED = {
    "torch": torch,
    "torch.nn.functional": torch.nn.functional,
    "torch.Tensor": torch.Tensor,
    "torch._C.TensorBase": torch._C.TensorBase,  # where `abs`, `round`, `shape` live
}
_BOUND = {where: dict(vars(owner)) for where, owner in _WATCHED.items()}
_BOUND["torch"].pop("manual_seed")  # torch._dynamo wraps it as it loads (exercise 9.1)
_GONE = object()
# A mode on torch's function or dispatch stack answers every torch call made while it is
# active, `_EQUAL` above included; a dispatch key included for the thread (the Python
# dispatcher's) sends calls to kernels that graded code may have given torch's operators.
# Graded code may leave none of this changed.
_THREAD_STATE = {
    "torch's function mode stack (a mode left active)": torch._C._len_torch_function_stack,
    "torch's dispatch mode stack (a mode left active)": torch._C._len_torch_dispatch_stack,
    "the dispatch keys this thread includes": torch._C._dispatch_tls_local_include_set,
    "the dispatch keys this thread excludes": torch._C._dispatch_tls_local_exclude_set,
}
_THREAD_STATE_AT_LOAD = {what: read() for what, read in _THREAD_STATE.items()}


def torch_swaps() -> list[str]:
    """The names of torch, torch.nn.functional and the tensor classes that are no longer
    the objects they were when the graders loaded, the names added to torch.Tensor
    that hide torch._C.TensorBase's (`Tensor.round = ...`), and the thread's modes and
    dispatch keys if they differ from then. Other names that torch adds later (a
    submodule loaded on first use) do not count."""
    swapped = [
        f"{where}.{name}"
        for where, bound in _BOUND.items()
        for name, value in bound.items()
        if vars(_WATCHED[where]).get(name, _GONE) is not value
    ]
    added = vars(torch.Tensor).keys() - _BOUND["torch.Tensor"].keys()
    hiding = [name for name in added if name in _BOUND["torch._C.TensorBase"]]
    state = [what for what, read in _THREAD_STATE.items() if read() != _THREAD_STATE_AT_LOAD[what]]
    return swapped + [f"torch.Tensor.{name}" for name in sorted(hiding)] + state


def refuse_torch_swaps() -> None:
    """Fail the test if graded code swapped a name of torch's (`torch_swaps`): called as a
    graded call returns (`call_graded`), while a patch it made is still in place, and by
    `tensors_equal` and `tensors_close` as a grader decides."""
    _refuse_swaps(
        torch_swaps(),
        " while this test ran, which the grading relies on; graded code may not patch torch",
    )


def _refuse_swaps(swapped: list[str], why: str) -> None:
    """Fail the test if `swapped` names anything, showing the first five and then `why`."""
    if swapped:
        shown = ", ".join(swapped[:5]) + (f" and {len(swapped) - 5} more" if swapped[5:] else "")
        pytest.fail(f"graded code replaced {shown}{why}, so this test earns nothing", pytrace=False)


def tensors_equal(got: object, want: object) -> bool:
    """Whether `got` and `want` are exactly tensors (a subclass could answer through
    `__torch_function__`) of one shape holding the same values, as `torch.equal` says.

    Fails the test if graded code swapped a name of torch's at this moment (see above).
    """
    refuse_torch_swaps()
    return type(got) in TENSOR_TYPES and type(want) in TENSOR_TYPES and _EQUAL(got, want)


def tensors_close(got: object, want: object, *, rtol: float = 1e-5, atol: float = 1e-8) -> bool:
    """Whether `got` and `want` are exactly tensors of one shape (`torch.allclose` alone
    would broadcast one to the other) whose values are close, as `torch.allclose` says.

    Fails the test if graded code swapped a name of torch's at this moment (see above).
    """
    refuse_torch_swaps()
    return (
        type(got) in TENSOR_TYPES
        and type(want) in TENSOR_TYPES
        and got.shape == want.shape
        and _ALLCLOSE(got, want, rtol=rtol, atol=atol)
    )


def plain_tensors(value, what: str, see: str):
    """`value`, once every tensor in it (itself, or an item of a tuple or list) is exactly a
    `torch.Tensor` (or `nn.Parameter`); else the test fails with `explain(...)`. A subclass
    of graded code's could answer `torch.equal`, `allclose` and `.shape` through
    `__torch_function__`."""
    items = value if type(value) in (tuple, list) else (value,)
    odd = next(
        (
            item
            for item in items
            if isinstance(item, torch.Tensor)
            and type(item) not in (torch.Tensor, torch.nn.Parameter)
        ),
        None,
    )
    if odd is None:
        return value
    pytest.fail(
        explain(
            f"{what}: torch.Tensor values",
            f"a {type(odd).__name__}, a subclass of torch.Tensor",
            "return tensors made by torch, not an object of your own.",
            see,
        ),
        pytrace=False,
    )


def text(value: object) -> str:
    """`str(value)` as an exact `str`: an object of graded code's may print as a str subclass
    whose `==` or `in` answers True for anything."""
    return str.__str__(str(value))


# --- printing graded code's graphs ----------------------------------------------------
# Graded code could patch how minifx prints a graph (`Graph.__str__`, `Node.format_node`
# or a helper they call) with a patch that puts itself back at its first call, which the
# guard, comparing after each test, never sees: in the sixth red-team round exercise 3.2's
# stub printed the golden graphs so. Counting the writes to minifx's dicts would also
# count the graders' own stand-ins (7.1, 7.2 and 8.1 patch minifx's passes while a test
# runs). Graders print graded code's graphs through `graph_text` instead: minifx's printer
# as bound when the graders loaded, once the modules and classes of the stages that print
# (1 to 3, which no grader patches) have every name they had then, and no node (or the
# graph) shadows a method of its class with one of its own (`node.format_node = ...`).
_PRINTING_STAGES = ("minifx.proxy", "minifx.graph", "minifx.codegen")
try:  # stages 1 to 3, loaded here so that their names are bound before graded code runs
    _graph_stage = importlib.import_module("minifx.graph")
    _Graph, _Node = _graph_stage.Graph, _graph_stage.Node
    importlib.import_module("minifx.codegen")
except ModuleNotFoundError as missing:  # the grading's own tests grade a toy project
    if missing.name != "minifx":
        raise
    _Graph = _Node = None
_GRAPH_STR = getattr(_Graph, "__str__", None)
# And torch.fx's graph and node, which a grader reads as well (3.2 runs the pass on torch.fx's
# GraphModule): its `Graph.nodes`, patched to answer once with look-alikes, passed that test.
_TORCH_FX_GRAPH = ("torch.fx.graph", "torch.fx.node")
importlib.import_module("torch.fx")
# Names a class gains by itself (pickling's cache, lazily made annotations).
_SELF_ADDED = {"__slotnames__", "__annotations__", "__abstractmethods__"}


class _Bound(tuple):
    """A tuple that the guard does not read as the graders' data: what it holds (minifx's
    caches and registries among them) changes as programs run. Nothing changes it in place."""


def _printing_owners() -> _Bound:
    """`(where, owner, its names, their objects)` for each module of minifx's printing
    stages and each class they define, as they are now."""
    found = []
    for name, module in list(sys.modules.items()):
        minifx = name.split(".")[0] == "minifx" and name.startswith(_PRINTING_STAGES)
        if not (minifx or name in _TORCH_FX_GRAPH):
            continue
        owners = [(name, module)] + [
            (f"{name}.{value.__qualname__}", value)
            for value in list(vars(module).values())
            if isinstance(value, type) and vars(value).get("__module__") == name
        ]
        for where, owner in owners:
            names, objects = zip(*vars(owner).items())
            found.append((where, owner, names, objects))
    return _Bound(found)


_PRINTING_AT_LOAD = _printing_owners()
# The methods of a graph and a node, which an attribute of the object's own would hide (a
# default value of the class's, such as `Graph._codegen = None`, is set on the object by
# design; a property cannot be hidden).
_SHADOWABLE = {
    kind: {
        name
        for cls in kind.__mro__[:-1]
        for name, value in vars(cls).items()
        if callable(value) or isinstance(value, (staticmethod, classmethod))
    }
    for kind in (_Graph, _Node)
    if kind is not None
}


def printing_swaps() -> list[str]:
    """The names of minifx's printing stages (and of torch.fx's graph and node) that are no
    longer the objects they were when
    the graders loaded, and those added since to their classes (a property `name` on
    `Node` would answer before each node's own), or to their modules where they hide a
    builtin. Modules imported since do not count."""
    swapped = []
    for where, owner, names, objects in _PRINTING_AT_LOAD:
        namespace = vars(owner)
        swapped += [
            f"{where}.{name}"
            for name, value in zip(names, objects)
            if namespace.get(name, _GONE) is not value
        ]
        added = namespace.keys() - set(names) - _SELF_ADDED
        is_class = isinstance(owner, type)
        swapped += [
            f"{where}.{k} (added)" for k in sorted(added) if is_class or k in vars(builtins)
        ]
    return swapped


def refuse_graph_swaps() -> None:
    """Fail the test if a name of minifx's stages 1 to 3 or of torch.fx's graph and node is
    not the object it was when the graders loaded (`printing_swaps`): called before a
    grader reads a graph that graded code had in hand."""
    _refuse_swaps(
        printing_swaps(),
        ", with which a grader reads a graph; graded code may not patch minifx or torch.fx",
    )


def graph_text(graph: object, what: str, see: str) -> str:
    """`str(graph)` as minifx prints it, once `graph` is exactly minifx's `Graph` (see
    `exactly`), each of its nodes exactly minifx's `Node`, and nothing of graded code's
    stands in for minifx's printer (see above), before or after printing; else the test
    fails with a message that says what was replaced."""
    exactly(graph, _Graph, what, see)
    nodes = _refuse_printing_swaps(graph)
    text = str.__str__(_GRAPH_STR(graph))
    _refuse_printing_swaps(graph)  # a patch made while printing (by a finalizer) and left
    if len(text.splitlines()) != len(nodes) + 1:
        pytest.fail(
            explain(
                f"{what}: one line per node",
                f"{len(text.splitlines()) - 1} lines for {len(nodes)} nodes",
                "a name, target or argument holds a line break: give nodes plain names and "
                "targets, as graph.create_node does.",
                see,
            ),
            pytrace=False,
        )
    _refuse_node_names_as_strings(nodes, what, see)
    return text


def _refuse_node_names_as_strings(nodes: list[_Node], what: str, see: str) -> None:
    """Fail the test if an argument of a node is a string with a `%` in it: a graph prints
    a string as it is, so `"%bias"` reads as the node `%bias` (with its `users` set by hand,
    a graph that computes no bias printed as 3.2's golden one: eighth red-team round)."""
    for node in nodes:
        found = _strings_with_percent((node.args, node.kwargs))
        if found:
            pytest.fail(
                explain(
                    f"{what}: the arguments of %{node.name} are nodes and constants",
                    f"the string {found!r}, which prints as a node's name",
                    "pass the node itself (the value graph.get_attr or graph.call_function "
                    "returned), not a string of its name.",
                    see,
                ),
                pytrace=False,
            )


def _strings_with_percent(value: object) -> str:
    """The first string with a `%` among the containers a node's arguments are made of."""
    if type(value) is str:
        return value if "%" in value else ""
    if type(value) is slice:
        value = (value.start, value.stop, value.step)
    if type(value) is dict:
        value = (*value.keys(), *value.values())
    if type(value) in (tuple, list):
        return next((found for item in value if (found := _strings_with_percent(item))), "")
    return ""


def _refuse_printing_swaps(graph: _Graph) -> list[_Node]:
    """The graph's nodes, once nothing of graded code's stands in for the printer."""
    replaced = printing_swaps()
    nodes = [] if replaced else list(_Graph.nodes.fget(graph))
    odd = next((node for node in nodes if type(node) is not _Node), None)
    if odd is not None:
        replaced.append(f"a node of the graph, %{odd.name}, by a {type(odd).__name__}")
    replaced += [
        f"{where}.{name} (set on the object)"
        for where, owner in [("the graph", graph), *((f"%{n.name}", n) for n in nodes)]
        if type(owner) in _SHADOWABLE
        for name in sorted(vars(owner).keys() & _SHADOWABLE[type(owner)])
    ]
    if replaced:
        shown = ", ".join(replaced[:5]) + (f" and {len(replaced) - 5} more" if replaced[5:] else "")
        pytest.fail(
            f"graded code replaced {shown}, with which minifx prints a graph; graded code may "
            "not patch minifx or give its objects methods of their own, so this test earns nothing",
            pytrace=False,
        )
    return nodes


# --- a GraphModule's own class ---------------------------------------------------------
# minifx makes a class for each GraphModule (as torch.fx does), after the guard's snapshot:
# graded code could give it methods (`named_modules`, `named_parameters`) that answer a
# grader's questions with the golden names (seventh red-team round: 5 tests, 2.9 points on
# exercise 3.2's stub), or set them on the object itself.
_PER_INSTANCE = {"_one_per_instance", "__module__", "__doc__", "forward", *_SELF_ADDED}
_MINIFX_CLASSES = frozenset(id(owner) for _, owner, _, _ in _PRINTING_AT_LOAD)


def methods_of_its_own(gm: object) -> str:
    """What `gm`'s class (the one minifx made for it) or `gm` itself sets over the methods
    of minifx's GraphModule and nn.Module, or ''."""
    cls = type(gm)
    if len(cls.__bases__) != 1 or id(cls.__bases__[0]) not in _MINIFX_CLASSES:
        return f"a class derived from {', '.join(b.__name__ for b in cls.__bases__)}"
    added = sorted(vars(cls).keys() - _PER_INSTANCE)
    if added:
        return f"{', '.join(added)} set on its class"
    methods = {
        name
        for base in cls.__mro__[1:-1]
        for name, value in vars(base).items()
        if callable(value) or isinstance(value, (staticmethod, classmethod))
    }
    own = sorted(vars(gm).keys() & methods)
    return f"{', '.join(own)} set on the object" if own else ""


def refuse_methods_of_its_own(gm: object, what: str, see: str) -> None:
    """Fail the test if `gm` answers with methods of graded code's (`methods_of_its_own`)
    or a name of minifx's stages 1 to 3 is swapped (`printing_swaps`)."""
    problem = methods_of_its_own(gm) or ", ".join(printing_swaps()[:5])
    if problem:
        pytest.fail(
            explain(
                f"{what}: a GraphModule with minifx's methods",
                problem,
                "change gm's graph and submodules through their methods; do not give gm or its "
                "class methods of your own.",
                see,
            ),
            pytrace=False,
        )
