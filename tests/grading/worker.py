"""The grading worker: runs one grader next to graded code, and reports each test.

The judge (`tests/grading/judge.py`) starts one worker per exercise: on Linux a child that
the fork server (`forkserver.py`) forks and that calls `run`, elsewhere a new process,

    python -I <stage>/tests/grading/worker.py <grader path> <report fd>

Either way the worker sees a copy of minifx and the graders, and the student's
`exercises/`. Graded code runs in this process, so the worker decides no score: it writes
what it saw as signed JSON lines on the file descriptor the judge gave it, and the judge
decides. Graded code shares the process, so the worker keeps what it relies on out of
graded code's reach:

- **A private namespace.** This file, `sandbox.py` and `guard.py` run in namespaces that
  no module refers to, with their own copy of the builtins: graded code that replaces
  `builtins.isinstance` or a name in `sys.modules` changes nothing here. The signing key
  comes on standard input, read and closed before any graded code runs, and lives only
  in the `Reporter`, which nothing reachable from a module refers to either.
- **A sandbox.** An audit hook (`sandbox.py`) refuses what could reach that state anyway
  (stack frames, the garbage collector's lists, patching classes, ctypes, processes,
  writing files).
- **A body that ran to its end.** Each test function is wrapped, before any graded code
  runs, so that it counts as passed only when the grader's function returned: a test
  that pytest was made to skip, stop or leave out fails. Its outcome otherwise comes
  from the exception pytest caught, never from the report objects graded code could
  change.
- **Kernel limits.** Before pytest starts, the worker gives up the right to write files
  outside a scratch folder of its own (and `/dev/null`) and to read the judge's copy or
  the other staged folders (`landlock.py`, on Linux with Landlock): native code opens
  files without the audit events that the sandbox sees.
- **A closed dispatcher.** Once the tests are collected, `torch._C._dispatch_library` is
  taken away, so graded code cannot give torch's operators kernels of its own.
- **Dynamo's frame hook in the sandbox's hands.** TorchDynamo's `set_eval_frame` installs
  a callback that Python calls with every frame it runs, ours included, with no audit
  event. Before graded code runs (the exercises' fork server does it before it forks), a
  stand-in takes its place, which asks the sandbox to install the callback: only for
  TorchDynamo's own code, never while graded code runs.
- **A guard.** After each test, `guard.py` checks that every module, class and import
  hook is as it was before graded code ran, and that nothing wrote to the modules a
  grader decides with (even to put a name back); if not, that test and every later one
  fail.

Records: `collected` lists the tests before any of them runs (graders load graded code
only inside tests), so a test that never reports is known to be missing; `start` precedes
each test, so the judge can say which test was running when the process hung, crashed or
exited; `result` gives each test's outcome; `finished` says pytest ended. Records are
numbered, so none can be dropped or replayed unnoticed.
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import json
import os
import sys
import traceback
from pathlib import Path
from types import BuiltinFunctionType

# The trusted folder: minifx, the graders and this file, at <root>/tests/grading/worker.py.
ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
# A failure message is for a person; graded code must not flood the report with one.
MAX_MESSAGE = 20_000
# Files graded code may write through pytest's capture and output: no more than this.
MAX_FILE_BYTES = 256 * 1024**2
GRADED_PACKAGE = "exercises"
# A failed `assert` without a message: the stage tests that grade build tasks write those.
NO_MESSAGE = "assertion failed (the test gave no message)"
# A build task's stage tests and their helpers: the guard counts the writes to their
# modules, as to the graders' (a test's name swapped for one call earned a stub all its
# points), but for the modules whose names tracing swaps and puts back (`wrap`). And
# minifx's modules, but for the graded files' (graded code's own, which the guard leaves
# out): minifx hands frames to functions it looks up by name (`errors.user_location`), and a
# task region that swapped one for a moment was handed a frame (thirteenth round).
COUNTED_IN_A_TASK = ("tests.", "minifx.")
# The worker's scratch folder, in the folder the judge staged for it (the judge measures it).
SCRATCH = "scratch"
# The environment variable that names the judge's folder, the instructor's copy.
SOURCE = "MINIFX_GRADING_SOURCE"
# A build task's graded files: the submission's minifx files that hold tasks (see run()).
GRADED_FILES: set[Path] = set()
# The staged folders, whose paths messages name as the repository's (`tests/graders/x.py`,
# `exercises/x.py`): the student's copy has no `/tmp/minifx-server-.../stage-...` folder.
STAGED_FOLDERS: list[Path] = [ROOT]


class Reporter:
    """Writes numbered, signed records to the judge: the only way out of the worker."""

    def __init__(self, fd: int, key: bytes) -> None:
        self._fd, self._key, self._seq = fd, key, 0
        # Bound now, before graded code could replace json.dumps or hmac.new.
        self._write, self._dumps, self._new, self._sha256 = (
            os.write,
            json.dumps,
            hmac.new,
            hashlib.sha256,
        )

    def send(self, kind: str, **fields) -> None:
        record = {"seq": self._seq, "kind": kind, **fields}
        body = self._dumps(record, sort_keys=True)
        mac = self._new(self._key, body.encode(), self._sha256).hexdigest()
        self._write(self._fd, (self._dumps({"body": body, "mac": mac}) + "\n").encode())
        self._seq += 1


class SolutionsBlocked:
    """An import hook: graded code may not import the reference solutions."""

    def find_spec(self, name, path=None, target=None):
        if name == "solutions" or name.startswith("solutions."):
            raise ImportError(
                f"`import {name}`: graded code may not import the reference solutions"
            )
        return None


# --- the pytest plugin -------------------------------------------------------------


class GradingPlugin:
    """Reports what pytest collected and how each test ended, through a `Reporter`."""

    def __init__(
        self,
        reporter: Reporter,
        grader: str,
        sandbox,
        guard,
        task: str = "",
        graded_modules: tuple[str, ...] = (GRADED_PACKAGE,),
    ) -> None:
        self.reporter, self.grader, self.sandbox = reporter, grader, sandbox
        # guard.py's snapshot, taken before pytest started (by the fork server, before this
        # process was forked from it); `begin` brings it up to date once the tests are
        # collected.
        self.guard = guard
        self.task, self.graded_modules = task, graded_modules
        self.completed: set[str] = set()
        self.failures: dict[str, tuple[str, str]] = {}
        self.compromised = ""

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.reporter.send("collect_error", message=str(report.longrepr)[-MAX_MESSAGE:])

    def pytest_collection_modifyitems(self, session, config, items) -> None:
        """For a build task, keep only the tests that carry its marker."""
        if not self.task:
            return
        kept = [i for i in items if any(m.args[:1] == (self.task,) for m in i.iter_markers("task"))]
        config.hook.pytest_deselected(items=[i for i in items if i not in kept])
        items[:] = kept

    def pytest_collection_finish(self, session) -> None:
        import torch
        from _pytest.mark.structures import MARK_GEN

        # pytest.mark keeps the config, which leads to every plugin, this one included;
        # the marks were all made during collection, so the config is no longer needed.
        MARK_GEN._config = None
        for item in session.items:
            item.obj = _run_to_the_end(item.obj, item.nodeid, self.completed)
        if (ROOT / "minifx").is_dir():
            # So that graded code never loads a part of it (see guard.py). For a build task,
            # a stage that does not import (a later task's file is broken) is left out: the
            # tests of this task do not need it.
            _import_all("minifx", tolerant=bool(self.task))
        if self.task:
            # What the stage tests' models and oracles load on first use, and which patches
            # torch's own classes when it loads: loaded now, before the guard looks.
            import torch.distributed.tensor
        _close_the_dispatcher(torch)
        if "stand_ins" in _DYNAMO_HOOKS_REPLACED:
            # The fork server replaced them: since then, only the modules that changed can
            # hold an original.
            stand_ins = _DYNAMO_HOOKS_REPLACED["stand_ins"]
            _replace_dynamo_hooks(self.guard.module_dicts_written_since(), stand_ins)
        else:  # no fork server: this worker replaces them itself
            put_stand_ins_for_dynamo_hooks()
            self.sandbox.eval_frame_setter = _DYNAMO_HOOKS_REPLACED.pop("original")
        _no_progress_bar_thread()
        if self.task:
            _watch_tensor_subclasses(torch)
        # hypothesis (some stage tests use it) sets its own flags while the first test runs.
        self.guard.begin(
            skip=self.graded_modules + (("hypothesis",) if self.task else ()),
            stage_tests=COUNTED_IN_A_TASK if self.task else (),
        )
        self.sandbox.arm()
        self.reporter.send(
            "collected",
            tests=[item.nodeid for item in session.items],
            cuda=bool(torch.cuda.is_available()),
            grader_sha256=_sha256(self.grader),
        )

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        self.reporter.send("start", test=nodeid)

    def pytest_runtest_makereport(self, item, call) -> None:
        if call.excinfo is not None and item.nodeid not in self.failures:
            rerun = f".venv/bin/python -m pytest '{item.nodeid}'" + (
                "" if self.task else " --impl exercises"
            )
            self.failures[item.nodeid] = _outcome(call.excinfo, call.when, rerun)

    def pytest_runtest_logfinish(self, nodeid, location) -> None:
        if nodeid in self.failures:
            outcome, message = self.failures[nodeid]
        elif nodeid in self.completed:
            outcome, message = "passed", ""
        else:
            outcome, message = "failed", "the test did not run to its end"
        if not self.compromised:
            self.compromised = _compromised(self.sandbox.violations, self.guard.changes())
        if self.compromised:
            outcome, message = "failed", self.compromised
        self.reporter.send("result", test=nodeid, outcome=outcome, message=message[:MAX_MESSAGE])
        self.guard.add_new_modules()

    def pytest_sessionfinish(self, session, exitstatus) -> None:
        self.reporter.send("finished")


def _sha256(grader: str) -> str:
    """The digest of the grader, or of a build task's test files (`a.py;b.py`) in order."""
    digest = hashlib.sha256()
    for path in grader.split(";"):
        digest.update((ROOT / path).read_bytes())
    return digest.hexdigest()


