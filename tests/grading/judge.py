"""The judge: grades each exercise in a fresh, time- and memory-limited process.

The judge never imports student code. It reads what it trusts (the graders, minifx,
the manifest) into memory before any student code runs, reads each submitted module for
what graded code may not do (`scan.py`), stages a private copy of the trusted files and,
for each exercise, of the student's `exercises/`, runs a worker there (`worker.py`,
forked by `forkserver.py` where the system allows), and decides the points from the
worker's signed records:

- a test counts as passed only when its `passed` record came, after its `start`;
- a test that never reported (the process hung, crashed, exited or was stopped) failed;
- a skip counts for nothing, except the device fixture's `[cuda]` case on a machine
  without CUDA, which leaves the test out of the exercise's share of points;
- exit codes from the worker mean nothing.

An exercise whose process timed out, ran out of memory or exited gets 0 with a message
that says so, and every other exercise is still graded.
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import hashlib
import hmac
import itertools
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tests.grading import build
from tests.grading.forkserver import ForkServer, ForkServerError
from tests.grading.manifest import ROOT, Exercise, GradingError
from tests.grading.sandbox import RUN_FOLDER, SERVER_FOLDER
from tests.grading.scan import findings
from tests.grading.worker import SCRATCH

# What the judge reads from the instructor's copy, never from the submission.
TRUSTED = ("conftest.py", "pyproject.toml", "minifx", "tests")
WORKER = "tests/grading/worker.py"
# Of that, what a worker's folder holds: minifx, the graders and what they import, and
# the worker itself; not the judge, nor the project's other tests (graded code could call
# whatever is there, and the sandbox trusts that code).
STAGED = {
    "conftest.py",
    "pyproject.toml",
    "tests/__init__.py",
    "tests/conftest.py",
    "tests/models.py",
    WORKER,
    "tests/grading/sandbox.py",
    "tests/grading/guard.py",
    "tests/grading/landlock.py",
    "tests/grading/forkserver.py",
}
STAGED_FOLDERS = ("minifx/", "tests/graders/")
# What the judge reads of a worker: records of at most a megabyte, 64 MB in all, and the
# end of its output.
MAX_RECORD, MAX_REPORT, MAX_OUTPUT = 1024**2, 64 * 1024**2, 64 * 1024
CUDA_SKIP = "CUDA is not available"
# Set in each worker's environment, so that processes it leaves behind can be found.
MARKER = "MINIFX_GRADING_RUN"
OUTPUT_LINES = 15
# The worker's scratch folder (SCRATCH, in its staged folder) is its only writable place.
# Each file is capped (RLIMIT_FSIZE), not their number: the judge measures them.
# How often the judge measures the scratch folder, in turns of its wait (0.05 s each).
DISK_EVERY = 10
# How often it looks for the processes of a worker's group, which reads all of /proc; it
# reads the memory of those it knows every turn.
MEMBERS_EVERY = 5


@dataclass(frozen=True)
class Limits:
    """Per exercise: wall-clock seconds, resident memory in bytes, parallel workers, and
    bytes of files in the worker's scratch folder."""

    timeout: float = 60.0
    memory: int = 4 * 1024**3
    jobs: int = max(1, min(4, os.cpu_count() or 1))
    disk: int = 1024**3


@dataclass
class TestResult:
    """The outcome of one grader test: `passed`, `failed` or `skipped` (CUDA only), and why."""

    nodeid: str
    outcome: str = "failed"
    message: str = ""


@dataclass
class Score:
    """One exercise's grade, with the reason when it earns nothing as a whole."""

    exercise: Exercise
    tests: list[TestResult] = field(default_factory=list)
    problem: str = ""
    seconds: float = 0.0

    @property
    def ran(self) -> list[TestResult]:
        return [t for t in self.tests if t.outcome != "skipped"]

    @property
    def passed(self) -> int:
        return sum(t.outcome == "passed" for t in self.tests)

    @property
    def per_test(self) -> float:
        return self.exercise.points / len(self.ran) if self.ran else 0.0

    @property
    def earned(self) -> float:
        return 0.0 if self.problem else self.passed * self.per_test

    @property
    def full(self) -> bool:
        return not self.problem and bool(self.ran) and self.passed == len(self.ran)


