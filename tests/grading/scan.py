"""The rules graded code must follow, checked by reading it (the judge never runs it).

An exercise asks for a few functions built with torch and minifx. Some Python can only
serve to reach into the grading: listing the garbage collector's objects, walking stack
frames, patching the modules the graders use, skipping or stopping pytest, starting
processes, leaving finalizers behind. The worker's sandbox refuses such operations at
run time; this scan finds them in the source first, so that the student reads one
sentence naming the line, and so that code which hides from the sandbox (a name built
from strings, a finalizer) is still plain to see.

Each finding is `line N: <what>: <why>; <fix>`. An exercise with a finding earns 0.
"""

from __future__ import annotations

import ast

from tests.grading.sandbox import UNAUDITED_MODULES

# Modules that graded code may not import, by what they would be used for.
INTERPRETER = {
    "gc",
    "ctypes",
    "_ctypes",
    "builtins",
    "importlib",
    "marshal",
    "runpy",
    "pkgutil",
    "code",
    "codeop",
    "pdb",
    "bdb",
    "faulthandler",
    "tracemalloc",
    "weakref",
    "_weakref",
    "atexit",
    "threading",
    "_thread",
    "concurrent",
    "multiprocessing",
    "subprocess",
    "signal",
    "socket",
    "resource",
    "mmap",
    "_imp",
    *UNAUDITED_MODULES,
}
GRADING = {"pytest", "_pytest", "pluggy", "unittest", "tests"}
# Attributes that reach the interpreter's internals: frames, code, globals, finalizers.
ATTRIBUTES = {
    "__globals__",
    "__code__",
    "__closure__",
    "__builtins__",
    "__import__",
    "__subclasses__",
    "__bases__",
    "__mro__",
    "__defaults__",
    "__kwdefaults__",
    "__del__",
    "__wrapped__",  # what functools.wraps keeps: the function a grader's wrapper records
    "tb_frame",
    "f_back",
    "f_locals",
    "f_globals",
    "gi_frame",
    "cr_frame",
    "ag_frame",
    "_getframe",
    "_current_frames",
    "settrace",
    "setprofile",
    "addaudithook",
    "meta_path",
    "path_hooks",
}
CALLS = {"exec", "eval", "compile", "__import__", "globals", "breakpoint"}
# The special methods a class of graded code may define. Any other would let an object
# pass for what it is not: `__eq__` that is always True, a `__str__` that prints the
# expected text, `__torch_function__` that answers torch.equal, a fake `__class__`.
SPECIAL_METHODS = {"__init__", "__post_init__", "__call__"}
# Special attributes that may be read by name (getattr(f, "__name__")); none may be set.
READABLE = {"__name__", "__qualname__", "__doc__", "__module__"}
WHY = {
    "interpreter": "it reaches into the running interpreter or the operating system, which graded "
    "code may not do",
    "grading": "graded code may not use the test framework or the graders (skipping or stopping a "
    "test earns nothing)",
    "patch": "graded code may not change the modules it imports (the graders rely on them)",
    "pretend": "an object of graded code may not choose how it compares, prints or converts, "
    "so that it cannot pass for the expected answer",
}
SEE = " (see the student guide, 'What graded code may not do')"


