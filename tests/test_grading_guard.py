"""The guard's snapshot (tests/grading/guard.py), outside a worker: what it sees change."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

from tests.grading.guard import Guard, WriteCount, _own_dict

pytestmark = pytest.mark.meta


def changes_here(guard: Guard) -> list[str]:
    """The changes the guard sees in the probe module (this process runs other tests too)."""
    return [change for change in guard.changes() if change.startswith("guard_probe.")]


@pytest.fixture
def module():
    """A module of its own with a class of its own, in sys.modules while the test runs."""
    module = types.ModuleType("guard_probe")
    module.Watched = type("Watched", (), {"__module__": "guard_probe", "method": lambda self: 1})
    module.value = 1
    sys.modules["guard_probe"] = module
    yield module
    del sys.modules["guard_probe"]


def test_a_write_to_a_class_through_setattr_is_counted(module):
    Watched = module.Watched
    count = WriteCount(_own_dict(vars(Watched)))
    before = count.read()
    Watched.extra = 1
    del Watched.extra
    assert count.read() != before


# Run by another Python: the guard's `WriteCount` on a dict that a dict watcher (Python
# 3.12 and later; torch.compile adds one to the builtins' dict) starts to watch.
WATCHED_DICT = """
import ctypes, runpy, sys
WriteCount = runpy.run_path(sys.argv[1])["WriteCount"]
Callback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p)
callback = Callback(lambda *event: 0)
ctypes.pythonapi.PyDict_AddWatcher.argtypes = [Callback]
ctypes.pythonapi.PyDict_Watch.argtypes = [ctypes.c_int, ctypes.py_object]
watched = {}
count = WriteCount(watched)
before = count.read()
watcher = ctypes.pythonapi.PyDict_AddWatcher(callback)
try:
    ctypes.pythonapi.PyDict_Watch(watcher, watched)
    assert count.read() == before, "a dict watcher was counted as a write"
    watched["written"] = True
    assert count.read() != before, "a write to a watched dict was not counted"
finally:  # before the callback is freed at exit: the dict's end would call it
    ctypes.pythonapi.PyDict_ClearWatcher(watcher)
"""


def pythons_with_dict_watchers() -> list[str]:
    """This Python if it is 3.12 or 3.13, and those installed beside it (pyenv's layout).
    (Python 3.14 keeps no write count in a dict: the guard refuses to run there.)"""
    found = [sys.executable] if (3, 12) <= sys.version_info < (3, 14) else []
    beside = Path(sys.base_prefix).parent  # pyenv: <root>/versions/<version>
    found += sorted(str(p) for p in beside.glob("3.1[23].*/bin/python3"))
    return found


@pytest.mark.parametrize("python", pythons_with_dict_watchers() or [None])
def test_a_dict_watcher_is_not_counted_as_a_write(python):
    if python is None:
        pytest.skip("no Python 3.12 or later here: Python 3.11 has no dict watchers")
    guard_file = Path(__file__).parent / "grading" / "guard.py"
    ran = subprocess.run(
        [python, "-I", "-c", WATCHED_DICT, str(guard_file)], capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stderr


def taken(skip: tuple[str, ...]) -> Guard:
    """A snapshot as a worker has it: taken, then begun."""
    guard = Guard()
    guard.begin(skip)
    return guard


def test_a_name_swapped_is_seen_and_one_put_back_is_not(module):
    Watched = module.Watched
    guard = taken(skip=("exercises",))
    assert changes_here(guard) == []
    original = Watched.method
    Watched.method = lambda self: 2
    module.value = 2
    assert set(changes_here(guard)) == {"guard_probe.Watched.method", "guard_probe.value"}
    Watched.method = original
    module.value = 1
    assert changes_here(guard) == []  # written since the snapshot: compared name by name


def test_a_special_method_added_to_a_class_is_seen(module):
    Watched = module.Watched
    guard = taken(skip=("exercises",))
    Watched.__eq__ = lambda self, other: True
    try:
        assert changes_here(guard) == ["guard_probe.Watched.__eq__ (added)"]
    finally:
        del Watched.__eq__


def test_begin_takes_in_what_trusted_code_changed_since_the_snapshot(module):
    guard = Guard()  # as the fork server takes it
    module.value = 3  # as pytest's start and the graders' imports do, before graded code
    module.Watched.method = lambda self: 3
    guard.begin(skip=("exercises",))
    assert changes_here(guard) == []
    module.value = 4
    assert changes_here(guard) == ["guard_probe.value"]


def test_the_module_dicts_written_since_the_snapshot_are_the_written_and_the_new(module):
    """The worker looks for TorchDynamo's hooks again only in these (worker.py)."""
    guard = Guard()  # as the fork server takes it, once it has replaced the hooks
    new = types.ModuleType("guard_probe_new")
    sys.modules[new.__name__] = new
    try:
        assert not [d for d in guard.module_dicts_written_since() if d is vars(module)]
        module.value = 2
        written = guard.module_dicts_written_since()
        assert [d for d in written if d is vars(module)] and [d for d in written if d is vars(new)]
    finally:
        del sys.modules[new.__name__]


def test_a_grader_s_data_changed_in_place_is_seen_in_a_dict_not_written_to():
    data = types.ModuleType("tests.graders.guard_probe_data")
    data.CASES = {"relu": torch.relu, "sizes": [1, 2]}  # code and a list, in a plain dict
    sys.modules[data.__name__] = data
    try:
        guard = taken(skip=("exercises",))
        seen = [c for c in guard.changes() if c == f"the data of {data.__name__}"]
        assert seen == []
        data.CASES["sizes"].append(3)  # the list changes, the dict is not written to
        assert f"the data of {data.__name__}" in guard.changes()
        data.CASES["sizes"].pop()
        assert f"the data of {data.__name__}" not in guard.changes()
        data.CASES["relu"] = torch.sigmoid  # the dict is written to
        assert f"the data of {data.__name__}" in guard.changes()
    finally:
        del sys.modules[data.__name__]
