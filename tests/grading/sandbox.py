"""The worker's sandbox: an audit hook that keeps graded code out of the grading.

Python calls an audit hook (PEP 578) before some sensitive operations: reading a stack
frame, listing the garbage collector's objects, setting a function's code or defaults,
compiling code, opening a file, starting a process. A hook cannot be removed once it is
added, so the worker adds this one before any graded code runs, and the hook refuses the
operations that graded code could use to change its own score. (Assigning to a module or
a class is not audited: `guard.py` checks for that after each test.)

To tell graded code from the code it calls and the code that calls it, the hook reads
the stack. Each frame holds one of four kinds of code:

- **graded**: a file in the staged `exercises/`;
- **own**: minifx and the grading (the staged `minifx/` and `tests/`);
- **installed**: the packages that graders and graded code call (torch, numpy);
- **see-through**: the standard library, pytest and code generated at run time. Graded
  code can call these to act for it (`inspect.currentframe()` reads a frame for its
  caller), so they decide nothing: the frame below them does.

The *requester* is the first frame that is not see-through, going out from the
operation. Whatever minifx or the grading asks for is allowed, and so is whatever an
installed package asks for while no graded code is on the stack. Otherwise graded code
is behind the request, directly or through a package it called (torch has functions that
return their caller's frame), and the rules below decide. A stack with no requester (a
thread or an `atexit` function that graded code started) counts as graded code.

Trusted code can be made to run what graded code hands it (`support.call_graded(fn)`
calls `fn` from the grading's own frame; `map` and `iter` call C functions from whatever
frame iterates them). So a request from minifx or the grading counts as theirs only when
it is one they make: an introspection whose code names it (and, through the standard
library, a call that names the function it calls; for minifx and the grading, code made
or run, and a published function's code or defaults set, too), never a process, a trace
or ctypes. Code compiled while graded code runs is graded code, whatever file name it
claims, and so is code run where no trusted code asked for it by name (a finalizer of
graded code's, fired while only torch's frames are on the stack); code that claims a file
of minifx, the grading or an installed package is made only by the import system, reading
a file with Python's own loaders, or by an installed package on its own (code read from
bytes, by `marshal`, could claim any file: it is refused), and a function's code is
replaced only by code of the same file. And some files are refused to everyone: writing what the
run's workers import (the staged minifx, graders and exercises), reading the other staged
folders, other gradings' folders (other runs', fork servers') or the judge's copy (whose
minifx holds the build tasks' solutions, as the exercises' fork server's does), and reading a
process's memory (`/proc/self/mem`: the worker's holds the key that signs its report).

The worker adds the hook first thing and arms it once pytest has collected the tests,
before any graded code runs. A refused operation raises `PermissionError` and is recorded; the worker then fails the
test that was running and every test after it. The hook stops Python code; native code
could get past it: graded code cannot load any of its own (`ctypes` is refused), but
torch's native functions open files without an audit event (`torch.from_file`). Where the
kernel offers Landlock, it refuses those (`landlock.py`).

This file runs in the worker's private namespace (see `worker.py`): it binds every
function it calls at load time, so that graded code replacing `os.path.realpath` or a
builtin changes nothing here.
"""

from __future__ import annotations

from collections.abc import Callable
from gc import disable as _gc_disable
from gc import enable as _gc_enable
from gc import isenabled as _gc_isenabled
from importlib.machinery import (
    BuiltinImporter,
    ExtensionFileLoader,
    FrozenImporter,
    ModuleSpec,
    SourceFileLoader,
    SourcelessFileLoader,
)
from linecache import getline
from os import O_APPEND, O_CREAT, O_RDWR, O_TRUNC, O_WRONLY, PathLike, fsdecode, listdir, sep
from os.path import basename, dirname, join, realpath
from sys import _getframe
from sys import modules as _modules
from sysconfig import get_paths
from threading import get_ident

GRADED, OWN, INSTALLED, SEE_THROUGH = "graded", "own", "installed", "see-through"