def _run_to_the_end(test, nodeid: str, completed: set[str]):
    """`test`, wrapped to note that its body returned: the one proof that a test passed."""

    def run_to_the_end(**fixtures):
        test(**fixtures)
        completed.add(nodeid)

    return run_to_the_end


# What stands in for `torch._C._dispatch_library` once the tests are collected.
_REFUSED_DISPATCH_LIBRARY = """
def _dispatch_library(*args, **kwargs):
    raise PermissionError(
        "graded code may not register kernels with torch's dispatcher (torch.library, "
        "torch._C._dispatch_library): a kernel of its own for aten::equal would answer "
        "the graders' comparisons"
    )
"""


def _no_progress_bar_thread() -> None:
    """Keep tqdm, where it is installed, from starting its monitor thread in a test.

    torch.fx's `Interpreter.run` makes a tqdm bar (disabled, but made) on every run, and
    the graders' oracles run it. tqdm's first bar starts a thread and stores it in
    `tqdm.monitor`: the guard would blame both on graded code and fail every later test.
    `monitor_interval = 0` is tqdm's own switch for that thread.
    """
    try:
        from tqdm import std
    except ImportError:  # torch then uses a stand-in of its own, which starts nothing
        return
    std.tqdm.monitor_interval = 0


def _close_the_dispatcher(torch) -> None:
    """Take away `torch._C._dispatch_library`, through which Python code gives torch's
    operators kernels of its own (`torch.library` calls it): the guard would not see one
    that graded code registered and removed within a test. minifx and the graders
    register none once loaded. The stand-in is compiled apart, so that its globals lead
    nowhere, and nothing here keeps the original for graded code to find."""
    namespace = {"__builtins__": {"PermissionError": PermissionError}}
    exec(_REFUSED_DISPATCH_LIBRARY, namespace)
    torch._C._dispatch_library = namespace["_dispatch_library"]


