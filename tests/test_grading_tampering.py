"""Graded code that tampers with the grading from inside the worker, and earns nothing.

`tests/test_grading_attacks.py` plants the attacks a student is likely to try, written
plainly, and grades them through every entry point. The ones here are written to get past
the judge's scan of the source (`tests/grading/scan.py`): modules come from `sys.modules`
and names are built from strings, so that each one reaches the worker and must be
stopped there, by the sandbox (`sandbox.py`), the guard (`guard.py`) or the rule that a
test passes only when its body ran to its end. Where an attack gets hold of what it is
after, it uses it to pass every test (`_forge`), so an attack that works would show as
points.

Each attack is appended to the untouched stub of one exercise; every stub must still get 0,
with a message that says what was refused. They are graded through the judge, a round of
up to one attack per exercise at a time.
"""

from __future__ import annotations

import ast
import functools
import marshal
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from tests.grading import Limits, grade, load_manifest
from tests.grading.landlock import abi as landlock_abi
from tests.grading.sandbox import GRADING_FOLDERS
from tests.grading.scan import findings

pytestmark = pytest.mark.meta

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = load_manifest()

# What an attack does once it reaches the worker's grading plugin: every test passes.
FORGE = '''
def _forge(plugin):
    """Make every test of this exercise pass: what an attack does once it reaches the worker."""
    send = plugin.reporter.send

    def passed(kind, **fields):
        if kind == "result":
            fields.update(outcome="passed", message="")
        send(kind, **fields)

    plugin.reporter.send = passed
    plugin.compromised = ""
'''

# Shared by the attacks: what the scan would refuse, reached through sys.modules.
PRELUDE = (
    """
import sys as _sys
_b = _sys.modules["built" + "ins"]
_get = _b.getattr
"""
    + FORGE
    + """

def _search_frames(frame):
    while frame is not None:
        for value in _get(frame, "f_" + "locals").values():
            if type(value).__name__ == "GradingPlugin":
                _forge(value)
        frame = _get(frame, "f_" + "back")
"""
)


def _marshalled(source: str, filename: str) -> bytes:
    """`marshal.dumps` of the one function that `source` defines, compiled under `filename`:
    bytes that this Python (the worker's) loads back as that function's code."""
    (code,) = [c for c in compile(source, filename, "exec").co_consts if hasattr(c, "co_name")]
    return marshal.dumps(code)


# A function named as a constructor, which the sandbox lets any trusted code call, that
# forges the report; compiled under a file name that is neither graded code's, minifx's
# nor an installed package's, which the sandbox took for the standard library's.
FORGING_INIT = _marshalled(
    """
def __init__():
    for _o in _gc.get_objects():
        if type(_o).__name__ == "GradingPlugin":
            _forge(_o)
""",
    "helper.py",
)

# A frame callback for TorchDynamo's `set_eval_frame`: it forges the report from the
# worker's own frame, and lets every frame run as it would.
DYNAMO_CALLBACK = """
_types = _sys.modules["torch._dynamo.types"]


def _callback(frame, cache_entry, frame_state):
    if frame.f_code.co_name == "pytest_runtest_logfinish":
        plugin = _get(frame, "f_" + "locals").get("self")
        if type(plugin).__name__ == "GradingPlugin":
            _forge(plugin)
    run = _types.FrameExecStrategy(_types.FrameAction.DEFAULT, _types.FrameAction.DEFAULT)
    return _types.ConvertFrameReturn(run, apply_to_code=False)
"""

