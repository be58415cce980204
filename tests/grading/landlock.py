"""The kernel's limits on the worker's files (Linux Landlock), set before graded code runs.

The sandbox's audit hook sees the files that Python code opens. Native code opens files
too, and raises no audit event: `torch.from_file` maps any file into a tensor (shared,
so that writing the tensor writes the file), `torch.save` writes any path. Graded code
could so rewrite a file of the grading that the next worker imports, or read the
instructor's copy. Landlock (Linux 5.13 and later) lets a process without privileges give
up rights to the filesystem for good, for itself and every process it starts; the kernel
then refuses what the process gave up, whatever code asks.

The worker keeps:

- **writes** only beneath its own scratch folder (temporary files, pytest's `tmp_path`)
  and to `/dev/null` (not `/dev/shm`, whose files are memory that no process owns);
- **reads** of files everywhere but the folders it must not read (the run's other staged
  folders, every other grading's folders, the judge's copy), and there only of what it
  needs (its own staged folders and the installed packages, which a virtual environment
  may keep in the judge's copy); folders made after it starts (another grading's) get no
  rule, so it cannot read them either;
- **listing** folders everywhere: a name tells nothing that the repository does not;
- **signals** only to processes of its own (Landlock ABI 6, Linux 6.12 and later): not to
  the judge or the fork server, which graded code that got past the sandbox killed, so
  that no report was written (twelfth red-team round).

Landlock allows by folder: a rule gives rights beneath one folder. So the reads are given
folder by folder around the hidden ones (`readable_around`): every child of `/` but the
one that leads to a hidden folder, and so on down. Where the kernel has no Landlock, the
worker runs with the sandbox alone, and `restrict` says so.

This file runs in the worker's private namespace, like `sandbox.py`.
"""

from __future__ import annotations

import ctypes
import os
import sys
from os.path import isdir, join, realpath

# System call numbers: the same on every architecture since Linux 5.13.
CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1  # flag: ask for the ABI version instead
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

# Filesystem rights (include/uapi/linux/landlock.h). Executing and device ioctls are
# left to the sandbox: the dynamic loader maps libraries as it likes.
WRITE_FILE, READ_FILE, READ_DIR = 1 << 1, 1 << 2, 1 << 3
CHANGE_TREE = sum(1 << bit for bit in range(4, 13))  # remove and make files and folders
REFER, TRUNCATE = 1 << 13, 1 << 14  # ABI 2 and ABI 3
FILE_RIGHTS = WRITE_FILE | READ_FILE | TRUNCATE  # the rights a rule on a file may hold
# ABI 6: signals only to processes in the same Landlock domain (the worker's own).
SCOPE_SIGNAL = 1 << 1


class RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),  # ABI 4; the worker leaves the network be
        ("scoped", ctypes.c_uint64),  # ABI 6
    ]


class PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


# The C library, on Linux only: elsewhere these system call numbers mean other things.
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
if _libc is not None:
    _libc.syscall.restype = ctypes.c_long


def abi() -> int:
    """The kernel's Landlock ABI version, or 0 where it has none (or it is turned off)."""
    if _libc is None:
        return 0
    version = _libc.syscall(CREATE_RULESET, None, ctypes.c_size_t(0), CREATE_RULESET_VERSION)
    return max(version, 0)


def readable_around(hidden: list[str], kept: list[str]) -> list[str]:
    """Paths beneath which every file is readable, except those beneath `hidden`, unless
    they are beneath `kept` too.

    The walk goes down from `/` only along the folders that lead to a hidden one; their
    other children are kept whole. Only folders and regular files get rules: the path that
    a symbolic link points to has a rule of its own (or none, being hidden), and sockets
    and devices are not read as files.
    """
    hidden = [realpath(path) for path in hidden]
    readable: list[str] = [path for path in map(realpath, kept) if _beneath_any(path, hidden)]
    folders = ["/"]
    while folders:
        folder = folders.pop()
        for entry in _children(folder):
            path = entry.path
            plain = entry.is_dir(follow_symlinks=False) or entry.is_file(follow_symlinks=False)
            if not plain or path in hidden:  # links, sockets, devices: see above
                continue
            if any(h.startswith(join(path, "")) for h in hidden):  # leads to a hidden one
                folders.append(path)
            else:
                readable.append(path)
    return readable


def restrict(writable: list[str], hidden: list[str], kept: list[str]) -> str:
    """Give up the rights the worker does not need, for good.

    Args:
        writable: Folders beneath which files may be written, made and removed.
        hidden: Folders whose files may not be read (their names may still be listed).
        kept: Folders beneath `hidden` that may be read all the same.

    Returns:
        '' once the kernel enforces the limits, or why it does not.
    """
    version = abi()
    if version < 1:
        return "this kernel offers no Landlock: native code is stopped by the sandbox alone"
    try:
        _restrict(version, writable, hidden, kept)
    except OSError as error:  # a container may forbid it: the worker then runs as without
        return f"Landlock refused the limits ({error}): the sandbox alone stops native code"
    return ""


def _restrict(version: int, writable: list[str], hidden: list[str], kept: list[str]) -> None:
    changes = WRITE_FILE | CHANGE_TREE | (REFER if version >= 2 else 0)
    writes = changes | (TRUNCATE if version >= 3 else 0)
    handled = READ_FILE | READ_DIR | writes
    # An older kernel reads only the first field: it is given only that.
    scoped = version >= 6
    attributes = RulesetAttr(handled, 0, SCOPE_SIGNAL if scoped else 0)
    size = ctypes.sizeof(RulesetAttr) if scoped else RulesetAttr.handled_access_net.offset
    ruleset = _check(
        _libc.syscall(CREATE_RULESET, ctypes.byref(attributes), ctypes.c_size_t(size), 0),
        "ruleset",
    )
    try:
        _allow(ruleset, "/", READ_DIR)
        for path in readable_around(hidden, kept + writable):
            _allow(ruleset, path, READ_FILE | READ_DIR, required=False)
        for path in writable:
            _allow(ruleset, path, READ_FILE | READ_DIR | writes)
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        _check(_libc.syscall(RESTRICT_SELF, ruleset, 0), "restrict_self")
    finally:
        os.close(ruleset)


def _allow(ruleset: int, path: str, rights: int, required: bool = True) -> None:
    """Give `rights` beneath `path` (on a file, only the rights a file can have); a path
    not `required` that the kernel takes no rule for stays unreadable."""
    rights = rights if isdir(path) else rights & FILE_RIGHTS
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # gone since it was listed: nothing to allow
    try:
        attr = PathBeneathAttr(rights, fd)
        _check(_libc.syscall(ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(attr), 0), path)
    except OSError:
        if required:
            raise
    finally:
        os.close(fd)


def _check(result: int, what: str) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"Landlock ({what}): {os.strerror(errno)}")
    return result


def _children(folder: str) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except OSError:
        return []


def _beneath_any(path: str, folders: list[str]) -> bool:
    return any(path == folder or path.startswith(join(folder, "")) for folder in folders)