def findings(source: str | bytes) -> list[str]:
    """The rules `source` breaks, one line each, in the order of the file.

    Args:
        source: A graded module's text or bytes; it must be valid Python (the judge checks
            that first).
    """
    tree = ast.parse(source)
    imported = _imported_names(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            found += _class_rules(node)
        else:
            found += [(node.lineno, text) for text in _check(node, imported)]
    return [f"line {line}: {text}{SEE}" for line, text in sorted(set(found))]


def _imported_names(tree: ast.Module) -> set[str]:
    """The names that `import` statements bind: modules and what was taken from them."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return names


def _check(node: ast.AST, imported: set[str]) -> list[str]:
    if isinstance(node, ast.Import):
        return [
            _module_rule(alias.name, f"`import {alias.name}`")
            for alias in node.names
            if _module_rule(alias.name, "")
        ]
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        rule = _module_rule(node.module, f"`from {node.module} import ...`")
        return [rule] if rule else []
    if isinstance(node, ast.Attribute) and node.attr in ATTRIBUTES:
        return [f"`.{node.attr}`: {WHY['interpreter']}; remove it"]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "type"
        and len(node.args) == 3
    ):
        return [f"`type(name, bases, namespace)`: {WHY['pretend']}; write a class statement"]
    if isinstance(node, ast.Attribute) and node.attr == "new_class":
        return [f"`.new_class`: {WHY['pretend']}; write a class statement"]
    if isinstance(node, ast.Name) and (node.id in CALLS or node.id == "__builtins__"):
        return [f"`{node.id}`: {WHY['interpreter']}; write the code itself instead"]
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        found = [
            f"`{ast.unparse(t)} = ...`: {WHY['patch']}; keep your own names in your module"
            for t in targets
            if _patches(t, imported)
        ]
        return found + [
            f"`{ast.unparse(t)} = ...`: {WHY['pretend']}; remove it"
            for t in targets
            if isinstance(t, ast.Attribute) and _dunder(t.attr) and not _patches(t, imported)
        ]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("setattr", "delattr")
    ):
        if node.args and _root(node.args[0]) in imported:
            return [
                f"`{node.func.id}({ast.unparse(node.args[0])}, ...)`: {WHY['patch']}; keep your own "
                "names in your module"
            ]
        if (
            len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and _dunder(node.args[1].value)
        ):
            return [f"`{node.func.id}(..., {node.args[1].value!r})`: {WHY['pretend']}; remove it"]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "hasattr")
    ):
        name = (
            node.args[1].value
            if len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
            else None
        )
        if name in ATTRIBUTES or (_dunder(name) and name not in READABLE):
            return [f"`{node.func.id}(..., {name!r})`: {WHY['interpreter']}; remove it"]
    return []


def _class_rules(node: ast.ClassDef) -> list[tuple[int, str]]:
    """`(line, finding)` for special methods, defined or assigned in a class body, beyond
    `SPECIAL_METHODS`."""
    found = []
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names = [item.name]
        elif isinstance(item, (ast.Assign, ast.AnnAssign)):
            targets = item.targets if isinstance(item, ast.Assign) else [item.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
        else:
            names = []
        for name in names:
            if name == "__del__":
                found.append(
                    (
                        item.lineno,
                        f"`{node.name}.__del__`: {WHY['interpreter']} (a finalizer "
                        "runs at times nobody chose); remove it",
                    )
                )
            elif isinstance(item, (ast.Assign, ast.AnnAssign)) and name in SPECIAL_METHODS:
                # Thirteenth round: `__init__ = functools.partial(torch_function, ...)`
                # ran torch's function for the grader, with no frame of graded code's.
                found.append(
                    (
                        item.lineno,
                        f"`{node.name}.{name} = ...`: {WHY['interpreter']} (a callable "
                        "assigned as a special method runs with no line of yours); write "
                        "it with `def`",
                    )
                )
            elif (
                _dunder(name)
                and name not in SPECIAL_METHODS
                and name not in ("__slots__", "__doc__")
            ):
                found.append(
                    (
                        item.lineno,
                        f"`{node.name}.{name}`: {WHY['pretend']}; graded classes may "
                        f"define only {', '.join(sorted(SPECIAL_METHODS))} among special "
                        "methods",
                    )
                )
    return found


def _dunder(name: object) -> bool:
    return isinstance(name, str) and len(name) > 4 and name.startswith("__") and name.endswith("__")


def _module_rule(name: str, what: str) -> str:
    top = name.split(".")[0]
    if top in INTERPRETER:
        return f"{what}: {WHY['interpreter']}; remove it"
    if top in GRADING:
        return f"{what}: {WHY['grading']}; remove it"
    if top == "solutions":
        return f"{what}: graded code may not import the reference solutions; write your own"
    return ""


def _patches(target: ast.AST, imported: set[str]) -> bool:
    """Whether an assignment target is an attribute (or item) of something imported."""
    return isinstance(target, (ast.Attribute, ast.Subscript)) and _root(target) in imported


def _root(node: ast.AST) -> str | None:
    """`torch` for `torch.nn.functional.relu`; None where the chain starts elsewhere."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None
