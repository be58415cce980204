"""The grading worker: runs one grader in a process of its own and reports each test.

The judge (`tests/grading/judge.py`) starts one worker per exercise, as

    python -I <stage>/tests/grading/worker.py <grader path> <report fd>

in a staging folder that holds a copy of the trusted graders and minifx and the student's
`exercises/`. Student code runs in this process, so nothing here decides a score: the
worker only writes what it saw, as signed JSON lines on the file descriptor the judge
gave it, and the judge decides.

- The key that signs the records comes on standard input, which is read and closed before
  any student code is imported. Records are numbered, so none can be dropped or replayed
  unnoticed.
- `collected` lists the tests before any of them runs (graders load student code only
  inside tests), so a test that never reports is known to be missing.
- `start` precedes each test, so the judge can say which test was running when the
  process hung, crashed or exited.
- `result` is `passed` only when the test's body ran to the end: the outcome comes from
  the exception pytest caught, never from the report that student code could change.
- After each test the worker checks that the code it relies on (pytest's runner, torch's
  comparisons, the grader's helpers, the import guard) is still the code it started with;
  a test whose student code replaced any of it fails, and so do the ones after it.

Only the standard library and pytest are imported before the tests run.
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

STAGE = Path(__file__).resolve().parents[2]
# A failure message is for a person; a student's code must not flood the report with it.
MAX_MESSAGE = 20_000
# The test id the device fixture gives the CUDA case, the one skip the judge accepts.
CUDA_SKIP = "CUDA is not available"


class Reporter:
    """Writes numbered, signed records to the judge; the only way out of the worker."""

    def __init__(self, fd: int, key: bytes) -> None:
        self._fd, self._key, self._seq = fd, key, 0
        self._write, self._dumps, self._new = os.write, json.dumps, hmac.new

    def send(self, kind: str, **fields) -> None:
        record = {"seq": self._seq, "kind": kind, **fields}
        body = self._dumps(record, sort_keys=True)
        mac = self._new(self._key, body.encode(), hashlib.sha256).hexdigest()
        self._write(self._fd, (self._dumps({"body": body, "mac": mac}) + "\n").encode())
        self._seq += 1


class SolutionsBlocked:
    """An import hook: graded code may not import the reference solutions."""

    def find_spec(self, name, path=None, target=None):
        if name == "solutions" or name.startswith("solutions."):
            raise ImportError(f"`import {name}`: graded code may not import the reference solutions")
        return None


def drop_editable_finders() -> None:
    """Forget an editable install of minifx, so `import minifx` finds the staged copy."""
    sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]


# --- what student code must leave alone -------------------------------------------


def guarded_objects() -> dict[str, object]:
    """The callables and hooks the tests and this worker rely on, by a readable name."""
    import _pytest.python
    import _pytest.runner
    import pytest
    import torch

    guarded = {
        "_pytest.runner.CallInfo.from_call": _pytest.runner.CallInfo.__dict__["from_call"],
        "_pytest.runner.call_and_report": _pytest.runner.call_and_report,
        "_pytest.runner.runtestprotocol": _pytest.runner.runtestprotocol,
        "_pytest.python.pytest_pyfunc_call": _pytest.python.pytest_pyfunc_call,
        "sys.meta_path": sys.meta_path,
        "sys.exit": sys.exit,
        "os._exit": os._exit,
        "os.write": os.write,
    }
    for name in ("skip", "fail", "exit", "approx", "raises"):
        guarded[f"pytest.{name}"] = getattr(pytest, name)
    for name in ("equal", "allclose", "isclose", "all", "any", "testing.assert_close"):
        owner, attr = (torch.testing, "assert_close") if name.startswith("testing.") else (torch, name)
        guarded[f"torch.{name}"] = getattr(owner, attr)
    for name in ("__eq__", "__ne__", "__bool__", "equal", "allclose", "all", "item", "tolist"):
        guarded[f"torch.Tensor.{name}"] = getattr(torch.Tensor, name)
    for name in ("isinstance", "len", "str", "repr", "type", "getattr", "hasattr", "abs", "all", "any",
                 "sorted", "AssertionError", "__import__"):
        guarded[f"builtins.{name}"] = getattr(builtins, name)
    for method in ("send", "__init__"):
        guarded[f"Reporter.{method}"] = Reporter.__dict__[method]
    guarded["SolutionsBlocked.find_spec"] = SolutionsBlocked.__dict__["find_spec"]
    for method, function in vars(GradingPlugin).items():
        if callable(function):
            guarded[f"GradingPlugin.{method}"] = function
    return guarded


def module_functions(module) -> dict[str, object]:
    """A grader's (or its helpers') module-level functions and classes, to guard them too."""
    return {f"{module.__name__}.{name}": value for name, value in vars(module).items()
            if callable(value) and getattr(value, "__module__", None) == module.__name__}


def replaced(guarded: dict[str, object]) -> list[str]:
    """The guarded names whose object is not the one the worker started with."""
    import _pytest.python
    import _pytest.runner
    import pytest
    import torch

    owners = {"_pytest.runner": _pytest.runner, "_pytest.python": _pytest.python, "pytest": pytest,
              "torch.testing": torch.testing, "torch.Tensor": torch.Tensor, "torch": torch,
              "builtins": builtins, "sys": sys, "os": os, "Reporter": Reporter,
              "SolutionsBlocked": SolutionsBlocked,
              "GradingPlugin": GradingPlugin, **{m: sys.modules.get(m) for m in _guarded_modules()}}
    changed = []
    for name, original in guarded.items():
        if name == "sys.meta_path":
            # Other code may add import hooks; the guard against `solutions` must stay.
            blocked = any(isinstance(f, SolutionsBlocked) for f in sys.meta_path)
            current = original if blocked else None
        elif name == "_pytest.runner.CallInfo.from_call":
            current = _pytest.runner.CallInfo.__dict__.get("from_call")
        else:
            owner_name, _, attr = name.rpartition(".")
            owner = owners.get(owner_name)
            current = (owner.__dict__ if isinstance(owner, type) else vars(owner)).get(attr) if owner else None
            if isinstance(owner, type) and current is None:
                current = getattr(owner, attr, None)
        if current is not original:
            changed.append(name)
    return changed


def _guarded_modules() -> list[str]:
    return [name for name in sys.modules if name.startswith("tests.graders")]


# --- the pytest plugin -------------------------------------------------------------


class GradingPlugin:
    """Reports what pytest collected and how each test ended, through a `Reporter`."""

    def __init__(self, reporter: Reporter, grader: str) -> None:
        self.reporter, self.grader = reporter, grader
        self.guarded: dict[str, object] = {}
        self.tampered: list[str] = []
        self.outcomes: dict[str, tuple[str, str]] = {}

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.reporter.send("collect_error", message=str(report.longrepr)[-MAX_MESSAGE:])

    def pytest_collection_finish(self, session) -> None:
        import torch

        self.guarded = guarded_objects()
        for name in _guarded_modules():
            self.guarded.update(module_functions(sys.modules[name]))
        self.reporter.send("collected", tests=[item.nodeid for item in session.items],
                           cuda=bool(torch.cuda.is_available()),
                           grader_sha256=hashlib.sha256((STAGE / self.grader).read_bytes()).hexdigest())

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        self.reporter.send("start", test=nodeid)

    def pytest_runtest_makereport(self, item, call) -> None:
        # The outcome is decided from the exception pytest caught in each phase; the
        # report objects pass through code (hooks, plugins) that student code could reach.
        outcome = self.outcomes.get(item.nodeid, ("passed", ""))
        if outcome[0] != "passed":
            return
        if call.excinfo is not None:
            self.outcomes[item.nodeid] = _outcome(call.excinfo, call.when)
        elif call.when == "call":
            self.outcomes[item.nodeid] = ("passed", "")

    def pytest_runtest_logfinish(self, nodeid, location) -> None:
        outcome, message = self.outcomes.get(nodeid, ("failed", "the test did not run to its end"))
        if not self.tampered:
            self.tampered = replaced(self.guarded)
        if self.tampered:
            outcome, message = "failed", _tampered_message(self.tampered)
        self.reporter.send("result", test=nodeid, outcome=outcome, message=message[:MAX_MESSAGE])

    def pytest_sessionfinish(self, session, exitstatus) -> None:
        self.reporter.send("finished")


def _outcome(excinfo, when: str) -> tuple[str, str]:
    """`(outcome, message)` for a test phase that raised."""
    import pytest

    exc = excinfo.value
    skipped = excinfo.errisinstance(pytest.skip.Exception) or type(exc).__name__ == "SkipTest"
    if skipped:
        reason = str(getattr(exc, "msg", None) or exc)
        return "skipped", reason
    if excinfo.errisinstance(pytest.exit.Exception):
        return "failed", f"pytest.exit() was called during the test's {when}: graded code may not stop the run"
    if isinstance(exc, KeyboardInterrupt):
        return "failed", f"KeyboardInterrupt during the test's {when}"
    message = _message(exc)
    where = _student_line(excinfo.tb)
    if where and not isinstance(exc, AssertionError):
        message = f"{message}\n  raised at {where}"
    return "failed", message


def _message(exc: BaseException) -> str:
    """The exception's message; for `assert cond, msg` only `msg`, not pytest's rewrite."""
    text = str(exc)
    if type(exc).__name__ == "Failed":  # pytest.fail(message): the grader's own message
        return text
    if isinstance(exc, AssertionError):
        lines = text.splitlines()
        # pytest's assertion rewriting appends "assert <expr>" after the message ...
        cut = next((i for i, line in enumerate(lines) if i and line.startswith("assert ")), len(lines))
        # ... and indents the message's continuation lines by two spaces.
        kept = lines[:1] + [line.removeprefix("  ") for line in lines[1:cut]]
        return "\n".join(kept) or "assertion failed (the grader gave no message)"
    return f"{type(exc).__name__}: {text}"


def _student_line(tb) -> str:
    """`exercises/x.py:12: <source>` for the last frame in the graded code, or ''."""
    frames = [f for f in traceback.extract_tb(tb) if Path(f.filename).parent.name == "exercises"]
    if not frames:
        return ""
    frame = frames[-1]
    return f"exercises/{Path(frame.filename).name}:{frame.lineno}: {(frame.line or '').strip()}"


def _tampered_message(names: list[str]) -> str:
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return (f"the graded code replaced {shown}, which the grading relies on; graded code may not "
            "patch pytest, torch's comparisons, the graders or the grading worker, so this test "
            "and the ones after it earn nothing")


def main() -> int:
    grader, fd = sys.argv[1], int(sys.argv[2])
    key = bytes.fromhex(sys.stdin.readline().strip())
    sys.stdin.close()
    os.chdir(STAGE)
    sys.path.insert(0, str(STAGE))
    drop_editable_finders()
    sys.meta_path.insert(0, SolutionsBlocked())
    reporter = Reporter(fd, key)
    del key

    import pytest

    args = ["-q", "--tb=no", "-p", "no:cacheprovider", "-p", "no:randomly", "--impl=exercises",
            "--rootdir", str(STAGE), "-c", str(STAGE / "pyproject.toml"), "-o", "addopts=", grader]
    code = pytest.main(args, plugins=[GradingPlugin(reporter, grader)])
    return 0 if code in (0, 1) else int(code)


if __name__ == "__main__":
    sys.exit(main())