# --- what the judge trusts ---------------------------------------------------------


def snapshot(root: Path = ROOT) -> dict[str, bytes]:
    """The trusted files, read into memory: `{relative path: bytes}`."""
    files = {}
    for name in TRUSTED:
        path = root / name
        paths = [path] if path.is_file() else sorted(path.rglob("*")) if path.is_dir() else []
        for file in paths:
            if file.is_file() and "__pycache__" not in file.parts and file.suffix != ".pyc":
                files[file.relative_to(root).as_posix()] = file.read_bytes()
    if WORKER not in files:
        raise GradingError(f"{root / WORKER} is missing: the grading tool is incomplete")
    return files


def submitted_modules(exercises: list[Exercise], folder: Path) -> dict[str, bytes]:
    """The submission's `<module>.py` files that the manifest names, by module name.

    A file is looked for as `exercises/<module>.py`, then `<module>.py`, then anywhere
    below `folder`; nothing else of the submission is read.
    """
    found = {}
    for module in sorted({e.module for e in exercises}):
        name = f"{module}.py"
        candidates = itertools.chain(
            [folder / "exercises" / name, folder / name],
            build.files_below(folder, name),
        )
        path = next((p for p in candidates if p.is_file() and build.inside(p, folder)), None)
        if path is not None:
            found[module] = build.read_submitted(path)
    return found


def precheck(exercise: Exercise, modules: dict[str, bytes], trusted: dict[str, bytes]) -> str:
    """Why an exercise cannot be graded at all, in one sentence, or ''."""
    path = f"exercises/{exercise.module}.py"
    if exercise.grader not in trusted:
        return f"grader missing: {exercise.grader} does not exist"
    if exercise.module not in modules:
        return f"{path} is not in the submission: submit it under that name"
    source = modules[exercise.module]
    if not source.strip():
        return f"{path} is empty: start from the stub and write the functions it asks for"
    if problem := build.too_large(path, source):
        return problem
    try:
        compile(source, path, "exec", dont_inherit=True)
        broken = findings(source)
    except (SyntaxError, ValueError) as exc:
        where = f" at line {exc.lineno}" if getattr(exc, "lineno", None) else ""
        reason = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        return f"{path} is not valid Python{where}: {reason}"
    except (RecursionError, MemoryError, OverflowError):
        return f"{path} is nested too deeply for Python to read: write it as ordinary code"
    if broken:
        more = f"\n... and {len(broken) - 5} more" if len(broken) > 5 else ""
        return (
            f"{path} is not run, because it does what graded code may not:\n"
            + "\n".join(broken[:5])
            + more
        )
    return ""


def grader_tests(source: bytes) -> set[str]:
    """The names of the test functions a grader defines.

    Raises:
        SyntaxError: If the grader is not valid Python.
    """
    tree = ast.parse(source)
    return {
        n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")
    }


# --- one worker --------------------------------------------------------------------


@dataclass
class Run:
    """What one worker process did: its verified records and how it ended."""

    records: list[dict] = field(default_factory=list)
    forged: str = ""
    ended: str = "finished"  # or "timeout", "memory", "disk", "exit" (ended before pytest did)
    returncode: int = 0
    output: str = ""
    seconds: float = 0.0