# What stands in for TorchDynamo's `set_eval_frame` once the tests are collected.
_EVAL_FRAME_BY_THE_SANDBOX = """
def set_eval_frame(callback):
    prior = _current()
    _audit("grading.eval_frame", callback)  # the sandbox installs it, or refuses
    return prior
"""


# TorchDynamo's other hooks into running code, which no grader sets once the tests are
# collected: each is called with frames' locals, or runs code in a function's place.
_DYNAMO_HOOKS = (
    "set_guard_error_hook",
    "set_guard_complete_hook",
    "set_bytecode_debugger_callback",
    "_load_precompile_entry",
)
_REFUSED_DYNAMO_HOOK = """
def refused(*args, **kwargs):
    raise PermissionError(
        "graded code may not set TorchDynamo's hooks into running code "
        "(torch._C._dynamo.eval_frame): they see the locals of the grader's frames"
    )
"""


# TorchDynamo's hooks once `put_stand_ins_for_dynamo_hooks` has replaced them: the original
# `set_eval_frame`, until the worker hands it to its sandbox, and the stand-ins by the id of
# the original each replaces. Filled by the fork server before it forks any worker.
_DYNAMO_HOOKS_REPLACED: dict = {}


def put_stand_ins_for_dynamo_hooks() -> None:
    """Put a stand-in for TorchDynamo's `set_eval_frame` everywhere a module holds it, to
    be handed to the sandbox, and a refusing one for its other hooks.

    The callback `set_eval_frame` installs is called with every frame Python runs, and
    reads its locals without an audit event: graded code that installed one marked every
    test passed through the worker's own frames (twelfth red-team round). Dynamo installs
    one each time a function compiled with `torch.compile` runs (exercise 9.1's graders do
    that), so the stand-in asks the sandbox, which installs a callback only where
    TorchDynamo's own code asks and no graded code is running; only the sandbox, which no
    module refers to, keeps the original.

    The fork server of the exercises does this once, before it forks: reading every
    module's names in each worker copied the pages of all their objects (about a tenth of
    a grading's CPU time). A worker looks again only at the modules that changed since
    (`GradingPlugin`). A build task's worker, a worker.py of its own, does it all itself.
    """
    hooks = sys.modules["torch"]._C._dynamo.eval_frame  # where `torch._dynamo` takes them
    original = hooks.set_eval_frame
    namespace = {
        "__builtins__": {"PermissionError": PermissionError},
        "_audit": sys.audit,
        "_current": hooks.get_eval_frame_callback,
    }
    # Compiled under this file's name: the sandbox counts code made at run time under
    # `<string>` as graded code's once graded code has made some (sandbox.py).
    exec(compile(_EVAL_FRAME_BY_THE_SANDBOX, __file__, "exec"), namespace)
    exec(_REFUSED_DYNAMO_HOOK, namespace)
    stand_ins = {id(original): namespace["set_eval_frame"]}
    for name in _DYNAMO_HOOKS:
        if hasattr(hooks, name):
            stand_ins[id(getattr(hooks, name))] = namespace["refused"]
    modules = [getattr(module, "__dict__", None) for module in list(sys.modules.values())]
    _replace_dynamo_hooks([names for names in modules if isinstance(names, dict)], stand_ins)
    _DYNAMO_HOOKS_REPLACED.update(original=original, stand_ins=stand_ins)


