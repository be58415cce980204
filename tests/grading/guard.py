"""What graded code must leave as it found it, checked after every test.

Python does not audit the assignments that patch a program: `pytest.fail = ...`,
`torch.Tensor.__eq__ = ...`, `sys.modules[name] = ...`. So the worker takes a snapshot
before graded code runs, and after each test compares:

- every name of every module and every attribute of every class those modules define:
  the same object, none removed; no special method (`__eq__`) or name that hides a base
  class's added to a class, no builtin's name added to a module;
- `sys.modules`, `sys.meta_path` and `sys.path_hooks`: no module swapped, no import hook;
- the data of the graders (`CASES`, expected values): the same, item by item;
- the keyword defaults of every function there (a dict, which changes in place:
  `assert_close.__kwdefaults__["atol"] = 1e9`);
- torch's function and dispatch modes (a `TorchFunctionMode` left active answers every
  torch call), and the threads: graded code may leave neither behind;
- how many times the dicts of the modules a grader decides with (its own, `support`,
  pytest's, the builtins; a build task's stage tests) were written to: none, since the
  last check.

A test after which anything differs fails, with the names that changed. A change that
graded code makes and undoes within one test (from a finalizer, say) is seen here only
in those modules, through the count of writes; elsewhere, the graders' comparisons
check torch's names, modes and dispatch keys at the moment they decide
(`tests/graders/support.py`, `tensors_equal`), the worker takes away
`torch._C._dispatch_library` (kernels registered with torch's dispatcher), the judge's
scan refuses the means (`weakref`, `__del__`, assignments to imported modules), and the
student guide says so.

This file runs in the worker's private namespace, like `sandbox.py`.
"""

from __future__ import annotations

import builtins
import ctypes
import gc
import sys
from itertools import compress, repeat
from operator import attrgetter, is_, itemgetter, ne, rshift
from types import (
    BuiltinFunctionType,
    ClassMethodDescriptorType,
    FunctionType,
    GetSetDescriptorType,
    MemberDescriptorType,
    MethodDescriptorType,
    MethodWrapperType,
    ModuleType,
    WrapperDescriptorType,
)
from typing import Iterator, NamedTuple