# name -> (code appended to a stub, words its report must show)
ATTACKS = {
    "gc lists the worker's objects": (
        """
for _o in _sys.modules["g" + "c"].get_objects():
    if type(_o).__name__ == "GradingPlugin":
        _forge(_o)
""",
        "inspect the running interpreter (gc.get_objects)",
    ),
    "gc finds what refers to a module": (
        """
_sys.modules["g" + "c"].get_referrers(_sys.modules["torch"])
""",
        "inspect the running interpreter (gc.get_referrers)",
    ),
    "stack frames, from sys._getframe": (
        """
_search_frames(_get(_sys, "_get" + "frame")())
""",
        "inspect the running interpreter (sys._getframe)",
    ),
    "stack frames, from inspect": (
        """
for _info in _sys.modules["inspect"].stack():
    _search_frames(_info.frame)
""",
        "inspect the running interpreter (sys._getframe)",
    ),
    "stack frames, from a traceback": (
        """
try:
    1 / 0
except ZeroDivisionError as _error:
    _search_frames(_get(_get(_error, "__trace" + "back__"), "tb_" + "frame"))
""",
        "inspect the running interpreter",
    ),
    "stack frames, from torch": (
        """
import torch.fx.proxy
_search_frames(torch.fx.proxy.TracerBase._find_user_frame(None))
""",
        "inspect the running interpreter (sys._getframe)",
    ),
    "stack frames, from every thread": (
        """
for _frame in _get(_sys, "_current" + "_frames")().values():
    _search_frames(_frame)
""",
        "inspect the running interpreter (sys._current_frames)",
    ),
    "everything reachable from sys.modules": (
        """
def _reachable():
    seen, todo = set(), [(m, 0) for m in list(_sys.modules.values())]
    while todo:
        value, depth = todo.pop()
        if id(value) in seen or depth > 6:
            continue
        seen.add(id(value))
        if type(value).__name__ in ("GradingPlugin", "Config", "Session"):
            yield value
            continue
        try:
            inner = _get(value, "__di" + "ct__", None)
            children = list(inner.values()) if type(inner) is dict else []
            children += list(value.values()) if type(value) is dict else list(value) if type(value) in (list, tuple) else []
            for cell in (_get(value, "__clo" + "sure__", None) or ()):
                children.append(cell.cell_contents)
        except Exception:
            continue
        todo += [(child, depth + 1) for child in children]


for _found in _reachable():
    if type(_found).__name__ == "GradingPlugin":
        _forge(_found)
    else:
        for _plugin in _found.pluginmanager.get_plugins() if hasattr(_found, "pluginmanager") else ():
            if type(_plugin).__name__ == "GradingPlugin":
                _forge(_plugin)
""",
        "NotImplementedError",
    ),
    "pytest's Function.runtest made a no-op": (
        """
_b.setattr(_sys.modules["_pytest.python"].Function, "runtest", lambda self: None)
""",
        "replaced _pytest.python.Function.runtest",
    ),
    "pytest's CallInfo made to report no error": (
        """
_CallInfo = _sys.modules["_pytest.runner"].CallInfo
_CallInfo.from_call = classmethod(lambda cls, func, when, reraise=None: cls(
    None, None, 0, 0, 0, when, _ispytest=True))
""",
        "replaced _pytest.runner.CallInfo.from_call",
    ),
    "pytest's runner replaced in its module": (
        """
_runner = _sys.modules["_pytest.runner"]
_runner.call_and_report = _sys.modules["functools"].partial(_runner.call_and_report)
""",
        "replaced _pytest.runner.call_and_report",
    ),
    "pytest.fail made a no-op": (
        """
_b.setattr(_sys.modules["pytest"], "fail", lambda *args, **kwargs: None)
_b.setattr(_sys.modules["_pytest.outcomes"], "fail", lambda *args, **kwargs: None)
""",
        "replaced",
    ),
    "torch's comparisons made true": (
        """
_torch = _sys.modules["torch"]
for _name in ("equal", "allclose"):
    _b.setattr(_torch, _name, lambda *args, **kwargs: True)
""",
        "replaced torch.",
    ),
    "Tensor.__eq__ patched": (
        """
_b.setattr(_sys.modules["torch"].Tensor, "__eq__", lambda self, other: True)
""",
        "torch.Tensor.__eq__ (added)",
    ),
    "assert_close's tolerance widened": (
        """
_get(_sys.modules["torch.testing"].assert_close, "__kw" + "defaults__")["atol"] = 1e9
""",
        "read the defaults of assert_close",
    ),
    "a builtin replaced": (
        """
_b.abs = lambda value: 0
""",
        "replaced builtins.abs",
    ),
    "a module swapped in sys.modules": (
        """
_modules = _sys.modules
_modules["tests.graders.support"] = type(_sys)("tests.graders.support")
""",
        "sys.modules['tests.graders.support']",
    ),
    "an import hook added": (
        """
class _Finder:
    def find_spec(self, name, path=None, target=None):
        return None


_get(_sys, "meta" + "_path").insert(0, _Finder())
""",
        "sys.meta_path",
    ),
    "the grader's expected values changed": (
        """
for _name, _module in list(_sys.modules.items()):
    if _name.startswith("tests.graders.test_ex"):
        for _key, _value in list(vars(_module).items()):
            if type(_value) in (dict, list) and _value and not _key.startswith("__") and _key != "pytestmark":
                _value.clear()
_sys.modules["tests.conftest"].CHAPTERS.append("ch99")  # for a grader without such data
""",
        "the data of tests.",
    ),
    "a torch function mode left active": (
        """
_overrides = _sys.modules["torch.overrides"]


class _Yes(_overrides.TorchFunctionMode):
    pass


def _answer(self, func, types, args=(), kwargs=None):
    return True


_b.setattr(_Yes, "__torch_" + "function__", _answer)
_get(_Yes(), "__en" + "ter__")()
""",
        "torch's function and dispatch modes",
    ),
    "a builtin's name added to a grader": (
        """
for _name, _module in list(_sys.modules.items()):
    if _name.startswith("tests.graders.test_ex"):
        vars(_module)["abs"] = lambda value: 0
""",
        "abs (added)",
    ),
    "ctypes reads memory": (
        """
_sys.modules["ctypes"].string_at(id(_sys), 8)
""",
        "use ctypes",
    ),
    "a process started": (
        """
_sys.modules["os"].system("true")
""",
        "start, stop or signal processes (os.system)",
    ),
    "the judge killed": (
        """
_os = _sys.modules["os"]
_os.kill(_os.getppid(), 9)
""",
        "start, stop or signal processes (os.kill)",
    ),
    "a file written": (
        """
open("/tmp/minifx-grading-attack.txt", "w").write("forged")
""",
        "write files",
    ),
    "a solution read by its path": (
        f"""
_source = open({str(ROOT / "solutions" / "ch3_method_relu.py")!r}).read()
""",
        "read files outside exercises/",
    ),
    "a grader read from the staged folder": (
        """
_text = open(_sys.modules["tests.graders.support"].__file__).read()
""",
        "read files outside exercises/",
    ),
    "a trace function": (
        """
_get(_sys, "set" + "trace")(lambda frame, event, arg: None)
""",
        "install a tracing or audit hook (sys.settrace)",
    ),
    "an audit hook of its own": (
        """
_get(_sys, "add" + "audithook")(lambda event, args: None)
""",
        "install a tracing or audit hook (sys.addaudithook)",
    ),
    "a thread left running": (
        """
_sys.modules["threading"].Thread(target=_sys.modules["time"].sleep, args=(30,), daemon=True).start()
""",
        "the threads (graded code left one running)",
    ),
    "code compiled under minifx's name": (
        """
_code = _get(_b, "com" + "pile")("x = 1", _sys.modules["minifx"].__file__, "exec")
""",
        "make or run code that claims to be",
    ),
    "a code object renamed": (
        """
_code = _get(lambda: 0, "__co" + "de__").replace(co_filename=_sys.modules["minifx"].__file__)
""",
        "make or run code that claims to be",
    ),
    "a skip, through sys.modules": (
        """
raise _sys.modules["unittest"].SkipTest("later")
""",
        "skipped",
    ),
    "pytest.exit, through sys.modules": (
        """
_sys.modules["pytest"].exit("done", returncode=0)
""",
        "pytest.exit()",
    ),
    # Trusted code asked to run what graded code hands it: support.call_graded(fn) calls
    # fn from the grading's own frame, so the sandbox once took the request for the grading's.
    "gc and stack frames, through a function the grading calls for graded code": (
        """
_call = _sys.modules["tests.graders.support"].call_graded
_objects, _ = _call(_sys.modules["g" + "c"].get_objects)
for _o in _objects or ():
    if type(_o).__name__ == "GradingPlugin":
        _forge(_o)
_frame, _ = _call(_get(_sys, "_get" + "frame"))
while _frame is not None:
    for _value in list(_get(_frame, "f_" + "locals").values()):
        _manager = _get(_get(_value, "config", None), "pluginmanager", None)
        for _plugin in _manager.get_plugins() if _manager is not None else ():
            if type(_plugin).__name__ == "GradingPlugin":
                _forge(_plugin)
    _frame = _get(_frame, "f_" + "back")
""",
        "inspect the running interpreter (gc.get_objects) through code it handed over",
    ),
    "a grader's helper rewritten, through open called by the grading": (
        """
_support = _sys.modules["tests.graders.support"]
_file, _ = _support.call_graded(open, _support.__file__, "a")
if _file is not None:
    _file.write("\\nimport gc\\nfor _o in gc.get_objects():\\n    _o = None\\n")
    _file.close()
""",
        "write files that the grading runs (open",
    ),
    "a process started by the grading, to rewrite a grader's helper": (
        """
_os, _support = _sys.modules["os"], _sys.modules["tests.graders.support"]
_append = "import sys; open(sys.argv[1], 'a').write(sys.argv[2])"
_forged = "import gc\\nfor _o in gc.get_objects():\\n    _o = None\\n"
_command = [_sys.executable, "-c", _append, _support.__file__, _forged]
_support.call_graded(_os.posix_spawn, _sys.executable, _command, dict(_os.environ))
""",
        "start, stop or signal processes (os.posix_spawn)",
    ),
    # The worker's memory holds the key that signs its report: with it, graded code could
    # write a whole report of passed tests (a test found the key this way).
    "the worker's memory read through torch": (
        """
_opener = _sys.modules["torch"].serialization._open_file
with _opener("/proc/self/maps", "rb") as _maps:
    _start = int(_maps.read().split(b"-")[0], 16)
with _opener("/proc/self/mem", "rb") as _memory:
    _memory.seek(_start)
    _memory.read(4096)
""",
        "/mem, which is the grading's",
    ),
    "a method compiled under <string>, which minifx calls by its name": (
        """
_mx = _sys.modules["minifx"]
_spy = {"_sys": _sys, "_forge": _forge, "_Interpreter": _mx.Interpreter}
_get(_b, "ex" + "ec")(_get(_b, "com" + "pile")(
    "def run_node(self, n):\\n"
    "    for _o in _sys.modules['g' + 'c'].get_objects():\\n"
    "        if type(_o).__name__ == 'GradingPlugin':\\n"
    "            _forge(_o)\\n"
    "    return _Interpreter.run_node(self, n)\\n",
    "<string>", "exec"), _spy)


class _Spy(_mx.Interpreter):
    pass


_Spy.run_node = _spy["run_node"]
_Spy(_mx.symbolic_trace(_sys.modules["torch"].nn.ReLU())).run(_sys.modules["torch"].ones(1))
""",
        "inspect the running interpreter (gc.get_objects) (exercises/<string>",
    ),
    "an exception whose message cannot be printed": (
        """
class _Unprintable(Exception):
    pass


def _refuse(self):
    raise RuntimeError("no")


_b.setattr(_Unprintable, "__st" + "r__", _refuse)
raise _Unprintable()
""",
        "could not be printed",
    ),
    # Round six. Code compiled under minifx's name while graded code runs is refused to
    # graded code; compile and exec handed to the grading's call_graded ran it as minifx's
    # own, which may list the garbage collector's objects (exercise 3.2: 10 points).
    "code compiled under minifx's name by the grading, and run by it": (
        """
_call = _sys.modules["tests.graders.support"].call_graded
_code, _ = _call(_get(_b, "com" + "pile"), (
    "for _o in _gc.get_objects():\\n"
    "    if type(_o).__name__ == 'GradingPlugin':\\n"
    "        _forge(_o)\\n"), _sys.modules["minifx"].__file__, "exec")
_call(_get(_b, "ex" + "ec"), _code, {"_gc": _sys.modules["g" + "c"], "_forge": _forge})
""",
        "make or run code that claims to be",
    ),
    # Code read from bytes (marshal.loads raises no event the sandbox watched) under a file
    # name the sandbox took for the standard library's, put into a function of graded
    # code's own (which graded code may change), and called by trusted code (exercise 3.2,
    # called by its grader by name: 10 points).
    "code read from bytes by marshal, under another file's name": (
        f"""
_gc = _sys.modules["g" + "c"]


def _helper():
    pass


_b.setattr(_helper, "__co" + "de__", _sys.modules["mar" + "shal"].loads({FORGING_INIT!r}))
_sys.modules["tests.graders.support"].call_graded(_helper)
""",
        "load code from bytes (marshal.loads)",
    ),
    "a function of graded code given the code of minifx's": (
        """
def _helper(root, concrete_args=None):
    pass


_real = _get(_sys.modules["minifx"].symbolic_trace, "__co" + "de__")
_b.setattr(_helper, "__co" + "de__", _real)
""",
        "the code of another file",
    ),
    # Twelfth round: TorchDynamo's frame callback is called with every frame Python runs,
    # the worker's own included, and reads their locals with no audit event (3.1's stub
    # earned 10 points with it). Through Dynamo's own wrapper, graded code is on the stack
    # all the same.
    "a frame callback of TorchDynamo's": (
        DYNAMO_CALLBACK
        + """
_get(_sys.modules["torch"]._C._dynamo, "eval_frame").set_eval_frame(_callback)
""",
        "install a frame callback of TorchDynamo's (set_eval_frame)",
    ),
    "a frame callback, through TorchDynamo's wrapper": (
        DYNAMO_CALLBACK
        + """
_sys.modules["torch._dynamo.eval_frame"]._maybe_set_eval_frame(_callback)
""",
        "install a frame callback of TorchDynamo's (set_eval_frame)",
    ),
    # Thirteenth round: modules that hand out frames, or run code, with no audit event.
    "greenlet, whose gr_frame is a running frame": (
        """
_sys.modules["importlib"].import_module("green" + "let")
""",
        "import greenlet",
    ),
    "_testcapi, which runs code with no audit event": (
        """
_sys.modules["importlib"].import_module("_test" + "capi")
""",
        "import _testcapi",
    ),
    "a guard hook of TorchDynamo's, which sees compiled frames' locals": (
        """
_sys.modules["torch._dynamo.guards"].set_guard_error_hook(print)
""",
        "set TorchDynamo's hooks into running code",
    ),
    # A published function's keyword defaults (a grader's tolerance) set by the grading's
    # call_graded, which the sandbox took for the grading's own change; put back before
    # the test ends, the guard would not have seen it.
    "a grader's tolerance widened through the grading's call_graded": (
        """
_support = _sys.modules["tests.graders.support"]
_support.call_graded(_b.setattr, _support.tensors_close, "__kw" + "defaults__", {"rtol": 1e9, "atol": 1e9})
""",
        "change tensors_close.__kwdefaults__ (object.__setattr__) through code it handed over",
    ),
}


def test_each_attack_gets_past_the_scan():
    """Otherwise the scan stops it, and the worker's defences are not what is tested."""
    caught = {name: findings(PRELUDE + code) for name, (code, _) in ATTACKS.items()}
    assert not {name: found for name, found in caught.items() if found}


ROUNDS = [list(ATTACKS)[i : i + len(EXERCISES)] for i in range(0, len(ATTACKS), len(EXERCISES))]


@pytest.mark.parametrize("round_", range(len(ROUNDS)), ids=lambda i: f"round-{i + 1}")
def test_tampering_earns_nothing_and_says_what_was_refused(round_):
    planted = dict(zip(EXERCISES, ROUNDS[round_]))
    modules = {}
    for exercise, name in planted.items():
        stub = (ROOT / "exercises" / f"{exercise.module}.py").read_text(encoding="utf-8")
        modules[exercise.module] = (stub + "\n" + PRELUDE + ATTACKS[name][0]).encode()
    # No attack here loops, so the limit is only headroom: 30 s was too little for
    # exercise 10.1 on a 16-core machine running 15 pytest processes at once.
    scores = grade(list(planted), modules, Limits(timeout=60))
    problems = []
    for score in scores:
        name = planted[score.exercise]
        messages = "\n".join(
            [score.problem, *(t.message for t in score.tests if t.outcome == "failed")]
        )
        if score.earned:
            problems.append(f"{score.exercise.id} {name!r}: earned {score.earned:g} points")
        elif ATTACKS[name][1] not in messages:
            problems.append(
                f"{score.exercise.id} {name!r}: no message says {ATTACKS[name][1]!r}; "
                f"they say:\n{messages[:1200]}"
            )
    assert not problems, "\n\n".join(problems)