def stage(base: Path, trusted: dict[str, bytes] | None, modules: dict[str, bytes] | None) -> Path:
    """A private folder with the trusted files a worker needs (unless `trusted` is None:
    the fork server has them) and the student's `exercises/` (unless `modules` is None: the
    fork server's own folder has none, so that `exercises` is only ever the student's)."""
    folder = Path(tempfile.mkdtemp(prefix="stage-", dir=base))
    for relative, data in (trusted or {}).items():
        if not _staged(relative):
            continue
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    if modules is None:
        return folder
    exercises = folder / "exercises"
    exercises.mkdir(exist_ok=True)
    (exercises / "__init__.py").write_bytes(b"")
    for module, data in modules.items():
        (exercises / f"{module}.py").write_bytes(data)
    return folder


def _staged(relative: str) -> bool:
    """Whether a worker's folder holds this trusted file (STAGED)."""
    return relative in STAGED or relative.startswith(STAGED_FOLDERS)


def stage_task(
    base: Path, trusted: dict[str, bytes], package: dict[str, bytes], exercise: Exercise
) -> Path:
    """A private folder for one build task's worker: the trusted files a worker needs, the
    task's stage tests and their helpers, and minifx with the submission's task files."""
    folder = Path(tempfile.mkdtemp(prefix="task-", dir=base))
    tests = set(exercise.grader.split(";"))
    for relative, data in [*trusted.items(), *package.items()]:  # package: build.importable's
        helper = (
            relative.startswith("tests/")
            and not relative.startswith("tests/grading/")
            and not Path(relative).name.startswith("test_")
        )
        if relative in STAGED or relative.startswith("minifx/") or relative in tests or helper:
            path = folder / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    return folder