# Installed packages that graded code could use as a tool against the grading.
SEE_THROUGH_PACKAGES = frozenset(
    {"_pytest", "pytest", "pluggy", "unittest", "hypothesis", "_hypothesis_pytestplugin"}
)
# Standard-library modules that read frames for their own use and never hand them out.
FRAME_USERS = ("warnings.py", "linecache.py")

# The audit events the hook looks at, grouped by what they would let graded code do.
INTROSPECTION = frozenset(
    {
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "sys._getframe",
        "sys._current_frames",
        "sys._current_exceptions",
        "sys._getframemodulename",
    }
)
FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"})
# A function's defaults: a dict (or a tuple of objects) that can be changed in place.
DEFAULTS = frozenset({"__defaults__", "__kwdefaults__"})
TRACING = frozenset(
    {
        "sys.settrace",
        "sys.setprofile",
        "sys.addaudithook",
        "sys.monitoring.register_callback",
        "sys.monitoring.use_tool_id",
        "cpython.remote_debugger_script",
    }
)
PROCESSES = frozenset(
    {
        "os.fork",
        "os.forkpty",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.system",
        "subprocess.Popen",
        "os.kill",
        "os.killpg",
        "signal.pthread_kill",
        "os.setsid",
        "os.setpgid",
        "resource.setrlimit",
        "resource.prlimit",
        "os.startfile",
        "pty.spawn",
    }
)
FILE_CHANGES = frozenset(
    {
        "os.remove",
        "os.rename",
        "os.rmdir",
        "os.mkdir",
        "os.chmod",
        "os.chown",
        "os.link",
        "os.symlink",
        "os.truncate",
        "os.utime",
        "os.chflags",
        "os.lchflags",
        "os.setxattr",
        "os.removexattr",
        "shutil.rmtree",
        "shutil.move",
        "shutil.copyfile",
        "shutil.copytree",
        "shutil.copymode",
        "shutil.copystat",
        "shutil.chown",
        "os.putenv",
        "os.unsetenv",
        "sqlite3.connect",
        "mmap.__new__",
    }
)
CODE = frozenset({"compile", "code.__new__", "function.__new__", "exec"})
# What code that makes or runs code names, for each CODE event (see `_handed_over`).
CODE_CALLS = {
    "compile": ("compile", "exec", "eval"),  # exec and eval compile a str they are given
    "exec": ("exec", "eval"),
    "code.__new__": ("CodeType", "replace"),
    "function.__new__": ("FunctionType",),
}
# Code run, or made into a function: where no graded code is on the stack, code is graded
# code's when it is run for it (compiling is not enough: Python compiles a line of a file
# to point at it in a traceback that it prints, as an exception in a finalizer's).
RUN = frozenset({"exec", "function.__new__"})
# Code objects read from bytes: no file name in them is checked (`_code_claims`).
MARSHAL = frozenset({"marshal.loads", "marshal.load"})
PATCHES = frozenset({"object.__setattr__", "object.__delattr__"})
# Raised, for a build task, by the `__init_subclass__` that the worker gives torch.Tensor:
# a subclass's `__torch_function__` answers every torch call on its tensors, and the stage
# tests compare with torch directly (ninth round: `torch.isclose` answered True for a
# returned `nn.Parameter` subclass, and zeros earned all 5 points of task 6.1).
TENSOR_SUBCLASS = "grading.tensor_subclass"
# Raised by the worker's stand-in for TorchDynamo's `set_eval_frame`, with the callback:
# the sandbox installs it where TorchDynamo's own code asks, never while graded code
# runs (handled first in `hook`, armed or not). Python calls the callback with
# every frame it runs and it reads their locals unaudited: one of graded code's marked
# every test passed through the worker's own frames (twelfth round, 10 points on 3.1).
EVAL_FRAME = "grading.eval_frame"
DYNAMO = join(sep, "torch", "_dynamo", "")  # the folder of TorchDynamo's own code
# Modules that hand out frames or run code with no audit event, and that no grader or
# exercise needs (thirteenth round: greenlet's `gr_frame`, `_testcapi.eval_code_ex`, each
# 10 points on 3.1): refused to anyone while graded code may run, however they are loaded.
UNAUDITED_MODULES = frozenset(
    {
        "greenlet",
        "_testcapi",
        "_testinternalcapi",
        "_testbuffer",
        "_testmultiphase",
        "_testsinglephase",
        "_testimportmultiple",
        "_xxtestfuzz",
        "_ctypes_test",
    }
)
OTHER = (
    "ctypes.",
    "socket.",
    "urllib.",
    "http.",
    "ftplib.",
    "smtplib.",
    "imaplib.",
    "nntplib.",
    "poplib.",
    "telnetlib.",
    "webbrowser.",
    "_winapi.",
    "winreg.",
)
WATCHED = INTROSPECTION | TRACING | PROCESSES | FILE_CHANGES | CODE | PATCHES | MARSHAL
WATCHED |= {"open", TENSOR_SUBCLASS}
WRITE_FLAGS = O_WRONLY | O_RDWR | O_APPEND | O_CREAT | O_TRUNC
# In each staged folder of a grading run, what workers import: nobody writes there while
# graded code runs (on Linux, every exercise's worker imports the fork server's copy).
STAGED_CODE = frozenset({"minifx", "tests", "exercises", "conftest.py", "pyproject.toml"})
# Frames of comprehensions, which iterate what the function around them called.
COMPREHENSIONS = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"})
CONSTRUCTORS = frozenset({"__init__", "__new__"})
# How the names of the judge's temporary folders begin (judge.py names them so): a run's
# staged folders, and a fork server's.
RUN_FOLDER, SERVER_FOLDER = "minifx-grading-", "minifx-server-"
GRADING_FOLDERS = (RUN_FOLDER, SERVER_FOLDER)
# A process's memory, as files: the worker's holds the key that signs its report.
MEMORY_FILES = frozenset({"mem", "pagemap", "kcore"})
# The loaders with which the import system reads a module from a file (or from Python
# itself) that it compiles as it is: a loader of graded code's, or one of these given
# methods of graded code's, would hand it any source under any file name (`_importing`).
FILE_LOADERS = frozenset({SourceFileLoader, SourcelessFileLoader, ExtensionFileLoader})