# Names that change while any program runs, each with the reason.
VOLATILE = {
    ("sys", "*"): "pytest swaps sys.stdout and sys.stderr per test; sys's hooks are checked apart",
    ("__main__", "*"): "the worker's bootstrap",
    ("linecache", "cache"): "a cache of source lines",
    ("torch.fx.traceback", "current_meta"): "torch.fx's Transformer restores it as a copy "
    "(preserve_node_meta): differential tests of the Transformer replace it",
}
# TorchDynamo's bookkeeping: counters, ids and caches that every compilation rebinds
# (exercise 9.1 compiles with the student's backend; the grader compiles once at import,
# so that Dynamo's patches of torch and its imports are in the snapshot).
DYNAMO = "TorchDynamo updates it on every compilation (torch.compile, exercise 9.1)"
VOLATILE.update(
    {
        ("torch._dynamo.compiled_autograd", "COMPILE_COUNTER"): DYNAMO,
        ("torch._dynamo.convert_frame", "FRAME_COUNTER"): DYNAMO,
        ("torch._dynamo.pgo", "_CODE_STATE"): DYNAMO,
        ("torch._dynamo.utils", "curr_frame"): DYNAMO,
        ("torch._dynamo.utils", "op_count"): DYNAMO,
        ("torch._dynamo.utils.CleanupManager", "count"): DYNAMO,
        ("torch._dynamo.mutation_guard.GenerationTracker", "generation"): DYNAMO,
        ("torch._dynamo.mutation_guard.GenerationTracker", "generation_values"): DYNAMO,
        ("torch._dynamo.mutation_guard.GenerationTracker", "dynamic_classes"): DYNAMO,
        ("torch._subclasses.fake_tensor.FakeTensorMode", "cache_hits"): DYNAMO,
        ("torch._subclasses.fake_tensor.FakeTensorMode", "cache_misses"): DYNAMO,
        ("torch._subclasses.meta_utils", "DESCRIBER_NEXT_ID"): DYNAMO,
    }
)
# The names of compiled code that Dynamo adds to, and reset() removes from, the globals of
# each function it compiles.
VOLATILE_PREFIXES = ("__compiled_fn_", "__builtins_dict___", "__resume_at_")
# Names a class gains by itself: pickling's cache, lazily made annotations.
VOLATILE_CLASS_NAMES = {"__slotnames__", "__annotations__", "__abstractmethods__"}
BUILTIN_NAMES = frozenset(vars(builtins))
# Modules whose data the graders compare against, checked item by item.
DATA_MODULES = ("tests.graders", "tests.conftest")
# Modules the graders decide with: their own (and the models they build from tests.models),
# pytest's failing and comparing, the builtins.
# Graded code that changes a name there and puts it back within one test (from a
# generator's `finally`, run when the grader drops what it returned) leaves every value as
# it was, so the names' check cannot see it; the count of writes to the module's dict can.
# (And, for a build task, its stage tests and their helpers, but those whose names tracing
# swaps and puts back, as `wrap` does to `tests/graph/wrapped_helpers.py`.)
DECIDING = ("builtins", "pytest", "_pytest.outcomes", "_pytest.python_api", "_pytest.raises")
DECIDING_PREFIXES = ("tests.graders", "tests.conftest", "tests.models", "torch.testing")
# And, for a build task, torch's own names: its stage tests compare with torch directly
# (`torch.testing.assert_close` decides with `torch.isclose`), where the graders compare
# through support's checks of torch's names. `torch.isclose` made to answer True while
# the task's answer was held earned zeros all 5 points of task 6.1 (eighth round).
TORCH_DECIDING = ("torch", "torch.nn.functional")
# And the classes of torch's tensors, whose methods the stage tests' comparisons call
# (`if torch.all(matches)` asks `Tensor.__bool__`): `Tensor.__bool__` made to answer True
# while the task's answer was held earned zeros all 5 points of task 6.1 (ninth round).
TORCH_DECIDING_CLASSES = {"torch._tensor": ("Tensor",), "torch.nn.parameter": ("Parameter",)}
# And the registries that change what every module call or copy does: torch's global
# module hooks (a forward hook that returns zeros makes every output agree) and `copy`'s
# dispatch tables (a deepcopy that shares tensors makes a grader's "before" move with
# the graded code's edits). Written in place, they look the same to the names' check.
# (Not `copyreg.dispatch_table`: modules that torch imports on first use register there.)
REGISTRIES = {
    "torch.nn.modules.module": lambda name: name.startswith("_global_"),
    "copy": lambda name: name in ("_deepcopy_dispatch", "_copy_dispatch"),
}
# Where `wrap` registers the module dicts whose names tracing swaps: minifx's and torch.fx's.
WRAP_REGISTRIES = (
    ("minifx.graph.wrapping", "_wrapped_functions"),
    ("torch.fx._symbolic_trace", "_wrapped_fns_to_patch"),
)
# Except where TorchDynamo writes the code it compiles: into the globals of each function it
# compiles (see VOLATILE_PREFIXES). Exercise 9.1's grader keeps those functions here.
COMPILED_BY_DYNAMO = ("tests.graders.ex9_1_programs",)
MISSING = object()
# Module-level values that are code, not data: checked by identity like every other name.
# (A builtin's descriptors have no state of their own to read; `support._BOUND` holds
# about 700 of torch's.)
CODE_KINDS = (
    type,
    FunctionType,
    BuiltinFunctionType,
    ModuleType,
    MethodDescriptorType,
    WrapperDescriptorType,
    MethodWrapperType,
    ClassMethodDescriptorType,
    GetSetDescriptorType,
    MemberDescriptorType,
)
WRAPPERS = (staticmethod, classmethod)
# A grader's data: what is read item by item (other objects are checked by identity).
DATA_KINDS = (list, tuple, dict, set, frozenset, str, bytes, int, float, bool)
# How deep a grader's data is read, and where tensors come from (torch.Tensor, Parameter).
MAX_DEPTH = 6
SCALARS = (str, int, bool, bytes, type(None), float)
TENSOR_KINDS = {
    ("torch", "Tensor"),
    ("torch.nn.parameter", "Parameter"),
    ("torch.nn.parameter", "Buffer"),
}