def _replace_dynamo_hooks(namespaces: list[dict], stand_ins: dict[int, object]) -> None:
    """Replace each of TorchDynamo's hooks that `namespaces` hold with its stand-in."""
    for names in namespaces:
        for name, value in list(names.items()):
            if type(value) is BuiltinFunctionType and id(value) in stand_ins:
                names[name] = stand_ins[id(value)]


_WATCHED_SUBCLASSES = """
def __init_subclass__(cls, **kwargs):
    _audit("grading.tensor_subclass", cls)
    if kwargs:
        raise TypeError(f"{cls.__name__}: unexpected class arguments {sorted(kwargs)}")
"""


def _watch_tensor_subclasses(torch) -> None:
    """For a build task, have each new subclass of torch.Tensor raise an audit event, which
    the sandbox refuses while graded code runs: the stage tests compare with torch directly,
    and a subclass's `__torch_function__` answers `torch.isclose` for its tensors (the
    graders refuse them through support's checks of types). torch.Tensor is the only base a
    tensor class can have (torch._C.TensorBase refuses subclasses of its own). Compiled
    apart, like the dispatcher's stand-in."""
    namespace = {"__builtins__": {"TypeError": TypeError, "sorted": sorted}, "_audit": sys.audit}
    exec(_WATCHED_SUBCLASSES, namespace)
    torch.Tensor.__init_subclass__ = classmethod(namespace["__init_subclass__"])