class Sandbox:
    """The audit hook's settings, and the operations it refused.

    Args:
        graded: The folder of graded code, `exercises/`; or, for a build task, the list of
            graded files (the submission's minifx files that hold tasks).
        trusted: The folder that holds minifx and the grading, in `minifx/` and `tests/`.
        graded_modules: The names of graded code's modules, which it may change.
        regions: For a build task's graded files, the line ranges of the task regions: a
            function that starts in one is graded code, the file's other functions (the
            reference's, which the task did not carve) are minifx's own. A file missing
            here is graded as a whole.
        source: The instructor's copy the judge grades from (its minifx holds the build
            tasks' solutions), which no code of the worker reads.

    Attributes:
        violations: One line per refused operation, in order.
    """

    def __init__(
        self,
        graded: str | list[str],
        trusted: str,
        graded_modules: tuple[str, ...] = ("exercises",),
        regions: dict[str, list[tuple[int, int]]] | None = None,
        source: str = "",
    ) -> None:
        paths = get_paths()
        self.graded = (
            (_folder(graded),) if isinstance(graded, str) else tuple(realpath(g) for g in graded)
        )
        self.graded_modules = graded_modules
        self.task_mode = not isinstance(graded, str)
        self.regions = {realpath(path): spans for path, spans in (regions or {}).items()}
        self.root = _folder(trusted)
        self.staging = _folder(dirname(realpath(trusted)))  # the run's folder of staged folders
        # And every other grading's folders on this machine, those of other runs and of
        # fork servers (which stage minifx solved): only the worker's own may be read.
        others = _other_gradings(dirname(dirname(realpath(trusted))), (self.root, *self.graded))
        self.elsewhere = (self.staging, *others, *([_folder(source)] if source else []))
        self.own = (_folder(trusted, "minifx"), _folder(trusted, "tests"))  # minifx and the grading
        self.installed = tuple({_folder(paths["purelib"]), _folder(paths["platlib"])})
        self.readable = (
            *self.graded,
            self.own[0],
            *self.installed,
            *{_folder(paths["stdlib"]), _folder(paths["platstdlib"])},
        )
        self.violations: list[str] = []
        self._armed = False
        self._modules = _modules
        self._kinds: dict[str, str] = {}
        self._busy: set[int] = set()
        # TorchDynamo's `set_eval_frame`, which the worker hands over (worker.py).
        self.eval_frame_setter: Callable[[object], object] | None = None

    def arm(self) -> None:
        """Start applying the rules; until then only the worker's own code has run."""
        self._armed = True

    def hook(self, event: str, args: tuple) -> None:
        """The audit hook: add it with `sys.addaudithook(sandbox.hook)`."""
        if event == EVAL_FRAME:
            self._install_frame_callback(args[0])
            return
        if not self._armed:
            return
        if event == "import":  # `args[0]`: the module's name (from `_imp` too)
            if args[0].partition(".")[0] in UNAUDITED_MODULES:
                self._refuse(f"import {args[0]}: it hands out frames or runs code unseen")
            return
        if event == "object.__getattr__":  # frequent: only frames and defaults matter
            if args[1] not in FRAME_ATTRIBUTES and args[1] not in DEFAULTS:
                return
            event = "sys._getframe" if args[1] in FRAME_ATTRIBUTES else "defaults"
        elif event not in WATCHED and not event.startswith(OTHER):
            return
        self._enforce(event, args)

    def _install_frame_callback(self, callback) -> None:
        """Install TorchDynamo's frame callback for the worker's stand-in of
        `set_eval_frame`: a callback (not None or False, which turn Dynamo off) only where
        TorchDynamo's own code asks and no graded code runs, as when a grader calls a
        function that `torch.compile` made."""
        if self._armed and callback is not None and callback is not False:
            self._enforce(EVAL_FRAME, (callback,))
        self.eval_frame_setter(callback)

    def _enforce(self, event: str, args: tuple) -> None:
        """Raise `PermissionError` if the operation is refused, and note it."""
        me = get_ident()
        if me in self._busy:  # reading the stack below raises audit events of its own
            return
        self._busy.add(me)
        # No garbage collection while the hook looks away from this thread's events: one
        # would run graded code's finalizers (`__del__`) here, unchecked.
        collecting = _gc_isenabled()
        _gc_disable()
        try:
            refusal = self._refusal(event, args)
        finally:
            if collecting:
                _gc_enable()
            self._busy.discard(me)
        if refusal:
            self._refuse(refusal)

    def _refuse(self, refusal: str) -> None:
        self.violations.append(refusal)
        raise PermissionError(f"graded code may not {refusal}")

    # --- deciding ------------------------------------------------------------------

    def _refusal(self, event: str, args: tuple) -> str:
        """What graded code tried to do, if the operation is refused; '' if it is allowed."""
        stack = self._stack()
        at = next((i for i, (kind, _) in enumerate(stack) if kind != SEE_THROUGH), None)
        requester = None if at is None else stack[at][0]
        graded_below = any(kind == GRADED for kind, _ in stack)
        if event == TENSOR_SUBCLASS:
            return self._subclass_refusal(args, stack)
        if event == EVAL_FRAME:
            return self._frame_callback_refusal(stack, graded_below)
        if (
            event in CODE
            and (graded_below or (event in RUN and not self._asked(CODE_CALLS[event], stack, at)))
            and not self._importing(stack)
        ):
            self._made_for_graded(event, args)
        refused = self._refused_to_anyone(event, args, stack, requester, graded_below)
        if refused:
            return refused
        if event in MARSHAL:
            return ""  # what `_code_claims` let through: importing, or a package on its own
        if _trusted(requester, event, graded_below):
            return self._handed_over(event, args, stack, at)
        where = self._where(stack)
        if event in INTROSPECTION:
            if stack and stack[0][1].f_code.co_filename.endswith(FRAME_USERS):
                return ""  # warnings.warn finding its caller's module
            return f"inspect the running interpreter ({event}){where}"
        if event == "defaults":
            owner = getattr(args[0], "__module__", None)
            # A build task may read any function's signature: tracing one is what it does.
            if (
                requester == INSTALLED
                or self.task_mode
                or (isinstance(owner, str) and owner.split(".")[0] == "exercises")
            ):
                return ""
            return (
                f"read the defaults of {getattr(args[0], '__qualname__', '?')} ({args[1]}){where}"
            )
        if event in TRACING:
            return f"install a tracing or audit hook ({event}){where}"
        if event in PROCESSES:
            return f"start, stop or signal processes ({event}){where}"
        if event == "open":
            return self._open_refusal(args, requester, where)
        if event in FILE_CHANGES:
            return f"change files ({event}){where}"
        if event in PATCHES:
            return self._patch_refusal(args, where)
        if event in CODE:
            return self._code_refusal(event, args, stack, where)
        return f"use {event} (no network, ctypes or operating-system access while graded){where}"

    def _refused_to_anyone(
        self, event: str, args: tuple, stack: list, requester: str | None, graded_below: bool
    ) -> str:
        """Files no code of the worker writes or reads, and code it does not make, whoever
        asks: trusted code may be running a function that graded code handed it
        (`support.call_graded(open, ...)`, `call_graded(compile, ...)`)."""
        made = self._code_claims(event, args, stack, requester, graded_below)
        if made:
            return made + self._where(stack)
        changed = self._grading_code_changed(event, args)
        if changed:
            return f"write files that the grading runs ({event} {changed}){self._where(stack)}"
        elsewhere = self._read_elsewhere(event, args)
        if elsewhere:
            return (
                "read files outside exercises/, minifx and the installed packages "
                f"({elsewhere}, which is the grading's, whoever opens it){self._where(stack)}"
            )
        return ""

    def _code_claims(
        self, event: str, args: tuple, stack: list, requester: str | None, graded_below: bool
    ) -> str:
        """Code made at run time under the name of a file of minifx, the grading or an
        installed package, whose frames the hook would trust; or code read from bytes,
        whose file name nothing checks; or a function given the code of another file; ''
        if none of these. Only the import system makes such code, and an installed package
        on its own (TorchDynamo rewrites the functions it compiles): minifx's code cache
        compiles under any name it is given (`compile_once`), and a grader's
        `call_graded(compile, ...)` compiles whatever graded code hands it.
        """
        if event in MARSHAL:
            on_its_own = requester == INSTALLED and not graded_below
            if on_its_own or self._importing(stack):
                return ""
            return f"load code from bytes ({event})"
        if event == "object.__setattr__" and len(args) > 2 and args[1] == "__code__":
            had = getattr(getattr(args[0], "__code__", None), "co_filename", None)
            given = getattr(args[2], "co_filename", None)
            if given == had:
                return ""
            return (
                f"give {getattr(args[0], '__qualname__', '?')} the code of another file ({given})"
            )
        if event not in CODE:
            return ""
        filename = _code_filename(event, args)
        if self._classify(filename) not in (OWN, INSTALLED):
            return ""
        if (requester == INSTALLED and not graded_below) or self._importing(stack):
            return ""
        return f"make or run code that claims to be {filename} ({event})"

    def _grading_code_changed(self, event: str, args: tuple) -> str:
        """The file the operation writes into what a worker of this run imports, or ''."""
        if event == "open":
            path, mode, flags = (list(args) + [None, None, 0])[:3]
            writes = isinstance(mode, str) and any(c in mode for c in "wax+")
            paths = [path] if writes or (flags or 0) & WRITE_FLAGS else []
        else:
            paths = list(args) if event in FILE_CHANGES and not event.endswith("env") else []
        for path in paths:
            if isinstance(path, (str, bytes, PathLike)):
                path = realpath(fsdecode(path))
                parts = path[len(self.staging) :].split(sep)  # stage folder, then its file
                if path.startswith(self.staging) and len(parts) > 1 and parts[1] in STAGED_CODE:
                    return path
        return ""

    def _read_elsewhere(self, event: str, args: tuple) -> str:
        """The file of another worker's folder, of the instructor's copy, or of a process's
        memory, that the operation opens, whoever asks (torch's file opener reads any path
        it is given); or ''. The fork server for build tasks and the judge's folder hold
        minifx solved; the worker's memory, the key that signs its report."""
        path = args[0] if event == "open" and args else None
        if not isinstance(path, (str, bytes, PathLike)):
            return ""
        path = realpath(fsdecode(path))
        if path.startswith(("/proc/", "/dev/mem")) and basename(path) in MEMORY_FILES:
            return path
        if path.startswith((self.root, *self.readable)) or not path.startswith(self.elsewhere):
            return ""
        return path

    def _handed_over(self, event: str, args: tuple, stack: list, at: int) -> str:
        """Why an introspection that trusted code makes (or code made or run, or a published
        function's code or defaults changed, that minifx or the grading makes) is refused:
        it did not ask for it by name, so it is running a function that graded code handed
        it (`support.call_graded(gc.get_objects)`, `call_graded(exec, code)`,
        `map(f, iter(sys._getframe, None))`); or ''.

        The code that made the call must name it, and the trusted code that called into
        the standard library for it must name the function it called.
        """
        if event in INTROSPECTION:
            attribute = len(args) > 1 and isinstance(args[1], str)  # tb_frame, gi_frame, ...
            named = (args[1] if attribute else event.split(".")[-1],)
            what = f"inspect the running interpreter ({event})"
        elif stack[at][0] != OWN:
            return ""  # an installed package: it calls exec and eval by names of its own
        elif event in CODE and not self._importing(stack):
            named, what = CODE_CALLS[event], f"make or run code ({event})"
        elif event in PATCHES and self._published(args[0], getattr(args[0], "__module__", None)):
            named = (args[1], "setattr", "delattr")
            what = f"change {getattr(args[0], '__qualname__', '?')}.{args[1]} ({event})"
        else:
            return ""
        if self._asked(named, stack, at):
            return ""
        return f"{what} through code it handed over{self._where(stack)}"

    def _asked(self, named: tuple[str, ...], stack: list, at: int | None) -> bool:
        """Whether the trusted code at `stack[at]` asked for the operation by one of the
        names in `named`: the code that made the call names it, and the trusted code that
        called into the standard library for it names the function it called. Not so where
        a finalizer or a callback of graded code's runs while only trusted code is on the
        stack: `__del__` set to `functools.partial(exec, source)` and fired as torch frees
        an object (hole 1 of the instructor guide: 9.3 points on exercise 9.1's stub)."""
        if at is None:
            return False  # a thread or an atexit function: nobody trusted asked
        if not any(name in stack[0][1].f_code.co_names for name in named):
            return False
        return at == 0 or _calls(stack[at][1], stack[at - 1][1].f_code.co_name)

    def _made_for_graded(self, event: str, args: tuple) -> None:
        """Code made at run time while graded code runs is graded code: a function compiled
        under `<string>` and called by a grader must not pass for the standard library."""
        filename = _code_filename(event, args)
        if self._classify(filename) == SEE_THROUGH:
            self._kinds[filename] = GRADED

    def _stack(self) -> list[tuple[str, object]]:
        """`(kind, frame)` for each frame, innermost first, leaving out the hook's own."""
        frame = _getframe(1)
        while frame is not None and frame.f_code.co_filename == __file__:
            frame = frame.f_back
        stack = []
        while frame is not None:
            kind = self._kind(frame.f_code.co_filename)
            if kind == GRADED and self.regions:
                kind = self._region_kind(frame.f_code)
            stack.append((kind, frame))
            frame = frame.f_back
        return stack

    def _region_kind(self, code) -> str:
        """In a build task's file, graded for a function that starts in a task region."""
        spans = self.regions.get(realpath(code.co_filename))
        if spans is None:
            return GRADED
        return GRADED if any(start < code.co_firstlineno < end for start, end in spans) else OWN

    def _kind(self, filename: str) -> str:
        """Whose code a file holds: graded, own, installed or see-through (remembered per file)."""
        kind = self._kinds.get(filename)
        if kind is None:
            kind = self._kinds[filename] = self._classify(filename)
        return kind

    def _classify(self, filename: str) -> str:
        if not filename or filename.startswith("<"):
            return SEE_THROUGH  # generated code, frozen modules, <string>
        path = realpath(filename)
        if path.startswith(self.graded):
            return GRADED
        if path.startswith(self.own):
            return OWN
        for root in self.installed:
            if path.startswith(root):
                return (
                    SEE_THROUGH
                    if path[len(root) :].split(sep, 1)[0] in SEE_THROUGH_PACKAGES
                    else INSTALLED
                )
        return SEE_THROUGH

    def _open_refusal(self, args: tuple, requester: str | None, where: str) -> str:
        path, mode, flags = (list(args) + [None, None, 0])[:3]
        if not isinstance(path, (str, bytes, PathLike)):
            return ""  # a file descriptor that is already open
        path = realpath(fsdecode(path))
        if (isinstance(mode, str) and any(c in mode for c in "wax+")) or (flags or 0) & WRITE_FLAGS:
            return f"write files ({path}){where}"
        if requester == INSTALLED:
            return ""  # torch or numpy reading what it needs
        if path in ("/dev/null", "/dev/urandom") or path.startswith(self.readable):
            return ""
        return f"read files outside exercises/, minifx and the installed packages ({path}){where}"

    def _patch_refusal(self, args: tuple, where: str) -> str:
        target, name = args[0], args[1]
        owner = getattr(target, "__module__", None)
        if isinstance(owner, str) and any(
            owner == m or owner.startswith(m + ".") for m in self.graded_modules
        ):
            return ""  # graded code may change its own classes and functions
        if not self._published(target, owner):
            return ""  # made at run time and not yet in a module: a NamedTuple being built
        what = "class" if isinstance(target, type) else type(target).__name__
        return f"change {owner}.{target.__qualname__}.{name} (a {what} it did not define){where}"

    def _published(self, target, owner) -> bool:
        """Whether a module holds `target` under its qualified name, where anyone can use it."""
        found = self._modules.get(owner) if isinstance(owner, str) else None
        for part in getattr(target, "__qualname__", "<locals>").split("."):
            namespace = getattr(found, "__dict__", None)  # not getattr(found, part): no code runs
            found = (
                namespace.get(part)
                if isinstance(namespace, dict) or type(namespace).__name__ == "mappingproxy"
                else None
            )
        return found is target

    def _code_refusal(self, event: str, args: tuple, stack: list, where: str) -> str:
        """Code objects that would pass for ours: compiled, built or run under our file names."""
        filename = _code_filename(event, args)
        kind = self._classify(filename)
        # In a build task's file, code counts as graded or as the reference's by the line it
        # starts on: made under that file's name, it could claim any line.
        claims = (OWN, INSTALLED, GRADED) if self.regions else (OWN, INSTALLED)
        if kind not in claims or self._importing(stack):
            return ""
        return f"make or run code that claims to be {filename} ({event}){where}"

    def _importing(self, stack: list) -> bool:
        """Whether the import system is loading a module from a file of minifx, the grading,
        graded code, an installed package or the standard library, which it compiles and
        runs as it is. A loader of graded code's own (`importlib.abc.ExecutionLoader` with a
        `get_source` and a `get_filename`) made the import system compile any source under
        any file name, which the hook then took for the standard library's (eighth red-team
        round: exercise 3.1's stub earned 10 points with a finalizer made that way)."""
        for kind, frame in stack:
            if kind != SEE_THROUGH:
                return False
            if _loads_a_module(frame):
                return self._read_as_it_is(frame.f_locals.get("spec"))
        return False

    def _frame_callback_refusal(self, stack: list, graded_below: bool) -> str:
        """A frame callback installed while graded code runs, or by anything but
        TorchDynamo's own code calling the stand-in (`stack[0]`): a `functools.partial` of
        the stand-in set as a class's `__init__` had a grader call it (thirteenth round)."""
        caller = stack[1] if len(stack) > 1 else (None, None)
        by_dynamo = caller[0] == INSTALLED and DYNAMO in caller[1].f_code.co_filename
        if by_dynamo and not graded_below:
            return ""
        return (
            "install a frame callback of TorchDynamo's (set_eval_frame): it would be "
            f"called with every frame the worker runs{self._where(stack)}"
        )

    def _subclass_refusal(self, args: tuple, stack: list) -> str:
        """A subclass of torch.Tensor made while graded code runs (directly, or through a
        function it handed over), unless a module that Python's own loaders import as it
        is defines it (torch loading a part of itself on first use)."""
        name = getattr(args[0], "__qualname__", "?") if args else "?"
        refusal = (
            f"define a subclass of torch.Tensor ({name}): its `__torch_function__` would "
            f"answer the tests' comparisons{self._where(stack)}"
        )
        for kind, frame in stack:
            if kind == GRADED:
                return refusal
            if _loads_a_module(frame):
                return "" if self._read_as_it_is(frame.f_locals.get("spec")) else refusal
        return ""

    def _read_as_it_is(self, spec) -> bool:
        """Whether `spec` loads a module that Python holds (frozen or built in) or a file of
        ours, of graded code, of an installed package or of the standard library, by one
        of Python's own file loaders, none of whose methods graded code replaced. Nothing
        here runs code of the spec's or the loader's: only exact types and their dicts."""
        if type(spec) is not ModuleSpec:
            return False
        loader = vars(spec).get("loader")
        if loader is FrozenImporter or loader is BuiltinImporter:
            return True
        if type(loader) not in FILE_LOADERS:
            return False
        fields = vars(loader)
        path = fields.get("path")
        return (
            fields.keys() <= {"name", "path"}
            and isinstance(path, str)
            and realpath(path).startswith((*self.own, *self.readable))
        )

    def _where(self, stack: list) -> str:
        """` (exercises/x.py:12: <line>)`: the innermost graded frame."""
        frame = next((frame for kind, frame in stack if kind == GRADED), None)
        if frame is None:
            return " (from a thread or callback that graded code started)"
        filename, line = frame.f_code.co_filename, frame.f_lineno
        shown = (
            realpath(filename).removeprefix(self.root)
            if self.task_mode
            else f"exercises/{basename(filename)}"
        )
        return f" ({shown}:{line}: {getline(filename, line).strip()})"