# A patch put back before the test ends, where the guard, which compares after each test,
# cannot see it: a generator's `finally` runs when the grader drops the tensor that holds
# the generator. Before the graders checked torch's names as graded code returns and as
# they decide (support.refuse_torch_swaps), the first earned exercise 8.2 a test.
PATCH_FOR_A_WHILE = """
_owner = {owner}
_real = {{_n: _get(_owner, _n) for _n in {names}}}


def _while_held():
    for _n in _real:
        _b.setattr(_owner, _n, {stand_in})
    try:
        yield
    finally:
        for _n, _f in _real.items():
            _b.setattr(_owner, _n, _f)

"""
# Exercise 8.2's two functions, each returning a tensor that keeps `_while_held` open
# until the grader drops it.
HOLD_WITH_THE_RESULT = """
def _held(value):
    window = _while_held()
    next(window)
    value._window = window
    return value


def per_channel_scales(weight):
    return _held(weight.abs().amax(dim=1) / 127)


def quantize_per_channel(weight):
    return _held(weight.to(_sys.modules["torch"].int8)), per_channel_scales(weight)
"""
# name -> (what is patched, and with what; what the report must name)
PATCHED_FOR_A_WHILE = {
    "torch's comparisons": (
        dict(
            owner='_sys.modules["torch"]',
            names='("equal", "allclose")',
            stand_in="lambda *args, **kwargs: True",
        ),
        "replaced torch.allclose, torch.equal",
    ),
    # Exercise 8.2 decides one test with `(error <= scales / 2).all()`. (This one earned
    # nothing before the checks either: the guard saw it after the first test.)
    "a tensor method that hides torch's": (
        dict(
            owner='_sys.modules["torch"].Tensor',
            names='("all",)',
            stand_in='lambda self, *args: _sys.modules["torch"].tensor(True)',
        ),
        "torch.Tensor.all",
    ),
}


@pytest.mark.parametrize("name", PATCHED_FOR_A_WHILE)
def test_a_patch_put_back_before_the_test_ends_earns_nothing(name):
    fields, words = PATCHED_FOR_A_WHILE[name]
    code = PATCH_FOR_A_WHILE.format(**fields) + HOLD_WITH_THE_RESULT
    assert_stub_earns_nothing_with(code, words)


# Three more ways to make torch's comparisons answer True, each held as the patches
# above are, from a generator that the returned tensor keeps. Each case fills this
# template with its module-level setup and the body of its `_while_held`.
HELD_FOR_A_WHILE = """
_torch = _sys.modules["torch"]
_C = _get(_torch, "_C")
{setup}

def _while_held():
{hold}

"""
# name (with what a stub earned through it before the check that stops it)
# -> (module-level setup, the body of `_while_held`, words the report must show)
HELD = {
    # Made with `type`, so that no `__torch_function__` appears for the judge's scan.
    "a TorchFunctionMode (3.3 points)": (
        """
def _answer(self, func, types, args=(), kwargs=None):
    name = _get(func, "__name__", "")
    if name in ("equal", "allclose"):
        return True
    return _torch.tensor(True) if name == "all" else func(*args, **(kwargs or {}))


_Yes = _b.type("_Yes", (_torch.overrides.TorchFunctionMode,), {"__torch_" + "function__": _answer})
""",
        """    mode = _Yes()
    _get(mode, "__enter__")()
    try:
        yield
    finally:
        _get(mode, "__exit__")(None, None, None)""",
        # The grader's comparison sees the mode (support's "torch's function mode stack"),
        # and so does the guard after the test ("torch's function and dispatch modes") while
        # the failed test's traceback still holds the tensor: which report comes first
        # depends on when the garbage collector frees that traceback.
        "(a mode left active)",
    ),
    # torch.library's own Library reads the caller's frame, which the sandbox refuses.
    "kernels of its own for aten::equal and aten::allclose (7.1 points)": (
        "",
        """    library = _get(_C, "_dispatch_library")("IMPL", "aten", "", "x.py", 1)
    _get(library, "impl")("equal", "CPU", lambda *args: True, False)
    _get(library, "impl")("allclose", "CPU", lambda *args, **kwargs: True, False)
    try:
        yield
    finally:
        _get(library, "reset")()""",
        "graded code may not register kernels with torch's dispatcher",
    ),
    "Python kernels, through the Python dispatcher (0.7 points)": (
        "",
        """    for name in ("equal", "allclose"):
        operator = _get(_torch.ops.aten, name).default
        _get(operator, "py_impl")(_C.DispatchKey.CPU)(lambda *args, **kwargs: True)
    python_dispatcher = _get(_C, "_EnablePythonDispatcher")()
    try:
        yield
    finally:
        del python_dispatcher""",
        "the dispatch keys this thread includes",
    ),
    # What a grader decides with besides torch: graded code rebinds a name in the grader's
    # own module, whose dict Python does not audit; the guard counts the writes to it.
    "the grader's own helpers and a builtin (3.3 points)": (
        "",
        """    (grader,) = [
        _b.vars(module)
        for name, module in _b.list(_sys.modules.items())
        if name.endswith("test_ex8_2_" + "per_channel")
    ]
    fakes = {
        "tensors_equal": lambda *args, **kwargs: True,
        "tensors_close": lambda *args, **kwargs: True,
        "bool": lambda value=False: True,
    }
    real = {name: grader.get(name) for name in fakes}
    grader.update(fakes)
    try:
        yield
    finally:
        for name, value in real.items():
            if value is None:
                grader.pop(name, None)
            else:
                grader[name] = value""",
        "a name of tests.graders.test_ex8_2_per_channel (perhaps put back since)",
    ),
}


@pytest.mark.parametrize("name", HELD)
def test_what_graders_decide_with_made_to_answer_for_a_while_earns_nothing(name):
    setup, hold, words = HELD[name]
    code = HELD_FOR_A_WHILE.format(setup=setup, hold=hold) + HOLD_WITH_THE_RESULT
    assert_stub_earns_nothing_with(code, words)


# `pytest.fail`, through which most graders fail a test, made to return the next time a
# grader calls it, and put back by that call: exercise 0.1's grader calls it after each
# call of graded code, so nothing is left changed when a test ends. Before the guard
# counted the writes to pytest's dict, this earned all 10 points.
FAIL_ONCE = """
_names = _b.vars(_sys.modules["pytest"])
_real_fail = _names["fail"]


def _fail_once(*args, **kwargs):
    _names["fail"] = _real_fail


def check_capture(program, inputs, concrete_args=None):
    _names["fail"] = _fail_once


def opcode_counts(gm):
    _names["fail"] = _fail_once
"""


def test_pytest_fail_made_to_return_once_earns_nothing():
    words = "a name of pytest (perhaps put back since)"
    assert_stub_earns_nothing_with(FAIL_ONCE, words, exercise_id="0.1")


# Native code opens files without an audit event, so the sandbox never sees it; the kernel
# does (tests/grading/landlock.py). torch.from_file maps a file into a tensor: shared, so
# that writing the tensor writes the file.
NO_LANDLOCK = "this kernel offers no Landlock (Linux 5.13 or later, turned on)"
needs_landlock = pytest.mark.skipif(
    not sys.platform.startswith("linux") or landlock_abi() < 1, reason=NO_LANDLOCK
)
FROM_FILE = """
_torch = _sys.modules["torch"]
_os = _sys.modules["os"]


def _read(path):
    size = _os.path.getsize(path)
    return _b.bytes(_get(_torch, "from_file")(path, shared=False, size=size, dtype=_torch.uint8).tolist())
"""
# Appended to the fork server's support.py, which every later worker imports as pytest
# collects, before its sandbox is armed: graded with exercise 0.1's attacked stub first,
# the untouched stub of 1.2 earned all its 10 points this way.
REWRITE_SUPPORT = (
    FROM_FILE
    + """
_FORGE = (
    b"\\nimport gc\\n"
    b"for _o in gc.get_objects():\\n"
    b"    if type(_o).__name__ == 'GradingPlugin':\\n"
    b"        _send = _o.reporter.send\\n"
    b"        _o.reporter.send = lambda kind, _send=_send, **f: _send(\\n"
    b"            kind, **({**f, 'outcome': 'passed', 'message': ''} if kind == 'result' else f))\\n"
)
_path = _sys.modules["tests.graders.support"].__file__
_new = _read(_path) + _FORGE
_mapped = _get(_torch, "from_file")(_path, shared=True, size=_b.len(_new), dtype=_torch.uint8)
_mapped.copy_(_torch.frombuffer(_b.bytearray(_new), dtype=_torch.uint8))
"""
)
# The reference solution, read from the judge's copy (the instructor's repository) and
# run in the exercise's module: 3.1's stub earned all 10 points this way.
READ_THE_SOLUTION = (
    FROM_FILE
    + """
_path = _os.path.join(_os.environ["MINIFX_GRADING_SOURCE"], "solutions", "ch3_method_relu.py")
_get(_b, "ex" + "ec")(_read(_path), _b.vars(_sys.modules[__name__]))
"""
)


@needs_landlock
def test_a_grading_file_rewritten_by_native_code_changes_no_later_grade():
    assert not findings(PRELUDE + REWRITE_SUPPORT)
    attacker, later = [e for e in EXERCISES if e.id in ("0.1", "1.2")]
    modules = {e.module: (ROOT / "exercises" / f"{e.module}.py").read_bytes() for e in EXERCISES}
    modules[attacker.module] += ("\n" + PRELUDE + REWRITE_SUPPORT).encode()
    scores = grade([attacker, later], modules, Limits(timeout=60, jobs=1))  # 0.1 first
    assert [score.earned for score in scores] == [0, 0]
    assert "Permission denied" in "\n".join(t.message for t in scores[0].tests)


@needs_landlock
def test_a_solution_read_by_native_code_earns_nothing():
    assert_stub_earns_nothing_with(READ_THE_SOLUTION, "Permission denied", exercise_id="3.1")


# Round seven, too: memory in files that live in memory only (`os.memfd_create`, which
# Python does not audit), written with `os.write`: no process's resident size counts it,
# and a worker held 2 GiB under a limit of 0.5 GiB (with more such files, all the
# machine's memory). The judge now counts what a worker's memory files hold.
MEMORY_FILES = """
import os as _os
import time as _time
_chunk = b"1" * 2**26
_held = []
for _i in range(6):  # 6 files of 256 MiB
    _held.append(_os.memfd_create(f"held{_i}"))
    for _j in range(4):
        _os.write(_held[-1], _chunk)
_time.sleep(30)  # held while the judge measures
"""