def _limit_files(restrict_files, sandbox, graded: Path) -> None:
    """Have the kernel hold the worker to the files it needs (`landlock.py`): it writes only
    in a scratch folder of its own, which becomes the temporary folder, and reads neither
    the other staged folders nor the judge's copy, whatever code asks. The scratch folder
    is in the worker's staged folder, where the judge measures what it holds."""
    import tempfile

    scratch = str(graded / SCRATCH)
    os.makedirs(scratch, 0o700, exist_ok=True)
    tempfile.tempdir = os.environ["TMPDIR"] = scratch
    restrict_files(
        writable=[scratch, "/dev/null"],  # not /dev/shm: memory no limit of the judge's counts
        hidden=list(sandbox.elsewhere),
        kept=[sandbox.root, *sandbox.graded, *sandbox.installed],
    )


def _import_all(package: str, tolerant: bool = False) -> None:
    """Import a package and every module in it (`tolerant`: every module that imports)."""
    import importlib
    import pkgutil

    root = importlib.import_module(package)
    for module in pkgutil.walk_packages(root.__path__, f"{package}.", onerror=lambda name: None):
        try:
            importlib.import_module(module.name)
        except Exception:
            if not tolerant:
                raise


def _compromised(violations: list[str], changes: list[str]) -> str:
    """Why no test from now on can be trusted, or ''."""
    if violations:
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        return (
            f"graded code tried to {violations[0].removeprefix('graded code may not ')}{more}, which "
            "is refused while grading; this test and the ones after it earn nothing"
        )
    if changes:
        shown = ", ".join(changes[:5]) + (
            f" and {len(changes) - 5} more" if len(changes) > 5 else ""
        )
        return (
            f"graded code replaced {shown}, which the grading relies on; graded code may not patch "
            "pytest, torch, minifx, the graders or the grading worker, so this test and the ones "
            "after it earn nothing"
        )
    return ""


def _outcome(excinfo, when: str, rerun: str = "") -> tuple[str, str]:
    """`(outcome, message)` for a test phase that raised (`rerun`: the command that runs
    this test alone, for a check that gives no message of its own)."""
    import pytest

    exc = excinfo.value
    if excinfo.errisinstance(pytest.skip.Exception) or type(exc).__name__ == "SkipTest":
        return "skipped", _text(getattr(exc, "msg", None) or exc)
    if excinfo.errisinstance(pytest.exit.Exception):
        return (
            "failed",
            f"pytest.exit() was called during the test's {when}: graded code may not stop the run",
        )
    if isinstance(exc, KeyboardInterrupt):
        return "failed", f"KeyboardInterrupt during the test's {when}"
    message = _message(exc)
    where = _student_line(excinfo.tb)
    checked = isinstance(exc, AssertionError) or excinfo.errisinstance(pytest.fail.Exception)
    if where and not isinstance(exc, AssertionError):
        message = f"{message}\n  raised at {where}"
    elif not checked and (grader := _grader_line(excinfo.tb)):
        message = (
            f"{message}\n  raised in the grader, not in your code, at {grader}\n"
            "the grader could not check this answer: if it looks right to you, "
            "tell your course staff"
        )
    elif message == NO_MESSAGE or message.startswith("DID NOT RAISE"):
        message = _where_the_test_checked(message, excinfo.tb, rerun)
    return "failed", _as_in_the_repository(message)


def _as_in_the_repository(text: str) -> str:
    """`text` with each staged folder's path left out: `tests/graders/x.py` for the
    staged copy's `/tmp/minifx-server-.../stage-.../tests/graders/x.py`."""
    for folder in STAGED_FOLDERS:
        for path in {str(folder), os.path.realpath(folder)}:
            text = text.replace(path + os.sep, "")
    return text


