"""`tests/grading/landlock.py`: the kernel's limits on the files a grading worker opens.

The red-team tests that native code gets nothing through them are in
`test_grading_tampering.py`; these pin the rules themselves.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.grading.landlock import abi, readable_around

pytestmark = pytest.mark.meta

ROOT = Path(__file__).resolve().parent.parent


def _tree(base: Path) -> dict[str, Path]:
    paths = {
        "secret": base / "judge" / "solutions" / "answer.py",
        "kept": base / "judge" / ".venv" / "site-packages" / "torch.py",
        "beside": base / "judge-notes" / "todo.txt",  # a name that starts like the hidden one
        "other": base / "other" / "file.txt",
        "top": base / "top.txt",
    }
    for path in paths.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    return paths


def test_everything_is_readable_but_the_hidden_folder_less_what_it_keeps(tmp_path):
    paths = _tree(tmp_path)
    hidden, kept = tmp_path / "judge", tmp_path / "judge" / ".venv"
    readable = [Path(p) for p in readable_around([str(hidden)], [str(kept)])]

    def covered(path: Path) -> bool:
        return any(path == r or r in path.parents for r in readable)

    assert covered(paths["kept"]) and covered(paths["beside"]) and covered(paths["other"])
    assert covered(paths["top"])
    assert not covered(paths["secret"])
    # The folders on the way to the hidden one get no rule: that would cover it too.
    assert not {tmp_path, hidden, Path("/")} & set(readable)


def test_a_symbolic_link_into_the_hidden_folder_gets_no_rule(tmp_path):
    _tree(tmp_path)
    (tmp_path / "link").symlink_to(tmp_path / "judge")
    readable = readable_around([str(tmp_path / "judge")], [])
    assert str(tmp_path / "link") not in readable


RESTRICTED = """
import sys
sys.path.insert(0, {root!r})
from tests.grading.landlock import restrict

writable = [{scratch!r}, "/dev/null"]
assert restrict(writable=writable, hidden=[{hidden!r}], kept=[{kept!r}]) == ""
for action, path in [("read", {secret!r}), ("write", {outside!r}), ("write", "/dev/shm/x")]:
    try:
        open(path, "w" if action == "write" else "r").close()
        print(action, "allowed")
    except PermissionError:
        print(action, "refused")
open({kept_file!r}).close()
open({scratch!r} + "/new.txt", "w").close()
open("/dev/null", "w").close()
print("kept read, scratch written")
import os
os.kill(os.getpid(), 0)
try:
    os.kill(os.getppid(), 0)  # signal 0: the kernel checks the right, sends nothing
    print("parent signalled")
except PermissionError:
    print("parent not signalled")
"""


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or abi() < 1, reason="this kernel offers no Landlock"
)
def test_a_restricted_process_reads_and_writes_only_what_it_keeps(tmp_path):
    paths = _tree(tmp_path)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    code = RESTRICTED.format(
        root=str(ROOT),
        scratch=str(scratch),
        hidden=str(tmp_path / "judge"),
        kept=str(tmp_path / "judge" / ".venv"),
        secret=str(paths["secret"]),
        outside=str(tmp_path / "other" / "new.txt"),
        kept_file=str(paths["kept"]),
    )
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:4] == [
        "read refused",
        "write refused",
        "write refused",  # /dev/shm: memory that no process owns, so no limit counts it
        "kept read, scratch written",
    ]
    # From ABI 6 the worker may signal only processes of its own: not the judge.
    signalled = "parent not signalled" if abi() >= 6 else "parent signalled"
    assert done.stdout.split("\n")[4] == signalled