def _trusted(requester: str | None, event: str, graded_below: bool) -> bool:
    """Whether minifx, the grading or an installed package asks (see `_handed_over` for
    what more an introspection needs)."""
    if requester == INSTALLED:
        return not graded_below
    # minifx and the grading never start processes, trace or load native code while graded
    # code runs: asked of them, it is a function that graded code handed them.
    return requester == OWN and not (
        event in PROCESSES or event in TRACING or event.startswith(OTHER)
    )


def _loads_a_module(frame) -> bool:
    """Whether `frame` is the import system's, running the module its local `spec` names."""
    code = frame.f_code
    return code.co_name == "_load_unlocked" and code.co_filename.startswith("<frozen importlib")


def _code_filename(event: str, args: tuple) -> str:
    """The file name that code compiled, built or run in a CODE event claims."""
    if event in ("compile", "code.__new__"):
        filename = args[1] if len(args) > 1 and isinstance(args[1], (str, bytes)) else ""
        return fsdecode(filename)
    return getattr(args[0], "co_filename", "") if args else ""  # function.__new__, exec


def _calls(frame, name: str) -> bool:
    """Whether the code of `frame` names `name` (for a comprehension: or its function does,
    which made what the comprehension iterates). A constructor is called by its class's
    name (`TypeVar("T")` runs `__init__`, which reads its caller's module name)."""
    if name in frame.f_code.co_names or name in CONSTRUCTORS:
        return True
    outer = frame.f_back
    return (
        frame.f_code.co_name in COMPREHENSIONS
        and outer is not None
        and outer.f_code.co_filename == frame.f_code.co_filename
        and name in outer.f_code.co_names
    )


def _other_gradings(temporary: str, own: tuple[str, ...]) -> list[str]:
    """The folders of gradings (the judge's temporary folders) in `temporary`, but those
    that hold a path of `own`."""
    try:
        names = listdir(temporary)
    except OSError:
        return []
    folders = [_folder(temporary, name) for name in names if name.startswith(GRADING_FOLDERS)]
    return [folder for folder in folders if not any(p.startswith(folder) for p in own)]


def _folder(*parts: str) -> str:
    """A folder's real path, ending in the separator so that prefixes match whole names."""
    return join(realpath(join(*parts)), "")
