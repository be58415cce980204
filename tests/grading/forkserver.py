"""A fork server: one process imports torch, pytest and minifx once, then forks each worker.

A worker that starts from nothing spends about 1.5 s importing torch before it runs a
single test, and grading starts one worker per exercise. So the judge starts this server
once per grading run (and keeps it for the next runs in its process: `judge.kept_server`),
in a staged folder of trusted files; the server imports what every worker needs, runs
no graded code itself, and for each exercise forks a child that becomes the worker
(`worker.run`). A child is a fresh process all the same: it starts
from the server's memory, which no graded code has touched, in a session of its own, and
it exits when its grader is done.

The judge and the server talk over a Unix socket pair that keeps messages apart and
carries file descriptors:

- judge to server: `{"id", "grader", "graded", "key"}` with two descriptors, the write end
  of the worker's report pipe and its output file;
- server to judge: `{"id", "pid"}` once the child is forked, and `{"id", "exit"}` (a
  returncode, negative for a signal) once it has ended.

The server is single-threaded (forking a process that runs threads is unsafe), and it
forks nothing but workers. `ForkServer` below is the judge's side.

A build task's worker grades the submission's own minifx, staged in a folder of its own,
so the server for tasks (`tasks=True`) imports torch and pytest but no minifx; each child
takes its task's folder as the root it grades (as `worker.py` started afresh there would),
and imports that folder's minifx itself.
"""

from __future__ import annotations

import builtins
import ctypes
import gc
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

MESSAGE = 64 * 1024
# Imported once in the server, so that no worker pays for them.
PRELOAD = (
    "torch",
    "torch.nn",
    "torch.fx",
    "torch.utils.flop_counter",
    # TorchDynamo, and through it symbolic_shapes: about 2 s of each worker of chapters 9
    # (torch.compile) and 10 (torch.fx's ShapeProp). A grading of the course is 10 % faster
    # with it here; one of an early chapter alone starts a second later.
    "torch._dynamo",
    "pytest",
    "_pytest.python",
    "_pytest.runner",
    "_pytest.fixtures",
    "_pytest.terminal",
    "_pytest.monkeypatch",
)

# And, for the workers of build tasks, what each of them imports as it collects its tests
# (worker.py): 1.5 s of every task's worker, where this server pays once.
PRELOAD_FOR_TASKS = ("torch.distributed.tensor",)

# The guard's snapshot (tests/grading/guard.py), taken before the first fork.
GUARD: list = []

# prctl's option that names the signal Linux sends a process when its parent ends.
PR_SET_PDEATHSIG = 1


class ForkServerError(RuntimeError):
    """The fork server could not start a worker or stopped answering."""


# --- the judge's side -------------------------------------------------------------------


class ForkServer:
    """The judge's handle on a running fork server.

    Args:
        root: A staged folder of trusted files (it has `tests/grading/forkserver.py`).
        env: The environment of the server, and so of every worker.
        tasks: A server for build tasks: it imports no minifx, and each worker grades the
            folder its request names (see `spawn`).
    """

    def __init__(self, root: Path, env: dict[str, str], tasks: bool = False) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._socket, self._lock, self._changed = ours, threading.Lock(), threading.Condition()
        self._replies: dict[int, dict] = {}
        self._next_id, self._closed = 0, False
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-I",
                str(root / "tests" / "grading" / "forkserver.py"),
                str(theirs.fileno()),
                *(["tasks"] if tasks else []),
            ],
            cwd=root,
            env=env,
            pass_fds=(theirs.fileno(),),
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        theirs.close()
        threading.Thread(target=self._read_replies, daemon=True).start()
        if self._reply(-1, "ready", timeout=120) is None:
            self.close()
            raise ForkServerError(
                "the fork server did not start (it could not import torch, pytest or minifx)"
            )

    def spawn(
        self,
        grader: str,
        graded: Path,
        key: bytes,
        report_fd: int,
        output_fd: int,
        task: tuple[str, str] = ("", ""),
    ) -> tuple[int, int]:
        """Fork a worker; its `(request id, pid)`. For a build task, `task` is its id and its
        graded files (comma-separated), and `graded` the task's staged folder."""
        with self._lock:
            request = self._next_id
            self._next_id += 1
            message = json.dumps(
                {
                    "id": request,
                    "grader": grader,
                    "graded": str(graded),
                    "key": key.hex(),
                    "task": task[0],
                    "task_files": task[1],
                }
            )
            try:
                socket.send_fds(self._socket, [message.encode()], [report_fd, output_fd])
            except OSError as exc:
                raise ForkServerError(f"the fork server stopped answering ({exc})") from exc
        reply = self._reply(request, "pid", timeout=30)
        if reply is None:
            raise ForkServerError("the fork server did not start the worker")
        return request, reply["pid"]

    def returncode(self, request: int) -> int | None:
        """The worker's returncode once it has ended, else None."""
        with self._changed:
            reply = self._replies.get(request, {})
            if "exit" in reply:
                return reply["exit"]
        if self._closed:
            raise ForkServerError("the fork server ended while a worker ran")
        return None

    def close(self) -> None:
        """Stop the server (its workers are stopped by the judge)."""
        self._socket.close()
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait()

    def _reply(self, request: int, key: str, timeout: float) -> dict | None:
        with self._changed:
            self._changed.wait_for(
                lambda: key in self._replies.get(request, {}) or self._closed, timeout=timeout
            )
            reply = self._replies.get(request, {})
            return reply if key in reply else None

    def _read_replies(self) -> None:
        while True:
            try:
                data = self._socket.recv(MESSAGE)
            except OSError:
                data = b""
            with self._changed:
                if data:
                    reply = json.loads(data)
                    self._replies.setdefault(reply.pop("id"), {}).update(reply)
                else:
                    self._closed = True  # the server ended: nothing more will come
                self._changed.notify_all()
            if not data:
                return