class Guard:
    """A snapshot of the process's modules, classes and hooks, and the check against it.

    Taking it reads every name of some 9,000 modules and classes, a third of a second. So
    the fork server takes it once, before it forks any worker (`Guard()`), and each worker
    brings it up to date just before graded code runs (`begin`), reading again only what
    was written to since.
    """

    def __init__(self) -> None:
        self._skip: tuple[str, ...] = ()
        self._stage_tests: tuple[str, ...] = ()
        self._wrapped: set[int] = set()
        self._modules: dict[str, object] = {}
        # (namespace, names, objects, where, owner, writes, at_snapshot): the names of each
        # module and class, their objects, the class (None for a module), and the count of
        # writes to its dict with its reading (UNCOUNTED and NEVER if first seen once the
        # sandbox was armed).
        self._namespaces: list[tuple] = []
        self._classes: set[int] = set()
        self._data: dict[str, tuple] = {}
        # The dicts of the graders' data read while counting writes, by id (`_dict_value`).
        self._data_dicts: dict[int, ReadDict] = {}
        # (function, its keyword defaults dict, its keys, its values): the one mutable part
        # of a function that a build task may read (the sandbox lets it read signatures).
        self._kwdefaults: dict[int, tuple[FunctionType, dict, tuple, tuple]] = {}
        # (what is watched, its dict, its write count, the count at the snapshot)
        self._writes: list[tuple[str, dict, WriteCount, int]] = []
        self._sys_modules = sys.modules
        # Counts of writes use ctypes, which the sandbox refuses once it is armed (after
        # `begin`): a namespace first seen later is compared name by name every time.
        self._counting = True
        self.add_new_modules()
        self._counting = False

    @classmethod
    def taken_from(cls, snapshot: Guard) -> Guard:
        """A guard of this class with the state of `snapshot`, one that another copy of this
        file made (the fork server's): the sandbox knows this copy's code as the worker's."""
        guard = cls.__new__(cls)
        guard.__dict__.update(vars(snapshot))
        return guard

    def begin(self, skip: tuple[str, ...], stage_tests: tuple[str, ...] = ()) -> None:
        """Make the snapshot as good as one taken now, just before graded code runs.

        Args:
            skip: Prefixes of module names to leave out (graded code's own modules).
            stage_tests: For a build task, the prefixes of the modules whose writes are
                counted too (its stage tests and minifx's: worker.COUNTED_IN_A_TASK), but
                for the modules whose names tracing swaps and puts back (`wrap`).
        """
        self._skip, self._stage_tests = skip, stage_tests
        self._wrapped = _wrapped_globals() if stage_tests else set()
        self._counting = True
        self._forget_replaced_modules()
        self._namespaces = [
            self._read_again(entry) if written else entry
            for entry, written in zip(self._namespaces, _written(self._namespaces))
        ]
        self._kwdefaults = {
            key: _defaults_entry(function, defaults)
            for key, (function, *_) in self._kwdefaults.items()
            if (defaults := function.__kwdefaults__)
        }
        self._writes, self._data = [], {}
        for name, module in list(self._modules.items()):
            self._watch(name, module)
        self.add_new_modules()
        self._counting = False
        self._hooks = (tuple(sys.meta_path), tuple(sys.path_hooks))
        self._meta_path, self._path_hooks = sys.meta_path, sys.path_hooks
        self._threads = self._thread_count()
        torch = sys.modules["torch"]._C
        self._mode_counts = (torch._len_torch_function_stack, torch._len_torch_dispatch_stack)
        self._baseline_modes = self._modes()

    def module_dicts_written_since(self) -> list[dict]:
        """The dicts of the modules now in `sys.modules` that may hold other values than at
        the snapshot: those written to since, and those it did not read (modules imported
        or replaced since, `sys`). Called before `begin`, which takes a new snapshot."""
        unchanged = {
            id(entry[0])
            for entry, written in zip(self._namespaces, _written(self._namespaces))
            if entry[4] is None and not written  # a module's (a class's has its owner)
        }
        modules = list(self._sys_modules.values())
        namespaces = [getattr(module, "__dict__", None) for module in modules]
        return [d for d in namespaces if isinstance(d, dict) and id(d) not in unchanged]

    def _forget_replaced_modules(self) -> None:
        """Leave out the modules that were removed from `sys.modules` or replaced there, or
        that are graded code's, since the snapshot: `add_new_modules` takes in the new ones."""
        gone = {
            name: module
            for name, module in self._modules.items()
            if self._sys_modules.get(name) is not module or name.startswith(self._skip)
        }
        if not gone:
            return
        dicts = {id(module.__dict__) for module in gone.values()}
        self._namespaces = [entry for entry in self._namespaces if id(entry[0]) not in dicts]
        for name in gone:
            del self._modules[name]

    def _read_again(self, entry: tuple) -> tuple:
        namespace, _, _, where, owner, *_ = entry
        items = [(k, v) for k, v in namespace.items() if not _volatile(where, k)]
        return self._remembered(namespace, where, items, owner)

    def add_new_modules(self) -> None:
        """Take modules imported since the last snapshot into it (called after each check)."""
        # The names are compared in C: a test seldom imports anything.
        for name in self._sys_modules.keys() - self._modules.keys():
            module = self._sys_modules[name]
            if name.startswith(self._skip) or not isinstance(
                getattr(module, "__dict__", None), dict
            ):
                continue
            self._modules[name] = module
            namespace = module.__dict__
            if (name, "*") not in VOLATILE:
                self._remember(
                    namespace,
                    name,
                    [(k, v) for k, v in namespace.items() if not _volatile(name, k)],
                    None,
                )
            for value in list(namespace.values()):
                if (
                    issubclass(type(value), type)
                    and id(value) not in self._classes
                    and vars(value).get("__module__") == name
                ):
                    self._classes.add(id(value))
                    where = f"{name}.{value.__qualname__}"
                    # vars(cls) is a live view of the class's namespace: kept, it shows changes.
                    items = [(k, v) for k, v in vars(value).items() if not _volatile(where, k)]
                    self._remember(vars(value), where, items, value)
            self._watch(name, module)

    def _watch(self, name: str, module) -> None:
        """What is checked of a module beyond its names: its data if it is a grader's, and
        the count of writes to it (or to its registries) if the graders decide with it."""
        namespace = module.__dict__
        if name.startswith(DATA_MODULES):
            self._data[name] = self._fingerprint(namespace)
        deciding = name in DECIDING or name.startswith(DECIDING_PREFIXES)
        if self._stage_tests and name.startswith(self._stage_tests):
            deciding = id(namespace) not in self._wrapped
        if self._stage_tests and name in TORCH_DECIDING:
            deciding = True
        for kind in TORCH_DECIDING_CLASSES.get(name, ()) if self._stage_tests else ():
            own = _own_dict(vars(getattr(module, kind)))
            self._count_writes(f"an attribute of {name}.{kind}", own)
        if deciding and name not in COMPILED_BY_DYNAMO:
            self._count_writes(f"a name of {name}", namespace)
        for key, value in list(namespace.items()) if name in REGISTRIES else ():
            if REGISTRIES[name](key) and isinstance(value, dict):
                self._count_writes(f"an entry of {name}.{key}", value)

    def _count_writes(self, what: str, namespace: dict) -> None:
        count = WriteCount(namespace)
        self._writes.append((what, namespace, count, count.read()))

    def _remember(
        self, namespace, where: str, items: list[tuple[str, object]], owner: type | None
    ) -> None:
        self._namespaces.append(self._remembered(namespace, where, items, owner))

    def _remembered(
        self, namespace, where: str, items: list[tuple[str, object]], owner: type | None
    ) -> tuple:
        """The entry of `_namespaces` for a namespace and its `items` (the keyword defaults
        of its functions are taken in too)."""
        names, objects = zip(*items) if items else ((), ())
        writes = WriteCount(_own_dict(namespace)) if self._counting else UNCOUNTED
        at_snapshot = writes.read() if self._counting else NEVER
        for value in objects:
            function = getattr(value, "__func__", value) if type(value) in WRAPPERS else value
            if (
                type(function) is FunctionType
                and id(function) not in self._kwdefaults
                # Only keyword-only parameters have keyword defaults; and reading them makes
                # the sandbox read the stack (it watches who reads defaults).
                and function.__code__.co_kwonlyargcount
            ):
                defaults = function.__kwdefaults__
                if defaults:
                    self._kwdefaults[id(function)] = _defaults_entry(function, defaults)
        return (namespace, names, objects, where, owner, writes, at_snapshot)

    def changes(self) -> list[str]:
        """What differs from the snapshot: `module.name`, `Class.attribute`, or a hook."""
        changed = [
            f"sys.modules[{name!r}]"
            for name, module in self._modules.items()
            if self._sys_modules.get(name, MISSING) is not module
        ]
        # A dict not written to since the snapshot holds what it held then: only the others
        # are compared, in one pass in C over the names; one that changed, in Python.
        written = compress(self._namespaces, _written(self._namespaces))
        for namespace, names, objects, where, owner, *_ in written:
            if not all(map(is_, map(namespace.get, names, repeat(MISSING)), objects)):
                changed += [
                    f"{where}.{name}"
                    for name, value in zip(names, objects)
                    if namespace.get(name, MISSING) is not value
                ]
            if len(namespace) > len(names):
                changed += [
                    f"{where}.{name} (added)" for name in self._added(namespace, names, owner)
                ]
        if sys.meta_path is not self._meta_path or tuple(self._meta_path) != self._hooks[0]:
            changed.append("sys.meta_path (an import hook)")
        if sys.path_hooks is not self._path_hooks or tuple(self._path_hooks) != self._hooks[1]:
            changed.append("sys.path_hooks (an import hook)")
        changed += [
            f"the keyword defaults of {function.__module__}.{function.__qualname__}"
            for function, defaults, keys, values in self._kwdefaults.values()
            if tuple(defaults) != keys or not all(map(is_, defaults.values(), values))
        ]
        for name, fingerprint in self._data.items():
            if self._fingerprint(self._modules[name].__dict__) != fingerprint:
                changed.append(f"the data of {name}")
        changed += [
            f"{what} (perhaps put back since)"
            for what, _, count, at_snapshot in self._writes
            if count.read() != at_snapshot
        ]
        if self._modes() != self._baseline_modes:
            changed.append("torch's function and dispatch modes (a mode left active)")
        if self._thread_count() > self._threads:
            changed.append("the threads (graded code left one running)")
        return changed

    @staticmethod
    def _added(namespace, names: tuple, owner: type | None) -> list[str]:
        """Names added since the snapshot that change behaviour: a special method or a name
        that hides one of a base class (for a class), a builtin's name (for a module)."""
        known = set(names)
        added = [name for name in list(namespace) if name not in known]
        if owner is None:
            return [name for name in added if name in BUILTIN_NAMES]
        return [
            name
            for name in added
            if name not in VOLATILE_CLASS_NAMES
            and (
                (name.startswith("__") and name.endswith("__"))
                or any(name in vars(base) for base in owner.__mro__[1:])
            )
        ]

    def _modes(self) -> tuple[int, int]:
        return tuple(count() for count in self._mode_counts)

    def _fingerprint(self, namespace: dict) -> tuple:
        """A module's data as plain values: what a grader compares against, item by item.

        Only its containers and constants: an object of the grader's (a recorder that
        fills up as a test runs, say) is the grader's to change, and rebinding it is
        seen with every other name.
        """
        return tuple(
            (key, self._value(value, set()))
            for key, value in list(namespace.items())
            if not key.startswith("__") and type(value) in DATA_KINDS
        )

    def _value(self, value, seen: set, depth: int = 0) -> object:
        """`value` as builtin numbers, strings and tuples, read without running its methods.

        Containers are walked by their exact type, a few levels deep; code (modules,
        classes, functions) and anything deeper stands for itself (its `id`); any other
        object for itself with its attributes, and a tensor with its version counter,
        which every in-place change increments.
        """
        kind = type(value)
        if kind in SCALARS:
            return (kind, repr(value) if kind is float else value)  # repr: nan == nan
        if id(value) in seen or depth > MAX_DEPTH or isinstance(value, CODE_KINDS):
            return ("object", id(value))
        seen.add(id(value))
        if kind in (list, tuple, set, frozenset):
            items = [self._value(item, seen, depth + 1) for item in value]
            return (kind, tuple(sorted(items, key=repr) if kind in (set, frozenset) else items))
        if kind is dict:
            return (kind, self._dict_value(value, seen, depth))
        version = value._version if (kind.__module__, kind.__name__) in TENSOR_KINDS else None
        try:
            attributes = object.__getattribute__(value, "__dict__")
        except AttributeError:
            attributes = None
        state = (
            tuple((key, self._value(item, seen, depth + 1)) for key, item in attributes.items())
            if type(attributes) is dict
            else None
        )
        return (kind, id(value), version, state)

    def _dict_value(self, value: dict, seen: set, depth: int) -> tuple:
        """A dict's items as plain values. One not written to since the snapshot holds the
        same objects as then: of those, only the ones that can change in place (containers
        and other objects, not numbers, strings or code) are read again. `support._BOUND`
        holds about 3,000 of torch's functions and names, which this reads in about 1.5 ms
        instead of 5 ms."""
        known = self._data_dicts.get(id(value))
        if known is not None and known.writes.read() == known.at_snapshot:
            items = list(known.items)
            for index, item in known.mutable:
                items[index] = (items[index][0], self._value(item, seen, depth + 1))
            return tuple(items)
        items = tuple(
            (self._value(k, seen, depth + 1), self._value(v, seen, depth + 1))
            for k, v in value.items()
        )
        if self._counting and known is None and all(map(_constant, value)):
            mutable = [(i, v) for i, v in enumerate(value.values()) if not _constant(v)]
            writes = WriteCount(value)
            self._data_dicts[id(value)] = ReadDict(writes, writes.read(), items, mutable)
        return items

    @staticmethod
    def _thread_count() -> int:
        return len(sys._current_frames())