def worker_environment(run_token: str, jobs: int) -> dict[str, str]:
    """The worker's environment: ours, less what would change Python or leak the judge's."""
    drop = ("PYTHON", "COV_CORE", "COVERAGE", "PYTEST", "GITHUB_", "RUNNER_", "ACTIONS_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    threads = str(max(1, (os.cpu_count() or 1) // jobs))
    env.update(
        {
            MARKER: run_token,
            "MINIFX_GRADING_SOURCE": str(ROOT),  # what the worker's sandbox keeps it from reading
            "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
            "OMP_NUM_THREADS": threads,
            "MKL_NUM_THREADS": threads,
            # Graded code runs on the CPU on every machine, so a grade does not depend on
            # the grader's GPU: the `[cuda]` cases are left out as where there is none.
            # (The kernel limits refuse the GPU's device files too, where Landlock is.)
            "CUDA_VISIBLE_DEVICES": "",
        }
    )
    return env


def run_worker(
    folder: Path,
    grader: str,
    limits: Limits,
    env: dict[str, str],
    server: ForkServer | None = None,
    task: tuple[str, str] = ("", ""),
) -> Run:
    """Run the worker on one grader and the `exercises/` in `folder`, forked by `server`
    (or started afresh, with the trusted files staged in `folder`); kill it at the time or
    memory limit."""
    key = secrets.token_bytes(32)
    read_end, write_end = os.pipe()
    log = open(
        folder / "worker-output.txt", "w+b"
    )  # not `with`: read and closed below, after the worker ends
    started = time.monotonic()
    try:
        group, returncode = _start(folder, grader, env, server, key, write_end, log, task)
    finally:
        os.close(write_end)  # the worker holds the only other copy: its end is our EOF
    lines: list[bytes] = []
    reader = threading.Thread(target=_read_lines, args=(read_end, lines), daemon=True)
    reader.start()
    run = Run()
    run.ended = _wait(returncode, group, limits, started, folder / SCRATCH)
    _kill_group(group)
    run.returncode = _final_returncode(returncode)
    reader.join(timeout=5)
    run.seconds = time.monotonic() - started
    log.seek(max(0, log.seek(0, os.SEEK_END) - MAX_OUTPUT))
    run.output = log.read().decode("utf-8", "replace")
    log.close()
    run.records, run.forged = verify(lines, key)
    if run.ended == "finished" and not any(r["kind"] == "finished" for r in run.records):
        run.ended = "exit"  # the process ended before pytest did: os._exit, a crash, a signal
    return run


def _start(
    folder: Path,
    grader: str,
    env: dict[str, str],
    server: ForkServer | None,
    key: bytes,
    write_end: int,
    log,
    task: tuple[str, str] = ("", ""),
) -> tuple[int, Callable[[], int | None]]:
    """Start a worker: its process group, and a function that gives its returncode once it ended.
    For a build task, `task` is its id and its graded files, comma-separated."""
    if server is not None:
        request, pid = server.spawn(grader, folder, key, write_end, log.fileno(), task)
        return pid, lambda: server.returncode(request)
    process = subprocess.Popen(
        [
            sys.executable,
            "-I",
            str(folder / WORKER),
            grader,
            str(write_end),
            *(task if task[0] else ()),
        ],
        cwd=folder,
        env=env,
        stdin=subprocess.PIPE,
        stdout=log,
        stderr=subprocess.STDOUT,
        pass_fds=(write_end,),
        start_new_session=True,
    )
    try:
        process.stdin.write(key.hex().encode() + b"\n")
        process.stdin.close()
    except OSError:
        pass  # the worker is already gone; its records (none) say so
    return process.pid, process.poll


def _final_returncode(returncode: Callable[[], int | None]) -> int:
    """The returncode of a worker that was just killed, once its parent has seen it end."""
    deadline = time.monotonic() + 10
    while (code := returncode()) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return -signal.SIGKILL if code is None else code


def _read_lines(fd: int, lines: list[bytes]) -> None:
    """Read the worker's records; past the limits, keep reading but keep nothing more."""
    total = 0
    with os.fdopen(fd, "rb") as pipe:
        while line := pipe.readline(MAX_RECORD):
            total += len(line)
            if total <= MAX_REPORT:
                lines.append(line)
            elif lines[-1] != b"too much":
                lines.append(b"too much")  # fails verification: no worker writes this much


def _wait(
    returncode: Callable[[], int | None],
    group: int,
    limits: Limits,
    started: float,
    scratch: Path | None = None,
) -> str:
    """Wait for the worker; `finished` when it ended, `timeout` / `memory` / `disk` if we
    stopped it (`disk`: its scratch folder holds more than `limits.disk` bytes)."""
    turn, members, in_files = 0, [group], 0
    while returncode() is None:
        if time.monotonic() - started > limits.timeout:
            return "timeout"
        if turn % MEMBERS_EVERY == 0:
            members = _group_members(group)
            in_files = _in_memory_files(members, group)
        if _resident(members, group) + in_files > limits.memory:
            return "memory"
        turn += 1
        if scratch is not None and turn % DISK_EVERY == 0 and _written(scratch, limits.disk):
            return "disk"
        time.sleep(0.05)
    return "finished"


def _written(folder: Path, most: int) -> bool:
    """Whether the files beneath `folder` take more than `most` bytes of disk, each entry
    counted as a block at least (many empty files use up the disk's entries too). Stops
    counting past `most`."""
    total, todo = 0, [folder]
    while todo and total <= most:
        try:
            with os.scandir(todo.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        todo.append(entry.path)
                    total += 4096 + entry.stat(follow_symlinks=False).st_blocks * 512
        except OSError:
            continue  # removed meanwhile, or not made yet
    return total > most


def _group_members(group: int) -> list[int]:
    """The processes of a process group (none where /proc is missing). This reads every
    process's stat file, a few milliseconds: `_wait` does it every `MEMBERS_EVERY` turns."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        if _in_group(_stat_fields(stat), group):
            members.append(int(stat.parent.name))
    return members


def _resident(members: list[int], group: int) -> int:
    """Resident bytes of those `members` that are still in the process group (a pid that
    ended may have been given to another process since)."""
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
    total = 0
    for pid in members:
        fields = _stat_fields(Path(f"/proc/{pid}/stat"))
        if _in_group(fields, group):
            total += int(fields[21]) * page
    return total


def _in_group(fields: list[str], group: int) -> bool:
    """Whether a process, by the fields of its stat file, is still in the process group."""
    return fields[2:3] == [str(group)]


def _in_memory_files(members: list[int], group: int) -> int:
    """Bytes in the files that live in memory only (`os.memfd_create`) which `members` hold
    open: memory that no process's resident size counts until it maps the file, and that
    graded code can fill with `os.write`, which Python does not audit. (A file also mapped
    counts twice; nothing that grading runs maps one.)"""
    total = 0
    for pid in members:
        if not _in_group(_stat_fields(Path(f"/proc/{pid}/stat")), group):
            continue
        try:
            with os.scandir(f"/proc/{pid}/fd") as descriptors:
                for descriptor in descriptors:
                    with contextlib.suppress(OSError):  # closed meanwhile
                        if os.readlink(descriptor.path).startswith("/memfd:"):
                            total += os.stat(descriptor.path).st_blocks * 512
        except OSError:
            continue  # ended meanwhile
    return total


def _stat_fields(stat: Path) -> list[str]:
    """The fields of a `/proc/<pid>/stat` after the command's name (the state is the first,
    the process group the third), or [] if the process is gone."""
    try:
        return stat.read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _kill_group(group: int) -> None:
    try:
        os.killpg(group, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def stop_now(pool: ThreadPoolExecutor, tokens: set[str]) -> None:
    """Grading was interrupted: start no more exercises, and kill every process of the run,
    fork servers included. Each thread of the pool waits for its worker, so killing the
    workers is what lets the pool, and so the judge, end now instead of at their time
    limits; a killed server is replaced by the next grading (`kept_server`)."""
    pool.shutdown(wait=False, cancel_futures=True)
    for token in tokens:
        kill_leftovers(token)


def kill_leftovers(run_token: str, spare: set[int] = frozenset()) -> None:
    """Kill processes a worker left behind outside its group (found by their environment),
    but the `spare` ones: fork servers kept for the next grading."""
    needle = f"{MARKER}={run_token}".encode()
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            pid = int(environ.parent.name)
            if pid not in spare and needle in environ.read_bytes().split(b"\0"):
                os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError):
            continue


def verify(lines: list[bytes], key: bytes) -> tuple[list[dict], str]:
    """The records whose signature and number check out, and why the rest do not."""
    records = []
    for number, line in enumerate(lines):
        try:
            envelope = json.loads(line)
            body, mac = envelope["body"], envelope["mac"]
            want = hmac.new(key, body.encode(), hashlib.sha256).hexdigest()
            record = json.loads(body)
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
            return records, f"record {number} of the report is not one the grading worker wrote"
        if not hmac.compare_digest(want, str(mac)) or record.get("seq") != number:
            return records, f"record {number} of the report is not signed by the grading worker"
        records.append(_printable(record))
    return records, ""


def _printable(value):
    """`value` with each lone surrogate in its strings replaced by `?`: graded code's
    messages may hold one (`"\\ud800"`), which no UTF-8 output can print."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, list):
        return [_printable(item) for item in value]
    if isinstance(value, dict):
        return {key: _printable(item) for key, item in value.items()}
    return value


# --- from records to a score -------------------------------------------------------


def judge(
    exercise: Exercise, run: Run, trusted: dict[str, bytes], limit: Limits, expected: set[str]
) -> Score:
    """The exercise's score from what its worker reported and how it ended."""
    score = Score(exercise, seconds=run.seconds)
    if run.forged:
        score.problem = (
            f"{run.forged}: graded code wrote into the grading report, so the "
            "exercise earns nothing"
        )
        return score
    collected = next((r for r in run.records if r["kind"] == "collected"), None)
    errors = [r["message"] for r in run.records if r["kind"] == "collect_error"]
    if collected is None or errors:
        score.problem = (
            f"could not collect {exercise.grader}:\n{_collect_failure(run, errors, limit)}"
        )
        return score
    problem = _check_collection(exercise, collected, trusted, expected)
    if problem:
        score.problem = problem
        return score
    score.tests = _results(collected, run.records)
    running = _running(run.records)
    unreported = any(t.outcome == "failed" and not t.message for t in score.tests)
    if run.ended != "finished" or running or unreported:
        score.problem = _stopped(run, running, limit)
        for test in score.tests:
            if test.outcome == "failed" and not test.message:
                test.message = "not run: " + score.problem
    return score


def _collect_failure(run: Run, errors: list[str], limit: Limits) -> str:
    """Why collection did not finish: pytest's error, else how the worker ended (a worker
    stopped at the time limit, say, while the grader's imports ran), else its output."""
    if errors:
        return _tail(errors[0])
    if run.ended != "finished":
        return _stopped(run, "", limit)
    return _tail(run.output)


def _check_collection(
    exercise: Exercise, collected: dict, trusted: dict[str, bytes], expected: set[str]
) -> str:
    want = (
        build.tests_sha256(exercise.grader, trusted)
        if exercise.kind == "task"
        else hashlib.sha256(trusted[exercise.grader]).hexdigest()
    )
    if collected.get("grader_sha256") != want:
        return f"{exercise.grader} was changed before it ran: graded code may not edit the graders"
    names = {nodeid.split("::")[-1].split("[")[0] for nodeid in collected["tests"]}
    missing = sorted(expected - names)
    if missing:
        return f"tests of {exercise.grader} were not collected: {', '.join(missing)}"
    if not collected["tests"]:
        return (
            f"no tests collected from {exercise.grader}; a grader needs at least one test_ function"
        )
    return ""


def _results(collected: dict, records: list[dict]) -> list[TestResult]:
    started, results = set(), {}
    for record in records:
        if record["kind"] == "start":
            started.add(record["test"])
        elif (
            record["kind"] == "result"
            and record["test"] in started
            and record["test"] not in results
        ):
            results[record["test"]] = record
    tests = []
    for nodeid in collected["tests"]:
        record = results.get(nodeid)
        if _is_cuda_case(nodeid) and not collected["cuda"] and _outcome(record) != "passed":
            # Skipped by the device fixture where there is no CUDA: so it counts for
            # nothing in a run stopped before it, too, as in a full run.
            tests.append(TestResult(nodeid, "skipped", CUDA_SKIP))
        elif record is None:
            tests.append(TestResult(nodeid))
        elif record["outcome"] == "skipped":
            tests.append(
                TestResult(
                    nodeid,
                    "failed",
                    f"the test was skipped ({record['message']}); a skipped test earns "
                    "nothing, and graded code may not skip tests",
                )
            )
        else:
            tests.append(
                TestResult(
                    nodeid,
                    record["outcome"] if record["outcome"] == "passed" else "failed",
                    str(record["message"]),
                )
            )
    return tests


def _outcome(record: dict | None) -> str:
    return record["outcome"] if record is not None else "not run"


def _is_cuda_case(nodeid: str) -> bool:
    # The device fixture's case is "cuda" among the test's parameter ids: test_x[cuda-relu].
    return "cuda" in nodeid.partition("[")[2].rstrip("]").split("-")


def _running(records: list[dict]) -> str:
    """The test that started and never reported a result, if any."""
    done = {r["test"] for r in records if r["kind"] == "result"}
    open_tests = [r["test"] for r in records if r["kind"] == "start" and r["test"] not in done]
    return open_tests[-1] if open_tests else ""


def _stopped(run: Run, running: str, limits: Limits) -> str:
    during = f" while running {running.split('::')[-1]}" if running else ""
    if run.ended == "timeout":
        return (
            f"timed out after {limits.timeout:g} s{during}: look for a loop that never ends "
            "(or code far slower than it should be)"
        )
    if run.ended == "memory":
        return f"used more than {limits.memory / 1024**3:g} GiB of memory{during}, and was stopped"
    if run.ended == "disk":
        return (
            f"wrote more than {limits.disk / 1024**3:g} GiB of files{during}, and was stopped: "
            "graded code may write only small temporary files"
        )
    if run.ended == "exit":
        how = (
            f"killed by signal {-run.returncode}"
            if run.returncode < 0
            else f"exited with code {run.returncode}"
        )
        return (
            f"the grading process {how}{during}: graded code may not call os._exit or "
            f"sys.exit, or crash Python\n{_tail(run.output)}"
        )
    return (
        f"the run stopped{during} (pytest.exit(), KeyboardInterrupt or an exit from graded code), "
        f"so the remaining tests never ran\n{_tail(run.output)}"
    )


def _tail(text: str) -> str:
    """The last lines of a long output, where the exception message is."""
    return "\n".join(text.strip().splitlines()[-OUTPUT_LINES:])


# --- all exercises -----------------------------------------------------------------


def grade(
    exercises: list[Exercise],
    modules: dict[str, bytes],
    limits: Limits = Limits(),
    trusted: dict[str, bytes] | None = None,
    package: dict[str, bytes] | None = None,
) -> list[Score]:
    """Grade each exercise or build task in its own worker, `limits.jobs` at a time; one
    `Score` each. `package` holds the submission's minifx task files (`{path: bytes}`)."""
    trusted = snapshot() if trusted is None else trusted
    run_token = secrets.token_hex(16)
    env = worker_environment(run_token, limits.jobs)
    base = Path(tempfile.mkdtemp(prefix=RUN_FOLDER))
    # Reading code (compile, ast) happens here, in one thread: CPython 3.11's parser
    # breaks when several threads use it at once.
    package = package or {}
    checks = {e.key: _checks(e, modules, trusted, package) for e in exercises}
    if any(e.kind == "task" for e in exercises):
        package = build.importable(package, trusted)
    servers: dict[str, Kept | None] = {"exercise": None, "task": None}
    try:
        for kind in servers:
            if any(not checks[e.key][0] and e.kind == kind for e in exercises):
                # The server for build tasks imports no minifx: it gets none (the trusted
                # minifx is the solved one, and its workers' sandbox keeps them out of it too).
                files = trusted if kind == "exercise" else _without_minifx(trusted)
                servers[kind] = kept_server(kind, files, env)
        with ThreadPoolExecutor(max_workers=limits.jobs) as pool:
            # The later exercises take longest (whole models, torch.compile): started
            # first, they end while the short ones fill the other workers.
            futures = {
                e.key: pool.submit(
                    _grade_one,
                    e,
                    *checks[e.key],
                    modules if e.kind == "exercise" else package,
                    trusted,
                    limits,
                    env,
                    base,
                    kept.server if (kept := servers[e.kind]) else None,
                )
                for e in reversed(exercises)
            }
            try:
                scores = [futures[e.key].result() for e in exercises]
            except BaseException:  # Ctrl-C, or SIGTERM through the command line (cli.py)
                stop_now(pool, {run_token, *(kept.token for kept in servers.values() if kept)})
                raise
    finally:
        # A kept server's workers have the token of the run that started the server.
        used = [kept for kept in servers.values() if kept is not None]
        spare = {kept.server.process.pid for kept in used}
        for token in {run_token, *(kept.token for kept in used)}:
            kill_leftovers(token, spare)
        shutil.rmtree(base, ignore_errors=True)
    return scores


@dataclass
class Kept:
    """A fork server kept for later gradings in this process, with its folder and the token
    its workers have in their environment (that of the run that started it)."""

    server: ForkServer
    folder: Path
    token: str

    def close(self) -> None:
        self.server.close()
        shutil.rmtree(self.folder, ignore_errors=True)


# The fork servers this process keeps, by kind and by what their workers run with (the
# staged files and the environment): a server runs no graded code (each worker is a child
# forked from it), so one that still runs is as good as a new one, and the project's own
# tests, which grade about a hundred times per process, each save the 1.5 s that a new
# server spends importing torch. At most KEEP; all are stopped as the process exits.
KEEP = 2
_KEPT: dict[tuple[str, str], Kept] = {}


def kept_server(kind: str, files: dict[str, bytes], env: dict[str, str]) -> Kept | None:
    """A fork server for `kind` ("exercise" or "task") with `files` staged and `env`: a
    kept one, else a new one (then kept). None where this system cannot fork one (only
    Linux can) or MINIFX_GRADING_NO_FORK is set, or where it does not start: each worker
    then starts afresh."""
    if not sys.platform.startswith("linux") or os.environ.get("MINIFX_GRADING_NO_FORK"):
        return None
    digest = hashlib.sha256(repr(sorted({**env, MARKER: ""}.items())).encode())
    for relative in sorted(r for r in files if _staged(r)):
        digest.update(relative.encode() + b"\0" + hashlib.sha256(files[relative]).digest())
    key = (kind, digest.hexdigest())
    kept = _KEPT.pop(key, None)
    if kept is not None and kept.server.process.poll() is not None:
        kept.close()  # it ended (or was stopped): start another
        kept = None
    if kept is None:
        folder = Path(tempfile.mkdtemp(prefix=SERVER_FOLDER))
        server = start_server(stage(folder, files, None), env, kind == "task")
        if server is None:
            shutil.rmtree(folder, ignore_errors=True)
            return None
        kept = Kept(server, folder, env[MARKER])
    _KEPT[key] = kept  # the most recently used last
    while len(_KEPT) > KEEP:
        _KEPT.pop(next(iter(_KEPT))).close()
    return kept


@atexit.register
def _close_kept() -> None:
    while _KEPT:
        _KEPT.popitem()[1].close()


def _without_minifx(trusted: dict[str, bytes]) -> dict[str, bytes]:
    return {path: data for path, data in trusted.items() if not path.startswith("minifx/")}


def start_server(folder: Path, env: dict[str, str], tasks: bool = False) -> ForkServer | None:
    """A fork server in `folder`, or None if it did not start. `tasks`: the server for build
    tasks, which imports no minifx (each task's worker grades its own staged copy)."""
    try:
        return ForkServer(folder, env, tasks)
    except (ForkServerError, OSError):
        return None


def _checks(
    exercise: Exercise,
    modules: dict[str, bytes],
    trusted: dict[str, bytes],
    package: dict[str, bytes],
) -> tuple[str, set[str]]:
    """Why the exercise cannot be graded (or ''), and the tests its grader defines."""
    if exercise.kind == "task":
        problem = build.precheck(exercise, package, build.task_files(trusted), trusted)
        return problem, build.expected_tests(exercise, trusted)
    problem = precheck(exercise, modules, trusted)
    if problem:
        return problem, set()
    try:
        return "", grader_tests(trusted[exercise.grader])
    except (SyntaxError, ValueError, RecursionError) as exc:
        return f"the grader {exercise.grader} is not valid Python: {exc}", set()


def _grade_one(
    exercise: Exercise,
    problem: str,
    expected: set[str],
    modules: dict[str, bytes],
    trusted: dict[str, bytes],
    limits: Limits,
    env: dict[str, str],
    base: Path,
    server: ForkServer | None,
) -> Score:
    if problem:
        return Score(exercise, problem=problem)
    try:
        if exercise.kind == "task":
            folder = stage_task(base, trusted, modules, exercise)
            run = run_worker(
                folder,
                exercise.grader,
                limits,
                env,
                server,
                (exercise.id, ",".join(sorted(modules))),
            )
        else:
            folder = stage(base, None if server else trusted, modules)
            run = run_worker(folder, exercise.grader, limits, env, server)
        return judge(exercise, run, trusted, limits, expected)
    except Exception as exc:  # one exercise's trouble must not stop the report of the others
        return Score(
            exercise,
            problem=f"grading this exercise failed ({type(exc).__name__}: {exc}); "
            "the other exercises were graded",
        )