def test_memory_held_in_memory_files_counts_against_the_limit():
    assert not findings(MEMORY_FILES)
    (exercise,) = [e for e in EXERCISES if e.id == "3.1"]
    stub = (ROOT / "exercises" / f"{exercise.module}.py").read_bytes()
    modules = {exercise.module: stub + MEMORY_FILES.encode()}
    (score,) = grade([exercise], modules, Limits(timeout=60, memory=2**30))
    assert not score.earned
    assert "used more than 1 GiB of memory" in score.problem, score.problem


# Round seven: the folders of other gradings on the machine, beside the worker's in the
# temporary folder. Only the worker's own run was hidden; a fork server's staged minifx
# (the build tasks' solutions, when the server is the exercises') and another run's
# staged exercises (another student's answers) were not: 3.1's stub earned all 10 points
# by running another run's answer, and a build task its 5 from the solved minifx.
READ_ANOTHER_GRADING = (
    FROM_FILE
    + """
_path = _os.environ["MINIFX_TEST_OTHER_ANSWER"]
_get(_b, "ex" + "ec")(_read(_path), _b.vars(_sys.modules[__name__]))
"""
)


@needs_landlock
@pytest.mark.needs_solutions  # the answer it plants is the solution
@pytest.mark.parametrize("kind", GRADING_FOLDERS)
def test_another_grading_s_folder_is_out_of_reach(kind, monkeypatch):
    other = Path(tempfile.mkdtemp(prefix=kind))  # named as the judge names its folders
    try:
        answer = other / "stage-1" / "exercises" / "ch3_method_relu.py"
        answer.parent.mkdir(parents=True)
        shutil.copy(ROOT / "solutions" / "ch3_method_relu.py", answer)
        monkeypatch.setenv("MINIFX_TEST_OTHER_ANSWER", str(answer))  # the worker's too
        assert_stub_earns_nothing_with(READ_ANOTHER_GRADING, "Permission denied", "3.1")
    finally:
        shutil.rmtree(other)


# Round six: files written by torch's native writer (no audit event) into the worker's
# scratch folder, its only writable place. Each file is capped at 256 MiB, their number
# was not: one worker could fill the disk that the judge and the other workers stage their
# folders on. The judge now measures the scratch folder as the worker runs.
FILL_THE_DISK = """
_torch, _os, _time = _sys.modules["torch"], _sys.modules["os"], _sys.modules["time"]
_blob = _b.bytes(16 * 2**20)
for _i in _b.range(24):
    _file = _os.path.join(_os.environ["TMPDIR"], f"fill{_i}")
    _writer = _get(_torch._C, "PyTorchFileWriter")(_file)
    _writer.write_record("x", _blob, _b.len(_blob))
    _writer.write_end_of_file()
    _time.sleep(0.1)
"""


def test_files_written_past_the_disk_limit_stop_the_exercise():
    assert not findings(PRELUDE + FILL_THE_DISK)
    (exercise,) = [e for e in EXERCISES if e.id == "3.2"]
    stub = (ROOT / "exercises" / f"{exercise.module}.py").read_text(encoding="utf-8")
    attacked = (stub + "\n" + PRELUDE + FILL_THE_DISK).encode()
    limits = Limits(timeout=60, disk=64 * 1024**2)
    (score,) = grade([exercise], {exercise.module: attacked}, limits)
    assert not score.earned
    assert score.problem.startswith("wrote more than 0.0625 GiB of files"), score.problem


# Round four: registries that change what every module call or deepcopy does, filled in place
# (the names' check sees the same dict), and a GraphModule that runs code other than its
# graph's. Each is appended to exercise 6.1's solution; without its check, each earned 10.
WITH_THE_SOLUTION = {
    "a global forward hook that zeroes every output": (
        """
_hooks = _get(_sys.modules["torch.nn.modules.module"], "_global_forward_hooks")
_hooks.update({-1: lambda module, args, output: output * 0})
""",
        "an entry of torch.nn.modules.module._global_forward_hooks (perhaps put back since)",
    ),
    "a deepcopy that shares tensors": (
        """
_table = _get(_sys.modules["copy"], "_deepcopy_dispatch")
_table.update({_sys.modules["torch"].Tensor: lambda value, memo: value})
""",
        "an entry of copy._deepcopy_dispatch (perhaps put back since)",
    ),
    "a forward of its own": (
        """
_fuse = fuse_linear_bn


def fuse_linear_bn(gm):
    gm = _fuse(gm)
    gm.forward = gm.forward
    return gm
""",
        "a GraphModule that runs the code generated from its graph",
    ),
    # Round five: a Linear of its own class, whose forward could run anything.
    "a Linear subclass of its own": (
        """
_fused_linear = fused_linear


class _Mine(_sys.modules["torch"].nn.Linear):
    pass


def fused_linear(linear, bn):
    fused = _fused_linear(linear, bn)
    mine = _Mine(fused.in_features, fused.out_features)
    mine.load_state_dict(fused.state_dict())
    return mine
""",
        "torch's own class, not a subclass",
    ),
}


@pytest.mark.parametrize("name", WITH_THE_SOLUTION)
def test_the_solution_with_a_registry_filled_or_its_forward_replaced_earns_nothing(name):
    code, words = WITH_THE_SOLUTION[name]
    score, messages = graded_with(code, "6.1", "solutions")
    passed = [t.nodeid for t in score.tests if t.outcome == "passed"]
    if name == "a forward of its own":  # fused_linear's own tests take no GraphModule
        passed = [nodeid for nodeid in passed if "::test_fused_linear[" not in nodeid]
    assert not passed, passed
    assert words in messages, messages[:1500]


def test_the_original_behind_a_grader_s_recording_wrapper_is_out_of_reach():
    """Exercise 6.1's grader records calls of torch's fusion helpers through wrappers; the
    original kept at `__wrapped__` (functools.wraps) did the work unrecorded: 10 points."""
    (finding,) = findings(
        "import torch\ntool = torch.nn.utils.fusion.fuse_linear_bn_weights\n"
        "work = tool.__wrapped__\n"
    )
    assert finding.startswith("line 3: `.__wrapped__`: it reaches into the running interpreter")


def assert_stub_earns_nothing_with(code: str, words: str, exercise_id: str = "8.2") -> None:
    """The exercise's stub, with `code` after it, passes the judge's scan, earns nothing,
    and its report says `words`."""
    score, messages = graded_with(code, exercise_id, "exercises")
    assert not score.earned, f"earned {score.earned:g} points"
    assert words in messages, messages[:1500]


def graded_with(code: str, exercise_id: str, folder: str):
    """(the score, every message of its report) of the exercise's module in `folder` (the
    stub in `exercises`, the answer in `solutions`) with PRELUDE and `code` after it, once
    `code` is shown to pass the judge's scan."""
    assert not findings(PRELUDE + code)
    (exercise,) = [e for e in EXERCISES if e.id == exercise_id]
    module = (ROOT / folder / f"{exercise.module}.py").read_text(encoding="utf-8")
    attacked = (module + "\n" + PRELUDE + code).encode()
    (score,) = grade([exercise], {exercise.module: attacked}, Limits(timeout=60))
    return score, "\n".join([score.problem, *(t.message for t in score.tests)])


# --- the build track ----------------------------------------------------------------
# A build task's graded code is the submission's minifx task files, imported while pytest
# collects the tests (before the sandbox is armed), and trusted outside the task regions.


def held_while_answered(setup: str, swap: str, put_back: str) -> str:
    """Task 6.1's function, answering zeros, with `swap` made while its answer is held:
    from the call until the stage test drops the last answer (the generator kept on the
    weight is closed with it), when `put_back` undoes it before the guard looks."""
    template = """
def fuse_conv_bn_weights(conv_weight, conv_bias, bn_mean, bn_var, bn_eps, bn_weight, bn_bias):
    SETUP

    def held():
        SWAP
        state["n"] += 1
        try:
            yield
        finally:
            state["n"] -= 1
            if not state["n"]:
                PUT_BACK

    window = held()
    next(window)
    weight = nn.Parameter(torch.zeros_like(conv_weight))
    weight.window = window
    return weight, nn.Parameter(torch.zeros_like(bn_mean))
"""
    for placeholder, code, indent in (
        ("SETUP", setup, 4),
        ("SWAP", swap, 8),
        ("PUT_BACK", put_back, 16),
    ):
        template = template.replace(placeholder, code.replace("\n", "\n" + " " * indent))
    return template