class ReadDict(NamedTuple):
    """A dict of a grader's data as the snapshot read it (see `Guard._dict_value`).

    Attributes:
        writes: The count of writes to the dict (which it keeps alive, so its id stays its).
        at_snapshot: The count when it was read.
        items: Its items as plain values.
        mutable: `(index, value)` of the items whose values can change in place.
    """

    writes: WriteCount
    at_snapshot: int
    items: tuple
    mutable: list


class WriteCount:
    """How many times a dict has been written to, as CPython counts: each write gives the
    dict a new version tag (PEP 509), which only C reads. The reading is set up here, before
    graded code runs: the sandbox refuses ctypes to graded code.

    Args:
        namespace: The dict, kept alive here so that the address stays its.
    """

    # The tag's place in a dict object: after the reference count, the type and the length.
    OFFSET = 3 * ctypes.sizeof(ctypes.c_ssize_t)
    # From Python 3.12 the tag's low bits are not a count: 8 of them say which dict
    # watchers watch the dict (torch.compile watches the builtins' dict on 3.12, which is
    # no write), and from 3.13 4 more count a watched dict's writes. The count is above them.
    LOW_BITS = 0 if sys.version_info < (3, 12) else 8 if sys.version_info < (3, 13) else 12

    def __init__(self, namespace: dict) -> None:
        self._namespace = namespace
        self._tag = ctypes.c_uint64.from_address(id(namespace) + self.OFFSET)

    def read(self) -> int:
        return self._tag.value >> self.LOW_BITS