# --- the server's side ------------------------------------------------------------------


def serve(channel: socket.socket) -> None:
    """Answer the judge until it closes the socket: fork a worker per request, report exits."""
    children: dict[int, int] = {}  # pid -> request id
    while True:
        ready, _, _ = select.select([channel], [], [], 0.05)
        _report_exits(channel, children)
        if not ready:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(channel, MESSAGE, 2)
        except OSError:
            return
        if not data:
            return
        request = json.loads(data)
        server = os.getpid()
        pid = os.fork()
        if pid == 0:
            _become_worker(channel, request, fds, server)  # never returns
        for fd in fds:
            os.close(fd)
        children[pid] = request["id"]
        channel.send(json.dumps({"id": request["id"], "pid": pid}).encode())


def _report_exits(channel: socket.socket, children: dict[int, int]) -> None:
    while children:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            return
        request = children.pop(pid, None)
        if request is not None:
            channel.send(
                json.dumps({"id": request, "exit": os.waitstatus_to_exitcode(status)}).encode()
            )


def _become_worker(channel: socket.socket, request: dict, fds: list[int], server: int) -> None:
    """In the child: a session of its own, its output to its file, then the worker."""
    code = 1
    try:
        channel.close()
        os.setsid()
        _die_with(server)
        report_fd, output_fd = fds
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        os.close(output_fd)
        key, graded = bytes.fromhex(request["key"]), Path(request["graded"])
        if request.get("task"):
            # As worker.py started afresh in the task's folder: its copy there, whose root
            # is that folder (and whose code the sandbox knows as the worker's own).
            worker = load_worker(graded / "tests" / "grading" / "worker.py")
            worker["prepare"]()
            code = worker["run"](
                request["grader"],
                report_fd,
                key,
                graded,
                request["task"],
                request["task_files"],
                guard=GUARD[0],
            )
        else:
            code = WORKER["run"](request["grader"], report_fd, key, graded, guard=GUARD[0])
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _die_with(server: int) -> None:
    """Have Linux kill this worker when the server ends.

    The server ends when the judge does (its socket closes), and a judge that was killed
    (`kill -9`, out of memory) cannot stop its workers: without this, a worker stuck in a
    loop would run on for ever.
    """
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != server:  # the server ended before the request took effect
        os._exit(1)


def main() -> None:
    channel = socket.socket(fileno=int(sys.argv[1]))
    tasks = sys.argv[2:] == ["tasks"]  # each worker imports its own task folder's minifx
    if not tasks:
        WORKER["prepare"]()
    for name in PRELOAD + (PRELOAD_FOR_TASKS if tasks else ()):
        __import__(name)
    if not tasks and (WORKER["ROOT"] / "minifx").is_dir():  # a course without minifx still grades
        WORKER["_import_all"]("minifx")
    if not tasks:  # a task's worker is a worker.py of its own, which replaces them itself
        WORKER["put_stand_ins_for_dynamo_hooks"]()
    # The guard's snapshot of all that, taken once here instead of in every worker.
    GUARD.append(WORKER["load_private"](WORKER["HERE"] / "guard.py")["Guard"]())
    # What is imported now lives as long as every worker: out of the garbage collector's
    # sight, a worker's collections do not walk it (nor copy its pages, which the fork
    # shares until one is written).
    gc.freeze()
    channel.send(json.dumps({"id": -1, "ready": True}).encode())
    serve(channel)


def load_worker(path: Path) -> dict:
    """The worker's code (`path`, a worker.py), run in a private namespace (see worker.py)."""
    worker = {
        "__name__": "grading_private_worker",
        "__file__": str(path),
        "__builtins__": dict(vars(builtins)),
    }
    exec(compile(path.read_bytes(), str(path), "exec", dont_inherit=True), worker)
    return worker


if __name__ == "__main__":
    # The worker's code, shared by every child (a build task's child loads its own copy).
    WORKER = load_worker(Path(__file__).resolve().parent / "worker.py")
    main()