# Forges the report the way `_forge` above does, once it has found the worker's objects.
FORGE_FROM_GC = """
    for _o in _sys.modules["g" + "c"].get_objects():
        if type(_o).__name__ == "GradingPlugin":
            _send = _o.reporter.send

            def _passed(kind, _send=_send, **fields):
                if kind == "result":
                    fields.update(outcome="passed", message="")
                _send(kind, **fields)

            _o.reporter.send = _passed
"""
# Markers that only the worker read as markers: an end marker with words after it, and a
# start marker behind a no-break space in a docstring. The checks of task files saw one
# region, the worker two, and `_forge`, between them, passed for minifx's own code
# (twelfth round: task 1.1's stub, 5 points).
MARKERS_READ_TWO_WAYS = (
    """
    def create_node(self, *args, **kwargs):
        self._forge()
        raise NotImplementedError("not written")

    # --8<-- [end-task:1.1] (where the worker's region ended)
    def _forge(self):
        import sys as _sys
"""
    + textwrap.indent(FORGE_FROM_GC, "    ")
    + '''
    def _pad(self):
        """
\u00a0# --8<-- [task:1.1]
        """
'''
)
# name -> (task file, code put just before the end marker of its first region, the task
# graded, words its report must show). Each task file starts carved, as a release has it.
BUILD_ATTACKS = {
    # Thirteenth round: minifx's `user_location` handed the frame it read to `_user_frame`,
    # looked up by name; swapped for a moment, it handed the frame to a task region, which
    # walked up to the worker's state (task 1.1's stub, 5 points). minifx now hands frames
    # to no function, and the guard counts the writes to minifx's modules in a build task.
    "a frame from minifx, through a name swapped for a moment": (
        "minifx/proxy/tape.py",
        """
    def create_node(self, *args, **kwargs):
        import sys as _sys
"""
        + textwrap.indent(FORGE, " " * 8)
        + """
        errors = _sys.modules["minifx.proxy.errors"]
        held, swapped = [], {}
        for name in ("_user" + "_frame", "is_library_code"):  # what user_location calls
            if hasattr(errors, name):
                swapped[name] = getattr(errors, name)
                setattr(errors, name, held.append)
        try:
            errors.user_location()
        finally:
            for name, before in swapped.items():
                setattr(errors, name, before)
        frames = [value for value in held if type(value).__name__ == "frame"]
        frame = frames[0] if frames else None
        while frame is not None:
            for value in getattr(frame, "f_" + "locals").values():
                if type(value).__name__ == "GradingPlugin":
                    _forge(value)
            frame = getattr(frame, "f_" + "back")
        raise NotImplementedError("not written")
""",
        "1.1",
        "replaced a name of minifx.proxy.errors",
    ),
    "markers that only the worker read as markers": (
        "minifx/proxy/tape.py",
        MARKERS_READ_TWO_WAYS,
        "1.1",
        "looks like a task marker and is not one",
    ),
    # Round eleven: the worker takes `torch._C._dispatch_library` away once pytest has
    # collected, after the task files were imported; held as a default, it registered an
    # `aten::isclose` kernel that answered True everywhere (task 6.1's zeros: all 5 points).
    "the dispatcher kept in a default": (
        "minifx/passes/fuse_conv_bn.py",
        "def _kept(library=torch._C._dispatch_library):\n    return library\n",
        "6.1",
        "`torch._C._dispatch_library` in the definition of `_kept` runs code, or reads a "
        "private name, when the file is imported",
    ),
    "module-level code in a task region": (
        "minifx/passes/fuse_conv_bn.py",
        "import sys as _sys\nif True:" + FORGE_FROM_GC,
        "6.1",
        "`import sys as _sys` runs when the file is imported",
    ),
    "a later stage's file, imported by every task's worker": (
        "minifx/passes/fuse_conv_bn.py",
        "import sys as _sys\nif True:" + FORGE_FROM_GC,
        "1.1",
        "NotImplementedError: Task 1.1 (",  # graded as the carved stub it is
    ),
    "a decorator of the student's, run on import": (
        "minifx/passes/fuse_conv_bn.py",
        "def _decorate(function):\n    return function\n\n\n@_decorate\ndef _helper():\n    pass\n",
        "6.1",
        "the decorator `@_decorate` is not one the reference uses",
    ),
    "a special method that runs when a subclass is made": (
        "minifx/graph/graph.py",
        "    def __init_subclass__(cls):\n        pass\n",
        "2.3",
        "`__init_subclass__` is a special method that the reference does not define here",
    ),
    "a code object that claims a line outside the regions": (
        "minifx/proxy/tape.py",
        """
    def create_node(self, *args, **kwargs):
        def _inspect():
            import sys as _sys
            if True:"""
        + FORGE_FROM_GC.replace("\n    ", "\n                ")
        + """

        # (The name built: the regions' rule refuses assigning `__code__` as written.)
        setattr(_inspect, "__co" + "de__", _inspect.__code__.replace(co_firstlineno=1))
        _inspect()
        raise NotImplementedError("not written")
""",
        "1.1",
        "make or run code that claims to be",
    ),
    # torch's file opener reads any path for its caller; the solved minifx was in the
    # build tasks' fork server's folder and in the judge's (on Gradescope, the autograder's).
    "the solution read through torch and run": (
        "minifx/proxy/tape.py",
        """
    def create_node(self, op, target, args=(), kwargs=None, name=None, type_expr=None):
        import os
        import sys
        from pathlib import Path

        here = Path(sys.modules[__name__].__file__).resolve()
        places = [*here.parents[3].iterdir(), Path(os.environ.get("MINIFX_GRADING_SOURCE", "."))]
        for place in places:
            found = place / "minifx" / "proxy" / "tape.py"
            if found != here and found.is_file():
                with torch.serialization._open_file(str(found), "rb") as handle:
                    source = handle.read()
                solved = {"__name__": __name__, "__package__": "minifx.proxy"}
                exec(compile(source, "<solved>", "exec"), solved)
                solved["Record"] = Record
                return solved["Tape"].create_node(self, op, target, args, kwargs, name, type_expr)
        raise NotImplementedError("no solution found")
""",
        "1.1",
        "which is the grading's, whoever opens it",
    ),
    "assert_close's tolerance widened, by a task that may read signatures": (
        "minifx/passes/fuse_conv_bn.py",
        """
def fuse_conv_bn_weights(conv_weight, conv_bias, bn_mean, bn_var, bn_eps, bn_weight, bn_bias):
    import torch.testing

    torch.testing.assert_close.__kwdefaults__.update(rtol=1e9, atol=1e9)
    zeros = torch.zeros_like
    return nn.Parameter(zeros(conv_weight)), nn.Parameter(zeros(bn_mean))
""",
        "6.1",
        "the keyword defaults of torch.testing._comparison.assert_close",
    ),
    # Round six: the stage test calls the task, then torch's own fusion (a name of the
    # test's module) for what it expects. That name, swapped for one call for a function
    # that returns the task's answer again and put back by that call, was as it was when
    # the test ended: zeros earned all 5 points, before the guard counted the writes to
    # the stage tests' modules.
    "a stage test's name swapped for one call, and put back by it": (
        "minifx/passes/fuse_conv_bn.py",
        """
def fuse_conv_bn_weights(conv_weight, conv_bias, bn_mean, bn_var, bn_eps, bn_weight, bn_bias):
    import sys

    tests = sys.modules["tests.passes.test_fuse_conv_bn"]
    real = tests.torch_fuse_conv_bn_weights
    answer = nn.Parameter(torch.zeros_like(conv_weight)), nn.Parameter(torch.zeros_like(bn_mean))

    def once(*args):
        tests.torch_fuse_conv_bn_weights = real
        return answer

    tests.torch_fuse_conv_bn_weights = once
    return answer
""",
        "6.1",
        "a name of tests.passes.test_fuse_conv_bn (perhaps put back since)",
    ),
    # Round eight: the stage tests compare with torch directly (`torch.testing.assert_close`
    # decides with `torch.isclose`), where the graders check torch's names as they compare.
    # `torch.isclose` made to answer True for as long as the task's answer is held, and put
    # back as the test drops it: zeros earned all 5 points, before the guard counted the
    # writes to torch's own module for a build task.
    "torch.isclose swapped while the answer is held": (
        "minifx/passes/fuse_conv_bn.py",
        held_while_answered(
            setup='state = vars(torch).setdefault("_held", {"n": 0, "real": torch.isclose})',
            swap="torch.isclose = lambda a, b, **kwargs: torch.ones_like(a, dtype=torch.bool)",
            put_back='torch.isclose = state["real"]\ndel torch._held',
        ),
        "6.1",
        "a name of torch (perhaps put back since)",
    ),
    # Round nine: `if torch.all(matches)` in assert_close asks `Tensor.__bool__`, a method
    # of a class (whose dict no count watched), made to answer True for as long as the
    # task's answer is held: zeros earned all 5 points.
    "Tensor.__bool__ swapped while the answer is held": (
        "minifx/passes/fuse_conv_bn.py",
        held_while_answered(
            # The name is built: the regions' rule refuses `__bool__` as written.
            setup='tensor, name = torch.Tensor, "__bo" + "ol__"\n'
            'state = tensor.__dict__.get("_held") or {"n": 0}\ntensor._held = state',
            swap="setattr(tensor, name, lambda self: True)",
            put_back="delattr(tensor, name)\ndel tensor._held",
        ),
        "6.1",
        "an attribute of torch._tensor.Tensor (perhaps put back since)",
    ),
    # Round nine: an `nn.Parameter` subclass, made inside the task's function, whose
    # `__torch_function__` answers `torch.isclose` with True (the graders check types; the
    # stage tests compare with torch directly): zeros earned all 5 points.
    "a Parameter subclass that answers torch.isclose": (
        "minifx/passes/fuse_conv_bn.py",
        """
def fuse_conv_bn_weights(conv_weight, conv_bias, bn_mean, bn_var, bn_eps, bn_weight, bn_bias):
    def answer(cls, func, types, args=(), kwargs=None):
        if func is torch.isclose:
            return torch.ones(args[0].shape, dtype=torch.bool)
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))

    class Fused(nn.Parameter):
        pass

    # Set by a name built from strings, which no reading of the source sees.
    setattr(Fused, "__torch_" + "function__", classmethod(answer))
    return Fused(torch.zeros_like(conv_weight)), Fused(torch.zeros_like(bn_mean))
""",
        "6.1",
        "define a subclass of torch.Tensor (fuse_conv_bn_weights.<locals>.Fused)",
    ),
}


def _carved_package(trusted: dict[str, bytes]) -> dict[str, bytes]:
    """Every task file of minifx with every task carved out, as a student release has it."""
    from tests import tasks
    from tests.grading import build

    found = tasks.find_tasks({p: data for p, data in trusted.items() if p.startswith("minifx/")})
    return {
        path: tasks.carve_source(path, trusted[path].decode(), found).encode()
        for path in build.task_files(trusted)
    }


@pytest.mark.parametrize("name", BUILD_ATTACKS)
def test_task_code_that_runs_on_import_or_claims_the_reference_s_lines_earns_nothing(name):
    from tests.grading import build, judge

    path, code, task, words = BUILD_ATTACKS[name]
    trusted = judge.snapshot()
    package = _carved_package(trusted)
    text = package[path].decode()
    end = next(line for line in text.splitlines() if "--8<-- [end-task:" in line)
    package[path] = text.replace(end, code + "\n" + end, 1).encode()
    (entry,) = [e for e in build.load_tasks(trusted) if e.id == task]
    (score,) = judge.grade([entry], {}, Limits(timeout=60), trusted, package)
    messages = "\n".join([score.problem, *(t.message for t in score.tests)])
    assert not score.earned, f"{name!r} earned {score.earned:g} points"
    assert words in messages, messages[:1500]


def test_a_frame_callback_that_a_grader_s_call_installs_earns_nothing():
    """Thirteenth round: a `functools.partial` of the stand-in for `set_eval_frame`, set
    as `GraphCounter.__init__`, which 9.1's grader calls with no graded frame on the stack
    (10 points): only TorchDynamo's own code may install a callback."""
    (exercise,) = [e for e in EXERCISES if e.id == "9.1"]
    attack = (
        PRELUDE
        + DYNAMO_CALLBACK
        + """
_hooks = _get(_sys.modules["torch"]._C._dynamo, "eval_frame")
_b.setattr(GraphCounter, "__in" + "it__", _sys.modules["functools"].partial(_hooks.set_eval_frame, _callback))
"""
    )
    module = _stub(exercise) + attack
    assert not findings(module), findings(module)
    (score,) = grade([exercise], {exercise.module: module.encode()}, Limits(timeout=60))
    messages = "\n".join([score.problem, *(t.message for t in score.tests)])
    assert not score.earned, f"earned {score.earned:g} points"
    assert "install a frame callback of TorchDynamo's" in messages, messages[:1500]