# The count of a dict first seen once the sandbox was armed (it refuses the ctypes that
# counting needs): a private dict's, which no reading equals.
UNCOUNTED = WriteCount({})
NEVER = -1
# The parts of an entry of `Guard._namespaces` and of a count that `_written` reads.
_WRITES, _AT_SNAPSHOT = itemgetter(5), itemgetter(6)
_TAG, _VALUE = attrgetter("_tag"), attrgetter("value")


def _written(entries: list[tuple]) -> Iterator[bool]:
    """For each entry of `Guard._namespaces`, whether its dict was written to since the
    entry was made (always, for one with no count). Read in C, the way `WriteCount.read`
    reads one count: the entries are some 9,000, and are read after every test."""
    tags = map(_TAG, map(_WRITES, entries))
    readings = map(rshift, map(_VALUE, tags), repeat(WriteCount.LOW_BITS))
    return map(ne, readings, map(_AT_SNAPSHOT, entries))


def _check_write_count() -> None:
    """Make sure that `WriteCount` reads the tag on this Python (a build may lay dicts out
    otherwise): a guard that saw no write would pass every test."""
    probe: dict = {}
    count = WriteCount(probe)
    before = count.read()
    probe["written"] = True
    if count.read() == before:
        raise RuntimeError(
            f"guard.WriteCount cannot see writes to a dict on Python {sys.version}: the "
            "grading cannot run here. Use the Python that pyproject.toml names."
        )