def _where_the_test_checked(message: str, tb, rerun: str) -> str:
    """A bare `assert` or an unmet `pytest.raises` (a stage test's way, which build tasks
    are graded by) says nothing of what it compared: name the test's line, and the command
    that shows the values (pytest's assertion rewriting is off in the worker)."""
    frames = [
        f
        for f in traceback.extract_tb(tb)
        if Path(f.filename).resolve().is_relative_to(ROOT / "tests")
        and not Path(f.filename).resolve().is_relative_to(HERE)
    ]
    if frames:
        frame = frames[-1]
        path = Path(frame.filename).resolve().relative_to(ROOT).as_posix()
        message += f"\n  checked at {path}:{frame.lineno}: {(frame.line or '').strip()}"
    if rerun:
        message += (
            f"\n  the test says no more; for pytest's full report of it, run it alone:\n  {rerun}"
        )
    return message


def _text(value) -> str:
    """`str(value)`, which runs graded code's `__str__` and so may fail or be huge."""
    try:
        return str(value)[:MAX_MESSAGE]
    except BaseException as exc:  # graded code's __str__: anything can come out of it
        return f"(a message that could not be printed: {type(exc).__name__})"


def _message(exc: BaseException) -> str:
    """The exception's message: a grader's `assert cond, msg` and `pytest.fail(msg)` give `msg`."""
    text = _text(exc)
    if type(exc).__name__ == "Failed" or isinstance(exc, AssertionError):
        return text or NO_MESSAGE
    return f"{type(exc).__name__}: {text}"


def _student_line(tb) -> str:
    """`exercises/x.py:12: <source>` for the last frame in the graded code, or ''."""
    frames = [
        f
        for f in traceback.extract_tb(tb)
        if Path(f.filename).parent.name == GRADED_PACKAGE
        or Path(f.filename).resolve() in GRADED_FILES
    ]
    if not frames:
        return ""
    frame = frames[-1]
    path = Path(frame.filename).resolve()
    name = path.relative_to(ROOT).as_posix() if path in GRADED_FILES else f"exercises/{path.name}"
    return f"{name}:{frame.lineno}: {(frame.line or '').strip()}"


def _grader_line(tb) -> str:
    """`tests/graders/x.py:12: <source>` when the innermost frame is a grader's own line (so
    the grader failed, not graded code or a library it called), or ''."""
    frames = traceback.extract_tb(tb)
    if not frames:
        return ""
    path = Path(frames[-1].filename).resolve()
    if not path.is_relative_to(ROOT / "tests" / "graders"):
        return ""
    return f"{path.relative_to(ROOT).as_posix()}:{frames[-1].lineno}: {(frames[-1].line or '').strip()}"


# --- setting up ----------------------------------------------------------------------


def task_regions(path: Path) -> list[tuple[int, int]]:
    """The `(start, end)` lines of the task regions marked in a file, read with the
    judge's own patterns (tests/task_markers.py, with which its checks of task files read
    them); [] where there are none or they do not pair up (then all of it is
    graded)."""
    markers = load_private(ROOT / "tests" / "task_markers.py")
    spans, opened = [], {}
    for number, line in enumerate(
        path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1
    ):
        if found := markers["START"].match(line):
            if found["id"] in opened:
                return []
            opened[found["id"]] = number
        elif found := markers["END"].match(line):
            if found["id"] not in opened:
                return []
            spans.append((opened.pop(found["id"]), number))
    return [] if opened else spans


def load_private(path: Path) -> dict:
    """Run a file in a namespace of its own, with its own copy of the builtins."""
    namespace = {
        "__name__": f"grading_private_{path.stem}",
        "__file__": str(path),
        "__builtins__": dict(vars(builtins)),
    }
    exec(compile(path.read_bytes(), str(path), "exec", dont_inherit=True), namespace)
    return namespace


def limit_output() -> None:
    """Cap the size of files this process writes, and write no core dumps."""
    import resource

    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def drop_editable_finders() -> None:
    """Forget an editable install of minifx, so `import minifx` finds the staged copy."""
    sys.meta_path[:] = [
        f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")
    ]


def prepare() -> None:
    """What every worker needs before it runs anything: minifx and the graders from the
    trusted folder, never an installed minifx, and no way to import the solutions."""
    sys.path.insert(0, str(ROOT))
    drop_editable_finders()
    sys.meta_path.insert(0, SolutionsBlocked())