def test_the_worker_reads_the_task_regions_that_the_checks_read(tmp_path):
    """Behind the checks' refusal of false markers: the worker's sandbox reads the same
    regions as they do, from the same patterns."""
    from tests.grading import build, judge, worker

    text = _carved_package(judge.snapshot())["minifx/proxy/tape.py"].decode()
    end = next(line for line in text.splitlines() if "--8<-- [end-task:" in line)
    text = text.replace(end, MARKERS_READ_TWO_WAYS + "\n" + end, 1)
    (tmp_path / "tape.py").write_text(text, encoding="utf-8")
    assert worker.task_regions(tmp_path / "tape.py") == build.region_spans(text)


# Round nine: the stage test compares `calculate_qparams()` and `quant_range` with tuples
# by `==`; an object of a class made inside them, whose `__eq__` answers True, earned all
# 5 points of task 8.1 (with a forward that records the range), before the regions were
# held to the exercises' rule on special methods. Planted in the file's last region (the
# class body's second), so that these definitions come after the carved stubs.
SAME_AS_ANYTHING = """
    def forward(self, x):
        self.min_val.copy_(torch.minimum(self.min_val, x.detach().min()))
        self.max_val.copy_(torch.maximum(self.max_val, x.detach().max()))
        return x

    @property
    def quant_range(self):
        class Same:
            def __eq__(self, other):
                return True

        return Same()

    def calculate_qparams(self):
        return self.quant_range
"""


def test_an_object_that_equals_anything_made_in_a_task_region_earns_nothing():
    from tests.grading import build, judge

    trusted = judge.snapshot()
    package = _carved_package(trusted)
    path = "minifx/passes/observers.py"
    text = package[path].decode()
    end = "    # --8<-- [end-task:8.1]"
    at = text.rindex(end)
    package[path] = (text[:at] + SAME_AS_ANYTHING + "\n" + text[at:]).encode()
    (entry,) = [e for e in build.load_tasks(trusted) if e.id == "8.1"]
    (score,) = judge.grade([entry], {}, Limits(timeout=60), trusted, package)
    messages = "\n".join([score.problem, *(t.message for t in score.tests)])
    assert not score.earned, f"earned {score.earned:g} points"
    assert "`Same.__eq__`: an object of graded code may not choose how it compares" in messages


def test_a_task_file_missing_from_the_submission_is_staged_carved_not_solved():
    """The trusted task files are the solutions: a worker never gets one to read."""
    from tests.grading import build, judge

    trusted = judge.snapshot()
    solved = trusted["minifx/passes/fuse_conv_bn.py"].decode()
    line = "    scale = gamma * torch.rsqrt(bn_var + bn_eps)  # one factor per output channel"
    assert line in solved
    path = "minifx/proxy/tape.py"
    # Stage 1's files only: the later stages' are missing.
    package = {p: data for p, data in _carved_package(trusted).items() if build.stage_of(p) == 0}
    reader = (
        "        import minifx.passes.fuse_conv_bn as _fused\n"
        "        raise ValueError(open(_fused.__file__).read().replace('\\n', '|'))\n"
    )
    text = package[path].decode()
    marker = "        raise NotImplementedError("
    package[path] = text.replace(marker, reader + marker, 1).encode()
    (entry,) = [e for e in build.load_tasks(trusted) if e.id == "1.1"]
    (score,) = judge.grade([entry], {}, Limits(timeout=60), trusted, package)
    messages = "\n".join([score.problem, *(t.message for t in score.tests)])
    assert "fuse_conv_bn_weights" in messages, messages[:1500]  # the file was read ...
    assert "torch.rsqrt" not in messages  # ... and it was the carved one


def test_a_message_that_no_utf_8_output_can_print_still_gives_the_report():
    """A lone surrogate in graded code's error message once made printing the report fail,
    so that no exercise got a grade and no results.json was written."""
    import json

    from tests.grading import report

    exercise = EXERCISES[0]
    stub = (ROOT / "exercises" / f"{exercise.module}.py").read_text(encoding="utf-8")
    planted = stub + '\nraise ValueError("half a character: \\ud800")\n'
    (score,) = grade([exercise], {exercise.module: planted.encode()}, Limits(timeout=30))
    assert not score.earned and "half a character: ?" in score.tests[0].message
    report.render([score], "exercises/", "a test").encode("utf-8")  # strict: must not raise
    json.dumps(report.gradescope([score]), ensure_ascii=False).encode("utf-8")


# Exercise 7.2 says "write the matcher by hand": this find_chains is minifx's matcher all the
# same, its `match` rebuilt from the private methods, every name built from strings so that
# the grader's reading of the source finds none. It passed 25 of 26 tests before the grader
# refused every method of the matchers, not only `match`.
PRIVATE_MATCHER = """
import minifx.passes.matcher as _m
from minifx.codegen import symbolic_trace as _trace

_Found = getattr(_m, "Subgraph" + "Matcher")


def _pattern(targets):
    def pattern(x):
        for target in targets:
            x = target(x)
        return x

    return _trace(pattern).graph


def find_chains(graph, targets):
    finder = _Found(_pattern(targets))
    candidates = [[n for n in graph.nodes if finder._nodes_are_equal(a, n)] for a in finder.anchors]
    found = []
    finder._backtrack(0, candidates, getattr(_m, "Internal" + "Match")(finder.anchors), found)
    kept = [m for m in found if finder._is_contained(m.nodes_map)]
    order = [n for n in finder.pattern.nodes if n.op == "call_function"]
    return [[m.nodes_map[p] for p in order] for m in finder._remove_overlaps(kept)]
"""


def test_a_matcher_called_by_its_private_names_is_delegation_all_the_same():
    (exercise,) = [e for e in EXERCISES if e.id == "7.2"]
    stub = (ROOT / "exercises" / f"{exercise.module}.py").read_text(encoding="utf-8")
    assert not findings(stub + PRIVATE_MATCHER)
    planted = {exercise.module: (stub + PRIVATE_MATCHER).encode()}
    (score,) = grade([exercise], planted, Limits(timeout=60))
    assert score.tests and not score.passed, [
        t.nodeid for t in score.tests if t.outcome == "passed"
    ]
    assert "your code uses SubgraphMatcher.__init__" in score.tests[0].message


def test_a_link_out_of_the_submission_hands_in_nothing(tmp_path):
    """On Gradescope the reference minifx is /autograder/source/minifx: a submission whose
    minifx/ was a link to it earned full marks on every build task."""
    from tests.grading import build, judge

    trusted = judge.snapshot()
    linked, real = tmp_path / "linked", tmp_path / "real"
    linked.mkdir()
    (linked / "minifx").symlink_to(ROOT / "minifx", target_is_directory=True)
    (linked / "exercises").symlink_to(ROOT / "exercises", target_is_directory=True)
    assert build.submitted_package(build.task_files(trusted), linked) == {}
    assert judge.submitted_modules(EXERCISES, linked) == {}
    shutil.copytree(ROOT / "minifx" / "proxy", real / "minifx" / "proxy")
    (real / "exercises").mkdir()
    (real / "exercises" / "ch1_proxy_failure.py").write_text("x = 1\n")
    assert "minifx/proxy/tape.py" in build.submitted_package(build.task_files(trusted), real)
    assert judge.submitted_modules(EXERCISES, real)["ch1_proxy_failure"] == b"x = 1\n"


# Objects that answer `==` with True, made where the scan does not look: a class built at
# run time by `type` under another name, and `unittest.mock.ANY`, which pytest and torch
# have loaded. Neither counts a FLOP: before the grader of 4.1 compared only a plain
# dict of ints, the first earned 10 points of 10 and the second 6.3.
ALWAYS_EQUAL = {
    "a class built by type(), under another name": """
_t = type


def _true(self, other=None):
    return True


def _false(self, other=None):
    return False


def _me(self, other=0):
    return self


_Any = _t("Any", (), {"__e" "q__": _true, "__ne__": _false, "__add__": _me, "__radd__": _me,
                      "values": lambda self: [self]})
""",
    "unittest.mock.ANY": """
import sys as _sys

_Any = lambda: _sys.modules["unittest.mock"].ANY  # noqa: E731
""",
}


@pytest.mark.parametrize("name", ALWAYS_EQUAL)
def test_an_object_equal_to_anything_counts_no_flops(name):
    (exercise,) = [e for e in EXERCISES if e.id == "4.1"]
    stub = (ROOT / "exercises" / f"{exercise.module}.py").read_text(encoding="utf-8")
    attack = ALWAYS_EQUAL[name] + (
        "\n\ndef _run_node(self, n):\n    self.flops_by_node = _Any()\n"
        "    return Interpreter.run_node(self, n)\n\n\nFlopCounter.run_node = _run_node\n"
    )
    assert not findings(stub + attack)
    (score,) = grade([exercise], {exercise.module: (stub + attack).encode()}, Limits(timeout=60))
    counting = [t for t in score.tests if "outputs_are_unchanged" not in t.nodeid]
    passed = [t.nodeid for t in counting if t.outcome == "passed"]
    assert passed == [f"{exercise.grader}::test_counts_flops_itself"], passed
    assert any("flops_by_node: a dict, node name (a str)" in t.message for t in counting)