_check_write_count()


def _defaults_entry(function: FunctionType, defaults: dict) -> tuple:
    """An entry of `Guard._kwdefaults`: the function, its keyword defaults dict, and that
    dict's keys and values now."""
    return function, defaults, tuple(defaults), tuple(defaults.values())


def _own_dict(namespace) -> dict:
    """The dict itself: a module's namespace, or the one behind a class's read-only view
    (`vars(cls)`, whose one referent it is)."""
    if type(namespace) is dict:
        return namespace
    (own,) = gc.get_referents(namespace)
    return own


def _wrapped_globals() -> set[int]:
    """The ids of the module dicts whose names tracing swaps and puts back: those that
    `wrap` (minifx's or torch.fx's) registered a function of."""
    found = set()
    for module, registry in WRAP_REGISTRIES:
        entries = getattr(sys.modules.get(module), registry, None)
        found |= {id(names) for names in entries.values()} if isinstance(entries, dict) else set()
    return found


def _constant(value) -> bool:
    """Whether `value` reads the same as long as it is the same object: a number, a
    string, code (which the guard compares by identity)."""
    return type(value) in SCALARS or isinstance(value, CODE_KINDS)


def _volatile(where: str, name: str) -> bool:
    """Whether `where.name` (a module's or a class's) changes by itself while programs run."""
    return (where, name) in VOLATILE or name.startswith(VOLATILE_PREFIXES)