def run(
    grader: str,
    fd: int,
    key: bytes,
    graded: Path,
    task: str = "",
    task_files: str = "",
    guard=None,
) -> int:
    """Run one grader on the graded modules in `graded/exercises/`, reporting on `fd`.

    Args:
        grader: The grader's path in the trusted folder, `tests/graders/test_<id>.py`; for a
            build task, its stage test files, `tests/a/test_x.py;tests/b/test_y.py`.
        fd: The file descriptor to write the signed records to.
        key: The key that signs them.
        graded: The folder that holds the student's `exercises/` package.
        task: A build task's id: run only the tests marked `pytest.mark.task(task)`.
        task_files: For a build task, the graded files of minifx (the submission's task
            files), comma-separated paths from the root; they are graded code.
        guard: A snapshot of guard.py's `Guard` taken before (by the fork server, with its
            own copy of guard.py), or None: it is taken here.
    """
    limit_output()
    # No bytecode caches: the staged folders are not written while graded code runs (the
    # sandbox refuses it), and `python -I` ignores PYTHONDONTWRITEBYTECODE.
    sys.dont_write_bytecode = True
    os.chdir(ROOT)
    sys.path.insert(0, str(graded))
    STAGED_FOLDERS.append(graded)
    graded_modules: tuple[str, ...] = (GRADED_PACKAGE,)
    source = os.environ.get(SOURCE, "")  # the judge's folder, read before graded code runs
    sandbox_class = load_private(HERE / "sandbox.py")["Sandbox"]
    if task:
        paths = task_files.split(",")
        GRADED_FILES.update((ROOT / p).resolve() for p in paths)
        graded_modules = tuple(p.removesuffix(".py").replace("/", ".") for p in paths)
        sandbox = sandbox_class(
            [str(ROOT / p) for p in paths],
            str(ROOT),
            graded_modules,
            {str(ROOT / p): spans for p in paths if (spans := task_regions(ROOT / p))},
            source,
        )
    else:
        sandbox = sandbox_class(str(graded / GRADED_PACKAGE), str(ROOT), source=source)
    # The fork server put the stand-ins in place (else the plugin does, once it collected).
    sandbox.eval_frame_setter = _DYNAMO_HOOKS_REPLACED.pop("original", None)
    sys.addaudithook(sandbox.hook)
    # Before pytest starts: a build task's graded files are imported as it collects.
    _limit_files(load_private(HERE / "landlock.py")["restrict"], sandbox, graded)
    plugin = GradingPlugin(
        Reporter(fd, key),
        grader,
        sandbox,
        _guard(guard),
        task,
        graded_modules,
    )
    del key

    import pytest

    # No assertion rewriting and no debugger: both plugins keep pytest's config where any
    # module can reach it, and through it this plugin. No warnings plugin: it swaps the
    # warnings module's state during each test. The graders' messages need none of them.
    args = [
        "-q",
        "--tb=no",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-p",
        "no:assertion",
        "-p",
        "no:debugging",
        "-p",
        "no:warnings",
        "--impl=exercises",
        "--rootdir",
        str(ROOT),
        "-c",
        str(ROOT / "pyproject.toml"),
        "-o",
        "addopts=",
        *grader.split(";"),
    ]
    code = pytest.main(args, plugins=[plugin])
    return 0 if code in (0, 1) else int(code)


def _guard(snapshot):
    """The guard of this worker: one of this file's folder's `Guard` class, with the state of
    the fork server's `snapshot` (or a snapshot taken now)."""
    guard_class = load_private(HERE / "guard.py")["Guard"]
    return guard_class.taken_from(snapshot) if snapshot else guard_class()


def main() -> int:
    """`worker.py <grader> <fd>`, the key on standard input: grade the staged folder's own
    `exercises/` (the judge's way where it cannot fork; see `forkserver.py`)."""
    grader, fd, task = sys.argv[1], int(sys.argv[2]), sys.argv[3:5]
    key = bytes.fromhex(sys.stdin.readline().strip())
    sys.stdin.close()
    prepare()
    return run(grader, fd, key, ROOT, *task)


if __name__ == "__main__":
    # Run this file again in a private namespace: `sys.modules["__main__"]` is this
    # module, and anything graded code can reach from it, it can change.
    sys.exit(load_private(Path(__file__))["main"]())