# --- an object equal to anything, where any exercise's result goes ----------------------
# The same objects, richer: the class also answers `in`, ordering, `len`, iteration,
# indexing, any attribute and any call with itself or True, and every torch function
# (torch.equal, torch.allclose, ...) through `__torch_function__`, so that a grader that
# compares a value of graded code's without checking its type first would pass it.
LOOK_ALIKE = """
def _cls_answer(cls, func=None, types=(), args=(), kwargs=None):
    return True


# What str() and repr() of it return: a str that answers == with True.
_Text = _t("Text", (str,), {"__e" "q__": _true, "__ne__": _false, "__hash__": lambda self: 0})


def _text(self, spec=""):
    return _Text("Any")


_Any = _t("Any", (), {
    "__e" "q__": _true, "__ne__": _false, "__hash__": lambda self: 0,
    "__lt__": _false, "__gt__": _false, "__le__": _true, "__ge__": _true,
    "__add__": _me, "__radd__": _me, "__sub__": _me, "__rsub__": _me,
    "__mul__": _me, "__rmul__": _me, "__truediv__": _me, "__abs__": _me,
    "__bool__": _true, "__contains__": _true, "__len__": lambda self: 1,
    "__iter__": lambda self: iter([self]), "__getitem__": _me,
    "__getattr__": _me, "__call__": lambda self, *args, **kwargs: self,
    "__torch_" "function__": classmethod(_cls_answer),
    "__str__": _text, "__repr__": _text, "__format__": _text,
})
"""
# A Tensor that answers every torch function (torch.equal, allclose, .shape, ...) with itself,
# compares equal to anything and prints as a str equal to anything.
TENSOR_LOOK_ALIKE = """
import sys as _sys

_torch = _sys.modules["torch"]
_Same = []


def _same(cls, func=None, types=(), args=(), kwargs=None):
    return _Same[0]


_TAny = _t("TAny", (_torch.Tensor,), {
    "__e" "q__": _true, "__ne__": _false, "__hash__": lambda self: 0, "__bool__": _true,
    "__lt__": _false, "__gt__": _false, "__le__": _true, "__ge__": _true,
    "__str__": _text, "__repr__": _text, "__format__": _text,
    "__torch_" "function__": classmethod(_same),
})
_Same.append(_torch.Tensor._make_subclass(_TAny, _torch.zeros(1)))


def _Any():
    return _Same[0]
"""
# `unittest.mock.ANY` is not among them: the look-alike answers everything it answers and
# more, and each grader's checks are of exact types, so what refuses the look-alike refuses
# ANY too (4.1's test above still tries ANY itself). One object fewer is two fewer gradings
# of every exercise, about 35 s of `make test`.
EQUAL_TO_ANYTHING = {
    "a look-alike class built by type()": ALWAYS_EQUAL[
        "a class built by type(), under another name"
    ]
    + LOOK_ALIKE,
    "a Tensor subclass built by type()": ALWAYS_EQUAL["a class built by type(), under another name"]
    + LOOK_ALIKE
    + TENSOR_LOOK_ALIKE,
}


def _answers(stub: str, every_function: bool) -> str:
    """Code that makes the stub's functions return `_Any()`: its unwritten ones (those that
    raise NotImplementedError), or every function and method it defines."""

    def unwritten(function: ast.FunctionDef) -> bool:
        return any(
            isinstance(n, ast.Raise) and "NotImplementedError" in ast.unparse(n)
            for n in ast.walk(function)
        )

    lines = ["\n\ndef _answer(*args, **kwargs):\n    return _Any()\n"]
    for statement in ast.parse(stub).body:
        if isinstance(statement, ast.FunctionDef):
            if every_function or unwritten(statement):
                lines.append(f"{statement.name} = _answer")
        elif isinstance(statement, ast.ClassDef) and statement.bases:
            for method in statement.body:
                if not isinstance(method, ast.FunctionDef):
                    continue
                if not (every_function or unwritten(method)):
                    continue
                where = f"{statement.name}.{method.name}"
                if method.name == "__init__":
                    continue  # the object is built as the stub builds it
                if any(ast.unparse(d) == "property" for d in method.decorator_list):
                    lines.append(f"{where} = property(_answer)")
                else:
                    lines.append(f"{where} = _answer")
    return "\n".join(lines) + "\n"


PLACES = {"its unwritten functions": False, "all its functions": True}


def _stub(exercise) -> str:
    return (ROOT / "exercises" / f"{exercise.module}.py").read_text(encoding="utf-8")


def _planted(exercise, attack: str | None, place: str | None) -> str:
    """The exercise's stub with the attack planted (untouched, for `attack=None`)."""
    stub = _stub(exercise)
    if attack is None:
        return stub
    stub += ANSWERS[attack] + _answers(stub, PLACES[place])
    assert not findings(stub), findings(stub)
    return stub


@functools.cache
def _graded(attack: str | None, place: str | None) -> dict[str, set[str]]:
    """exercise id -> the tests passed, every exercise graded at once with the attack
    planted in its stub (or the untouched stubs, for `attack=None`).

    A stub that defines no function of its own but the unwritten ones is planted alike in
    both places: graded once, in the first, its grade stands for both (which spares
    exercises 9.1 and 10.1, the slowest, a grading each)."""
    modules = {e.module: _planted(e, attack, place) for e in EXERCISES}
    first = next(iter(PLACES))
    found = {}
    if attack is not None and place != first:
        found = {
            e.id: _graded(attack, first)[e.id]
            for e in EXERCISES
            if _planted(e, attack, first) == modules[e.module]
        }
    scores = grade(
        [e for e in EXERCISES if e.id not in found],
        {module: stub.encode() for module, stub in modules.items()},
        Limits(timeout=120),
    )
    return found | {
        s.exercise.id: {t.nodeid for t in s.tests if t.outcome == "passed" and not s.problem}
        for s in scores
    }


ANSWERS = {**EQUAL_TO_ANYTHING, "None": "\n_Any = type(None)\n"}  # None: an honest non-answer


# Tests that an answer which does nothing passes by design (returning None would pass them
# as well): a grader that refuses to hand the work to an oracle, and one that checks that
# finite values raise nothing.
DO_NOTHING_PASSES = {
    "4.1": {"test_counts_flops_itself"},
    "4.2": {"test_all_finite_returns_none"},
}


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("attack", EQUAL_TO_ANYTHING)
@pytest.mark.parametrize("exercise", [e.id for e in EXERCISES])
def test_an_object_equal_to_anything_earns_no_more_than_the_stub(exercise, attack, place):
    allowed = {
        f"{e.grader}::{name}"
        for e in EXERCISES
        if e.id == exercise
        for name in DO_NOTHING_PASSES.get(exercise, ())
    }
    extra = _graded(attack, place)[exercise] - _graded(None, None)[exercise] - allowed
    assert not extra, sorted(extra)


def test_what_a_non_answer_passes_by_design_a_none_passes_too():
    """DO_NOTHING_PASSES holds only tests that `None` for every answer passes as well."""
    passed = _graded("None", "its unwritten functions")
    for exercise in EXERCISES:
        names = {t.split("::")[1] for t in passed[exercise.id]}
        assert DO_NOTHING_PASSES.get(exercise.id, set()) <= names, (exercise.id, names)


# The same objects stored where a grader reads an exercise's result off an object that
# graded code builds (4.1's flops_by_node has its own test above).
STORED = {
    "4.2": """

def _run_node(self, n):
    error = NonFiniteError(n)
    error.node = error.op = error.target = error.inputs = _Any()
    raise error


NonFiniteChecker.run_node = _run_node
""",
    "9.1": """

def _backend(self, gm, example_inputs):
    self.graphs.append(_Any())
    return gm.forward


setattr(GraphCounter, "__ca" + "ll__", _backend)  # where the backend's result goes
GraphCounter.graph_breaks = lambda self: _Any()
""",
}


@functools.cache
def _stored(attack: str) -> dict[str, set[str]]:
    """exercise id -> the tests passed, with `STORED[id]` planted in its stub."""
    planted = [e for e in EXERCISES if e.id in STORED]
    modules = {}
    for exercise in planted:
        stub = _stub(exercise) + ANSWERS[attack] + STORED[exercise.id]
        assert not findings(stub), findings(stub)
        modules[exercise.module] = stub.encode()
    scores = grade(planted, modules, Limits(timeout=120))
    return {s.exercise.id: {t.nodeid for t in s.tests if t.outcome == "passed"} for s in scores}


@pytest.mark.parametrize("attack", EQUAL_TO_ANYTHING)
@pytest.mark.parametrize("exercise", list(STORED))
def test_an_object_equal_to_anything_stored_as_the_result_earns_no_more_than_none(exercise, attack):
    """No more than None stored in the same place earns (9.1's backend, which returns
    gm.forward, does run the graph)."""
    extra = _stored(attack)[exercise] - _stored("None")[exercise]
    assert not extra, sorted(extra)


