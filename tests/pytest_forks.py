"""Run pytest in many folders at once, each run forked from one process that imported
torch and pytest once.

The carving proof (tests/test_tasks.py) runs the marked stage tests in about 30 copies of
the repository. A `python -m pytest` started from nothing spends about half of its time
importing torch and pytest before it collects a test; here one server process pays for
that once, then forks a child per folder, as many at a time as there are cores. A child
is a fresh pytest run all the same: it changes into its folder, which comes first on
`sys.path`, and imports that folder's minifx and tests itself (the server imports
neither, so each copy's carved minifx is the one its tests see).

On a platform without `os.fork` each run is a plain `python -m pytest` process instead.

    with ForkedPytest() as runs:
        codes = runs.run([(folder, ["-q", "tests/test_x.py"]), ...])
"""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

# What every run imports before its first test; nothing here imports minifx.
PRELOAD = (
    "torch",
    "torch.nn",
    "torch.nn.functional",
    "torch.fx",
    "torch.utils._pytree",
    "pytest",
    "_pytest.python",
    "_pytest.runner",
    "_pytest.fixtures",
    "_pytest.terminal",
    "_pytest.junitxml",
    "_pytest.assertion.rewrite",
    "hypothesis",
    # The stage tests' models load it on first use: 0.9 s, in each of some thirty runs.
    "torch.distributed.tensor",
)
OUTPUT = "pytest-output.txt"


class ForkedPytest:
    """The client of a fork server: `run` a batch of pytest runs, as often as needed.

    Args:
        timeout: The most seconds one batch may take; then every run still going is
            killed, and `run` raises `subprocess.TimeoutExpired`.
    """

    def __init__(self, timeout: float = 1800) -> None:
        self.timeout = timeout
        self.server: subprocess.Popen | None = None
        if hasattr(os, "fork"):
            self.server = subprocess.Popen(
                [sys.executable, __file__, str(max(1, os.cpu_count() or 1))],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                start_new_session=True,  # so that close() stops every child with it
            )

    def run(self, jobs: list[tuple[Path, list[str]]], write_bytecode: bool = False) -> list[int]:
        """Run `pytest <args>` in each job's folder, its output in `<folder>/pytest-output.txt`;
        the exit codes, in the order of `jobs`. `write_bytecode`: write `.pyc` files (and
        pytest's assertion-rewritten test modules) even where PYTHONDONTWRITEBYTECODE is set,
        so that copies of a folder made afterwards import it without compiling it again."""
        if self.server is None:
            return [_plain_run(Path(f), args, write_bytecode, self.timeout) for f, args in jobs]
        batch = {"jobs": [[str(f), args] for f, args in jobs], "write_bytecode": write_bytecode}
        self.server.stdin.write(json.dumps(batch) + "\n")
        self.server.stdin.flush()
        answer = _read_line(self.server.stdout, self.timeout)
        if answer is None:
            self.close()
            raise subprocess.TimeoutExpired(self.server.args, self.timeout)
        codes = json.loads(answer)
        return [codes[str(index)] for index in range(len(jobs))]

    def close(self) -> None:
        if self.server is not None and self.server.poll() is None:
            try:
                os.killpg(self.server.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.server is not None:
            self.server.wait()

    def __enter__(self) -> ForkedPytest:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_line(stream, timeout: float) -> str | None:
    """A line from the server within `timeout` seconds; None if it took longer or ended."""
    import select

    ready, _, _ = select.select([stream], [], [], timeout)
    line = stream.readline() if ready else ""
    return line or None


def _plain_run(folder: Path, args: list[str], write_bytecode: bool, timeout: float) -> int:
    env = dict(os.environ)
    if write_bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    with open(folder / OUTPUT, "w") as output:
        return subprocess.run(
            [sys.executable, "-m", "pytest", *args],
            cwd=folder,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            timeout=timeout,
        ).returncode


# --- the server -------------------------------------------------------------------------


def serve(jobs: list[list], workers: int, write_bytecode: bool) -> dict[int, int]:
    """Fork a child per job, at most `workers` at a time; `{job index: exit code}`."""
    running: dict[int, int] = {}  # pid -> job index
    codes: dict[int, int] = {}
    waiting = list(enumerate(jobs))
    while waiting or running:
        if waiting and len(running) < workers:
            index, (folder, args) = waiting.pop(0)
            pid = os.fork()
            if pid == 0:
                _child(Path(folder), args, write_bytecode)  # never returns
            running[pid] = index
            continue
        pid, status = os.wait()
        codes[running.pop(pid)] = os.waitstatus_to_exitcode(status)
    return codes


def _child(folder: Path, args: list[str], write_bytecode: bool) -> None:
    """Become `python -m pytest <args>` run in `folder`, and exit with its code."""
    code = 1
    try:
        output = os.open(folder / OUTPUT, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.close(output)
        os.chdir(folder)
        sys.path[0] = str(folder)  # where `python -m pytest` in the folder would look first
        if write_bytecode:
            sys.dont_write_bytecode = False
        import pytest

        code = int(pytest.main(args))
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def main() -> None:
    workers = int(sys.argv[1])
    for name in PRELOAD:
        __import__(name)
    # What is imported now lives as long as every run: out of the garbage collector's
    # sight, a run's collections do not walk it (nor copy its pages, shared since the fork).
    gc.freeze()
    for line in sys.stdin:  # one batch a line, until the client closes its end
        batch = json.loads(line)
        codes = serve(batch["jobs"], workers, batch["write_bytecode"])
        print(json.dumps({str(index): code for index, code in codes.items()}), flush=True)


if __name__ == "__main__":
    main()
