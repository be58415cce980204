"""The code an exercise gives is the code its solution runs.

Each exercise exists twice: `exercises/chN_*.py`, where the functions to write are stubs
that raise `NotImplementedError`, and `solutions/chN_*.py`. Everything else the exercise
gives (helpers, models, constants, the methods of a class around the stubs) must be the
same in both, or a student would be graded against code they never saw. Compared as
syntax trees, so comments and layout may differ; imports may differ (an exercise imports
what the student will need). A stub must keep its solution's signature.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = [pytest.mark.meta, pytest.mark.needs_solutions]

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = sorted((ROOT / "exercises").glob("ch*.py"))
Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def is_stub(statement: ast.stmt) -> bool:
    """A function whose body, after its docstring, only raises NotImplementedError."""
    if not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    body = [s for s in statement.body if not is_docstring(s)]
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    raised = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"


def name_of(statement: ast.stmt) -> str:
    """What a statement defines (`f`, `Class`, `X`), or its whole dump if nothing."""
    if isinstance(statement, Definition):
        return statement.name
    if isinstance(statement, ast.Assign | ast.AnnAssign):
        return ast.unparse(
            statement.targets[0] if isinstance(statement, ast.Assign) else statement.target
        )
    return ast.dump(statement)


def signature(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """Parameters, defaults, annotations and decorators, as a comparable string."""
    parts = [function.args, *function.decorator_list] + (
        [function.returns] if function.returns else []
    )
    return " ".join(ast.dump(part) for part in parts)


def outline(definition: ast.ClassDef) -> str:
    """A class's bases, keywords and decorators, as a comparable string."""
    return " ".join(
        ast.dump(part)
        for part in [*definition.bases, *definition.keywords, *definition.decorator_list]
    )


def code_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    return [
        s for s in body if not is_docstring(s) and not isinstance(s, ast.Import | ast.ImportFrom)
    ]


def only_stubs_use(name: str, module: ast.Module) -> bool:
    """Whether `name` is read only inside stubs (like the `SEE` of their messages)."""
    stubs = [node for node in ast.walk(module) if is_stub(node)]
    in_stubs = {id(n) for stub in stubs for n in ast.walk(stub)}
    reads = [
        n
        for n in ast.walk(module)
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
    ]
    return bool(reads) and all(id(n) in in_stubs for n in reads)


def differences(
    given: list[ast.stmt], solution: list[ast.stmt], module: ast.Module, where: str = ""
) -> list[str]:
    """How the exercise's `given` statements differ from the `solution`'s."""
    theirs = {name_of(s): s for s in code_statements(solution)}
    found = []
    for statement in code_statements(given):
        name = f"{where}{name_of(statement)}"
        other = theirs.get(name_of(statement))
        if other is None:
            if not only_stubs_use(name_of(statement), module):
                found.append(f"{name}: in the exercise, not in the solution")
        elif is_stub(statement):
            if signature(statement) != signature(other):
                found.append(f"{name}: the stub's signature is not the solution's")
        elif isinstance(statement, ast.ClassDef) and any(is_stub(s) for s in statement.body):
            if not isinstance(other, ast.ClassDef) or outline(statement) != outline(other):
                found.append(f"{name}: not a class with the same bases and decorators")
                continue
            found += differences(statement.body, other.body, module, f"{name}.")
        elif ast.dump(statement) != ast.dump(other):
            found.append(f"{name}: differs")
    return found


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda p: p.stem)
def test_the_given_code_is_the_solution_s(exercise: Path):
    solution = ROOT / "solutions" / exercise.name
    given, solved = (ast.parse(p.read_text(encoding="utf-8")) for p in (exercise, solution))
    assert any(is_stub(node) for node in ast.walk(given)), f"{exercise.name} has no stub"
    found = differences(given.body, solved.body, given)
    assert not found, (
        f"exercises/{exercise.name} and solutions/{exercise.name} disagree:\n" + "\n".join(found)
    )