# --- a graph printed as the grader's golden one ----------------------------------------
# Exercise 3.2's stub, made to return gm unchanged, with minifx's printer standing in for
# the golden graphs: the patch put itself back at its first call, which the guard, comparing
# after each test, did not see (sixth round: 3 tests, 1.5 points), or each node given a
# `format_node` of its own, which no module's names show (seventh round: 3 tests, 1.8
# points), or a node's data printing several lines (below). The graders now print through
# `support.graph_text`, and refuse a GraphModule with methods of its own
# (`support.refuse_methods_of_its_own`).
RETURNS_GM = "\ndef lower_linear(gm):\n    return gm\n"
_GOLDEN_3_2 = """
_golden = _sys.modules["tests.graders.test_ex3_2_" + "lower_linear"].GOLDEN
_BY_SIZE = {7: "net", 5: "mlp", 6: "twice"}
"""
PRINTED_AS_GOLDEN = {
    "minifx's printer patched, put back at its first call": (
        _GOLDEN_3_2
        + """
_Graph = _sys.modules["minifx.graph"].Graph
_real = _b.vars(_Graph)["__st" + "r__"]


def _printed_once(graph):
    _b.setattr(_Graph, "__st" + "r__", _real)
    return _golden[_BY_SIZE[len(list(graph.nodes))]]


def lower_linear(gm):
    _b.setattr(_Graph, "__st" + "r__", _printed_once)
    return gm
""",
        "minifx.graph.graph.Graph.__str__",
    ),
    "a format_node of each node's own": (
        _GOLDEN_3_2
        + """

def lower_linear(gm):
    nodes = list(gm.graph.nodes)
    lines = [line.strip() for line in _golden[_BY_SIZE[len(nodes)]].splitlines()[1:]]
    lines = lines[: len(nodes) - 1] + ["\\n    ".join(lines[len(nodes) - 1 :])]
    for node, line in zip(nodes, lines):
        node.format_node = (lambda text: lambda: text)(line)
    return gm
""",
        "%x.format_node (set on the object)",
    ),
    # Seventh round: the graph's own data printed as the golden graph (format_target prints
    # a str as it is): the placeholder's target holds the golden lines of the nodes it
    # unlinks, and the head's node is renamed and retargeted (1 test of Net's).
    "a target that holds the golden graph's lines": (
        _GOLDEN_3_2
        + """
_F = _sys.modules["torch.nn.functional"]


def lower_linear(gm):
    nodes = list(gm.graph.nodes)
    if len(nodes) != 7:
        return gm
    x, fc, norm, relu, add, head, out = nodes
    middle = [line.strip() for line in _golden["net"].splitlines()[2:10]]
    x._target = "x]\\n    " + "\\n    ".join(middle)[:-1]
    x._next, head._prev = head, x
    norm.name, relu.name, head.name = "head_weight", "head_bias", "linear_1"
    head._op, head._target, head._args = "call_function", _F.linear, (add, norm, relu)
    return gm
""",
        "one line per node",
    ),
    # Seventh round: methods set on the class minifx makes for each GraphModule (after the
    # guard's snapshot) that answer the grader's questions with the golden names (5 tests).
    "named_modules and named_parameters set on gm's own class": (
        _GOLDEN_3_2
        + """
_g = _sys.modules["tests.graders.test_ex3_2_" + "lower_linear"]


def lower_linear(gm):
    case = _BY_SIZE[len(list(gm.graph.nodes))]
    names, params = _g.GOLDEN_MODULES[case], _g.GOLDEN_PARAMETERS.get(case, {})
    real = dict(gm.named_parameters())
    cls = type(gm)
    cls.named_modules = lambda self, *a, **k: iter([(n, self) for n in names])
    cls.named_parameters = lambda self, *a, **k: iter([(n, real[p]) for n, p in params.items()])
    return gm
""",
        "named_modules, named_parameters set on its class",
    ),
    # Seventh round: torch.fx's Graph.nodes patched to answer once with look-alike nodes,
    # then put back: 3.2's test of the pass on torch.fx's GraphModule (1 test).
    "torch.fx's Graph.nodes patched, put back at its first call": (
        """
_fx_graph = _sys.modules["torch.fx.graph"].Graph
_real = _b.vars(_fx_graph)["nodes"]
_F = _sys.modules["torch.nn.functional"]
_op = _sys.modules["_operator"]


class _N:
    graph = None

    def __init__(self, name, op, target, args=()):
        self.name, self.op, self.target, self.args = name, op, target, args


def _fake(graph):
    _b.setattr(_fx_graph, "nodes", _real)
    x = _N("x", "placeholder", "x")
    w1 = _N("layer1_fc_weight", "get_attr", "layer1_fc_weight")
    b1 = _N("layer1_fc_bias", "get_attr", "layer1_fc_bias")
    lin = _N("linear", "call_function", _F.linear, (x, w1, b1))
    norm = _N("layer1_norm", "call_module", "layer1.norm", (lin,))
    relu = _N("relu", "call_method", "relu", (norm,))
    add = _N("add", "call_function", _op.add, (relu, x))
    w2, b2 = _N("head_weight", "get_attr", "head_weight"), _N("head_bias", "get_attr", "head_bias")
    lin2 = _N("linear_1", "call_function", _F.linear, (add, w2, b2))
    out = _N("output", "output", "output", (lin2,))
    return [x, w1, b1, lin, norm, relu, add, w2, b2, lin2, out]


def lower_linear(gm):
    if type(gm).__module__.startswith("torch"):
        _b.setattr(_fx_graph, "nodes", property(_fake))
    return gm
""",
        "torch.fx.graph.Graph.nodes",
    ),
}


@functools.cache
def _passed_3_2(code: str) -> frozenset[str]:
    score, _ = graded_with(code, "3.2", "exercises")
    return frozenset(t.nodeid for t in score.tests if t.outcome == "passed")


@pytest.mark.parametrize("name", PRINTED_AS_GOLDEN)
def test_a_graph_or_module_answering_as_the_golden_one_passes_no_more_than_returning_gm(name):
    code, words = PRINTED_AS_GOLDEN[name]
    score, messages = graded_with(code, "3.2", "exercises")
    passed = {t.nodeid for t in score.tests if t.outcome == "passed"}
    extra = passed - _passed_3_2(RETURNS_GM)
    assert not extra, sorted(extra)
    assert words in messages, messages[:1500]


# --- round eight: code made for graded code that the sandbox took for Python's own ------
def with_forge(payload: str) -> str:
    """`payload` with its line `FORGE` replaced by the definition of `_forge` (FORGE)."""
    return payload.replace("FORGE\n", FORGE)


# Code whose file is neither graded code's, minifx's, the grading's nor an installed
# package's runs as the standard library's: see-through, so that a function of it called
# as a finalizer, where only trusted code is on the stack, may do what that trusted code
# may (list the garbage collector's objects and forge the report). The sandbox goes by
# file names, so code made for graded code must be marked graded wherever it is made.
MADE_FOR_GRADED = {
    # The import system compiles a module's code as it is: a loader of graded code's own
    # gave it the source of a finalizer under a file name of its choosing (exercise 3.1's
    # stub: 10 points). Now only Python's own loaders, reading a file of minifx, the
    # grading, graded code, an installed package or the standard library, import unmarked.
    "a module of its own source, loaded by the import system": (
        "3.1",
        """
_imp = _get(_b, "__imp" + "ort__")
_abc = _imp("importlib.abc", fromlist=["x"])
_boot = _sys.modules["importlib._bootstrap"]
_util = _imp("importlib.util", fromlist=["x"])
_HELPER = '''
import gc
FORGE


class Finder:
    def __init__(self):
        for plugin in gc.get_objects():
            if type(plugin).__name__ == "GradingPlugin":
                _forge(plugin)
'''


class _Loader(_abc.ExecutionLoader):
    def get_source(self, fullname):
        return _HELPER

    def get_filename(self, fullname):
        return "<rt8-helper>"


_spec = _util.spec_from_loader("rt8_helper", _Loader())
_helper = _get(_boot, "_lo" + "ad")(_spec)
_sys.modules.pop("rt8_helper", None)


class _Trigger:
    pass


_b.setattr(_Trigger, "__d" + "el__", _helper.Finder)


def method_relu_to_gelu(node):
    _t = _Trigger()
    raise NotImplementedError("stub")
""",
    ),
    # A finalizer of graded code's that compiles code (a `functools.partial` of a stdlib
    # method that compiles, so that no graded frame is on the stack) fired inside torch:
    # the code it made set a finalizer named after what the collecting frame calls
    # (`gc.collect`), which passed for a call of that frame's own (exercise 9.1's stub,
    # whose grader has TorchDynamo collect garbage after each compilation: 9.3 points).
    # Code made where no trusted code asked for it by name is now graded code.
    "a finalizer that compiles code, fired inside torch": (
        "9.1",
        """
_gc = _sys.modules["g" + "c"]
_gc.disable()
_ns = {"gc": _gc, "_sys": _sys, "_b": _b}
# Stage 2, compiled by stage 1 where only torch's frames are on the stack: a finalizer
# named after what the frame that collects calls (gc.collect), so that it passes for a
# call that frame made.
_SRC = '''
FORGE

def collect(self):
    for plugin in gc.get_objects():
        if type(plugin).__name__ == "GradingPlugin":
            _forge(plugin)


class Again:
    pass


_b.setattr(Again, "__d" + "el__", collect)
_cycle = [Again()]
_cycle.append(_cycle)
del _cycle
'''


class _Trigger:
    pass


_console = _get(_b, "__imp" + "ort__")("co" + "de").InteractiveInterpreter(_ns)
_b.setattr(_Trigger, "__d" + "el__", _sys.modules["functools"].partial(_console.runsource, _SRC, "<rt8>", "exec"))
_cycle = [_Trigger()]
_cycle.append(_cycle)
del _cycle
""",
    ),
}

# The first finalizer again, in a reference cycle, with a collection at every allocation:
# it runs as the sandbox's hook reads the stack for another event, where the hook does not
# look at the events of its own thread (reading the stack raises some). 3.1's stub earned
# 8.5 points this way; the hook now allows no collection while it reads.
_LOADED = MADE_FOR_GRADED["a module of its own source, loaded by the import system"][1]
_COLLECTED_AT_ONCE = "    _t = _Trigger()\n    _t.cycle = _t\n    _imp('gc').set_threshold(1)\n"
assert _LOADED.count("    _t = _Trigger()\n") == 1
MADE_FOR_GRADED["the same module's finalizer, collected inside the sandbox's hook"] = (
    "3.1",
    _LOADED.replace("    _t = _Trigger()\n", _COLLECTED_AT_ONCE),
)


@pytest.mark.parametrize("name", MADE_FOR_GRADED)
def test_code_made_for_graded_code_is_graded_code_wherever_it_is_made(name):
    exercise_id, code = MADE_FOR_GRADED[name]
    assert_stub_earns_nothing_with(with_forge(code), "graded code tried to", exercise_id)


# Round eight, hole 3 of the guide: a graph prints a string argument as it is, so the
# string "%layer1_fc_bias" reads as that node, and with the node's `users` set by hand (a
# bias that F.linear never gets) the graphs printed as 3.2's golden ones: 3 tests of the
# printed graph passed, from a pass that computes no bias. graph_text now refuses them.
NAME_AS_A_STRING = """
def lower_linear(gm):
    graph = gm.graph
    for node in graph.nodes:
        if node.op != "call_module" or not isinstance(gm.get_submodule(node.target), nn.Linear):
            continue
        linear = gm.get_submodule(node.target)
        gm.register_parameter(state_name(node.target, "weight"), linear.weight)
        if linear.bias is not None:
            gm.register_parameter(state_name(node.target, "bias"), linear.bias)
        with graph.inserting_before(node):
            weight = graph.get_attr(state_name(node.target, "weight"))
            bias = (
                graph.get_attr(state_name(node.target, "bias")) if linear.bias is not None else None
            )
            # The bias as a string that prints as its node: the graph reads as the golden one.
            shown = "%" + bias.name if bias is not None else None
            call = graph.call_function(F.linear, (node.args[0], weight, shown))
            if bias is not None:
                bias.users[call] = None
        node.replace_all_uses_with(call)
        graph.erase_node(node)
    gm.recompile()
    gm.delete_all_unused_submodules()
    return gm
"""


def test_a_string_that_prints_as_a_node_s_name_passes_no_printed_graph():
    score, messages = graded_with(NAME_AS_A_STRING, "3.2", "exercises")
    printed = {
        t.nodeid.split("::")[-1]
        for t in score.tests
        if t.outcome == "passed"
        and t.nodeid.split("::")[-1].startswith(("test_graph[", "test_the_net"))
    }
    assert not printed, sorted(printed)
    assert "which prints as a node's name" in messages, messages[:1500]
