"""The build track in the grading harness: build tasks as gradable entries, and what of a
submission's minifx a task's worker runs.

A build task (tests/tasks.py) is marked in the reference source and graded by the stage
tests that carry its marker. The judge grades it like an exercise, in its own time- and
memory-limited worker, with two differences:

- **What is graded.** Only the files of minifx that hold tasks come from the submission;
  every other file of minifx is the instructor's (the judge's trusted copy). So a
  submission changes nothing outside its tasks, and the sandbox treats exactly those
  files as graded code.
- **What grades it.** The stage tests that carry `pytest.mark.task("<id>")`, found by
  reading the trusted test files (`tests.tasks.task_tests`), never by running them.

A file that does not compile costs the tasks that need it: those of its stage and of
later stages (a stage imports the earlier ones), each with a message naming the file
and line; the tasks of earlier stages are still graded.
"""

from __future__ import annotations

import ast
import contextlib
import os
import re
from pathlib import Path

from tests import tasks as build_tasks
from tests.grading.manifest import Exercise, GradingError

# The order of the stages, as minifx/__init__.py lists them: a stage imports only earlier ones.
STAGES = ("proxy", "graph", "codegen", "interpreter", "passes")


def load_tasks(trusted: dict[str, bytes]) -> list[Exercise]:
    """The build tasks of the trusted minifx, as entries the judge grades (`kind="task"`).

    Raises:
        GradingError: If the markers are broken, or a task has no marked test.
    """
    try:
        found = build_tasks.find_tasks(
            {p: d for p, d in trusted.items() if p.startswith("minifx/")}
        )
        graded = build_tasks.task_tests(stage_tests(trusted))
    except (build_tasks.TaskError, SyntaxError) as exc:
        raise GradingError(f"cannot read the build tasks: {exc}") from exc
    entries = []
    for task in found:
        if task.id not in graded:
            raise GradingError(f"task {task.id} has no test marked @pytest.mark.task({task.id!r})")
        entries.append(
            Exercise(
                task.id,
                task.title,
                task.chapter,
                ",".join(task.paths),
                ";".join(sorted(graded[task.id])),
                task.points,
                kind="task",
            )
        )
    return entries


def stage_tests(trusted: dict[str, bytes]) -> dict[str, bytes]:
    """The trusted stage test files (not the graders, nor the grading tool's own)."""
    return {
        p: d
        for p, d in trusted.items()
        if p.startswith("tests/")
        and not p.startswith(("tests/graders/", "tests/grading/"))
        and Path(p).name.startswith("test_")
        and p.endswith(".py")
    }


def expected_tests(exercise: Exercise, trusted: dict[str, bytes]) -> set[str]:
    """The names of the test functions that grade the task."""
    return set().union(*build_tasks.task_tests(stage_tests(trusted)).get(exercise.id, {}).values())


def task_files(trusted: dict[str, bytes]) -> list[str]:
    """Every trusted minifx file that holds a task: what a submission's minifx is read for."""
    return sorted(
        p
        for p, data in trusted.items()
        if p.startswith("minifx/") and p.endswith(".py") and b"--8<-- [task:" in data
    )


# The most bytes a submitted file may hold. The judge compiles and scans each one itself,
# before any worker runs and so with no limit of time or memory: a module of 10 MB took
# it 136 s and 4.9 GB. The largest answer is a few kB, minifx's largest file 20 kB.
MAX_SUBMITTED_BYTES = 1_000_000


def read_submitted(file: Path) -> bytes:
    """The file's bytes, read up to one past `MAX_SUBMITTED_BYTES` (`too_large` refuses it)."""
    with open(file, "rb") as f:
        return f.read(MAX_SUBMITTED_BYTES + 1)


def too_large(path: str, data: bytes) -> str:
    """Why the submitted file `path` is not read, if it is larger than a file may be; or ''."""
    if len(data) <= MAX_SUBMITTED_BYTES:
        return ""
    return (
        f"{path} is larger than {MAX_SUBMITTED_BYTES // 1_000_000} MB, the most a submitted "
        "file may hold: submit the file you wrote, without data"
    )


# How far below a submission's folder, and through how many folders, files are looked
# for: a submission uploaded as a repository has them two or three levels down, and
# pathlib's `rglob` recursed through one a thousand folders deep until Python's stack ran
# out, which stopped the grading with no report.
DEEPEST, MOST_FOLDERS = 12, 20_000


def files_below(folder: Path, name: str) -> list[Path]:
    """The files called `name` below `folder` (not in it), the shallowest first, found by a
    walk that follows no link, goes `DEEPEST` levels down and reads `MOST_FOLDERS` at most."""
    found, level, seen = [], [folder], 0
    for _ in range(DEEPEST):
        deeper = []
        for parent in level[: MOST_FOLDERS - seen]:
            seen += 1
            with contextlib.suppress(OSError), os.scandir(parent) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        deeper.append(Path(entry.path))
                    elif entry.name == name and parent != folder and entry.is_file():
                        found.append(Path(entry.path))
        level = sorted(deeper)
    return sorted(found, key=lambda path: (len(path.parts), path))


def submitted_package(paths: list[str], folder: Path) -> dict[str, bytes]:
    """The submission's versions of the task files `paths`, found at the same paths below
    `folder`, or below the first folder under it that holds `minifx/__init__.py` (a
    submission uploaded as a folder of the repository)."""
    submission = folder
    if not (folder / "minifx").is_dir():
        inits = [p for p in files_below(folder, "__init__.py") if p.parent.name == "minifx"]
        folder = inits[0].parent.parent if inits else folder
    found = {}
    for path in paths:
        file = folder / path
        if file.is_file() and inside(file, submission):
            found[path] = read_submitted(file)
    return found


def inside(file: Path, folder: Path) -> bool:
    """Whether `file` is in `folder` itself, not reached through a link that leads out of
    it: a submission's `minifx -> /autograder/source/minifx` would hand in the solutions."""
    return not file.is_symlink() and file.resolve().is_relative_to(folder.resolve())


def stage_of(path: str) -> int:
    """0 for `minifx/proxy/...` up to 4 for `minifx/passes/...`."""
    parts = path.split("/")
    return STAGES.index(parts[1]) if len(parts) > 2 and parts[1] in STAGES else 0


def precheck(
    exercise: Exercise,
    package: dict[str, bytes],
    every_task_file: list[str],
    trusted: dict[str, bytes] | None = None,
) -> str:
    """Why the task cannot be graded at all, in one sentence, or ''. With `trusted`, a
    task file must also equal the trusted one outside its task regions (see `outside`),
    and run no code of the student's when it is imported (see `runs_on_import`)."""
    own = exercise.module.split(",")
    reach = max(stage_of(path) for path in own)
    for path in (p for p in every_task_file if stage_of(p) <= reach):
        if path not in package:
            return f"{path} is not in the submission: task {exercise.id} needs it (submit the whole minifx/ folder)"
        problem = file_problem(path, package[path], trusted, exercise.id)
        if problem:
            return problem
    return ""


# What reading a file that is valid Python can still raise: source nested too deeply for
# the parser or the compiler, or too large for memory.
UNREADABLE = (ValueError, RecursionError, MemoryError, OverflowError)


# Characters that `str.splitlines` takes for line breaks and Python does not. The task
# regions are found by lines (tests/tasks.py), the sandbox knows a function by the line
# the compiler gives it: with one of these in a file, the two counts disagree, and the
# functions of a later region passed for minifx's own (round eleven: 5 points a task).
FALSE_LINE_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def false_line_break(path: str, data: bytes) -> str:
    """Why the file `path` is refused if it holds one of `FALSE_LINE_BREAKS`, or ''."""
    text = data.decode("utf-8", "replace")
    found = FALSE_LINE_BREAKS.search(text)
    if found is None:
        return ""
    line = text.count("\n", 0, found.start()) + 1
    return (
        f"{path} holds {found.group()!r} at line {line}, a character that some tools count as "
        "a line break and Python does not: remove it"
    )


# Anything that looks like a task marker. Each must be one exactly (tests/tasks.py's START
# or END), so that the checks here and the worker's sandbox read the same regions: an end
# marker with words after it and a start marker behind a no-break space, in a docstring,
# which the worker read as markers and the checks did not, made a helper outside the
# worker's regions count as minifx's own (twelfth red-team round: task 1.1's stub, 5 points).
MARKER_LIKE = re.compile(r"--8<--\s*\[\s*(end-)?task")


def false_marker(path: str, data: bytes) -> str:
    """Why the file `path` is refused if a line looks like a task marker and is not one, or ''."""
    lines = data.decode("utf-8", "replace").splitlines()
    for number, line in enumerate(lines, start=1):
        if MARKER_LIKE.search(line) and not (
            build_tasks.START.match(line) or build_tasks.END.match(line)
        ):
            return (
                f"{path} line {number} looks like a task marker and is not one: a marker is "
                "a comment line of its own, `# --8<-- [task:N.M] ...` or "
                "`# --8<-- [end-task:N.M]`, with only spaces or tabs before it. Write it as "
                "the release has it"
            )
    return ""


def file_problem(path: str, data: bytes, trusted: dict[str, bytes] | None, task: str = "") -> str:
    """Why the submitted task file `path` cannot be imported to grade `task`, or ''."""
    if problem := too_large(path, data) or false_line_break(path, data) or false_marker(path, data):
        return f"{problem}; task {task} imports it"
    try:
        compile(data, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return (
            f"{path} is not valid Python at line {exc.lineno}: {exc.msg}. Task {task} imports it, "
            "so its tests could not run; tasks of earlier stages were still graded"
        )
    except UNREADABLE as exc:
        return f"{path} cannot be read as Python ({type(exc).__name__}); task {task} imports it"
    if not trusted or path not in trusted:
        return ""
    try:  # these read the file's syntax tree, which can be deeper than what compiles
        problem = (
            changed_outside(path, data, trusted[path])
            or runs_on_import(path, data, trusted[path])
            or pretends(path, data)
        )
    except UNREADABLE as exc:
        problem = f"{path} cannot be read as Python ({type(exc).__name__})"
    return problem + f"; task {task} imports it, so its tests did not run" if problem else ""


def importable(package: dict[str, bytes], trusted: dict[str, bytes]) -> dict[str, bytes]:
    """The task files a task's worker imports: `package`'s, but the carved one for each
    that the submission lacks or that `file_problem` refuses (never the trusted file: it
    holds the solutions).

    A task's worker imports every file of minifx, those of later stages too (where they
    compile), before its sandbox is armed: a file its task does not need, and which would
    run code on import, is replaced by the carved one, so that it costs only the tasks
    that need it (their `precheck` says why).
    """
    carve = [
        path
        for path in task_files(trusted)
        if path not in package or file_problem(path, package[path], trusted)
    ]
    return {**package, **carved_files(trusted, carve)}


def carved_files(trusted: dict[str, bytes], paths: list[str]) -> dict[str, bytes]:
    """The trusted task files `paths` with every task carved out, as a student release has
    them: what a task's worker gets for a task file the submission lacks, never the
    instructor's solution."""
    minifx = {p: data for p, data in trusted.items() if p.startswith("minifx/")}
    found = build_tasks.find_tasks(minifx)
    return {
        path: build_tasks.carve_source(path, trusted[path].decode("utf-8"), found).encode()
        for path in paths
    }


def outside(text: str) -> list[tuple[int, str]] | None:
    """The `(line number, line)` pairs of a file outside its task regions (marker lines
    included), or None if its markers do not pair up."""
    kept, depth = [], 0
    for number, line in enumerate(text.splitlines(), start=1):
        if build_tasks.END.match(line):
            depth -= 1
        if depth == 0:
            kept.append((number, line))
        if build_tasks.START.match(line):
            depth += 1
        if depth not in (0, 1):
            return None
    return kept if depth == 0 else None


def changed_outside(path: str, submitted: bytes, reference: bytes) -> str:
    """Why `submitted` differs from `reference` outside the task regions, or ''.

    Only the code between a task's markers is the student's: the sandbox grades it as
    student code and trusts the rest of the file, so the rest must be the instructor's.
    """
    mine = outside(submitted.decode("utf-8", "replace"))
    theirs = outside(reference.decode("utf-8", "replace")) or []
    if mine is None:
        return f"{path}: its task markers (# --8<-- [task:...] / [end-task:...]) were removed or broken; put them back"
    for (number, line), (_, want) in zip(mine, theirs):
        if line != want:
            return (
                f"{path} was changed outside its task regions, at line {number} ({line.strip()[:60]!r}): "
                "only the code between a task's markers is yours; put the rest back as it was "
                "(imports a task needs go inside its functions)"
            )
    if len(mine) != len(theirs):
        return f"{path} was changed outside its task regions (lines added or removed); put the rest back as it was"
    return ""


# --- what a task region may hold -------------------------------------------------------

DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def runs_on_import(path: str, submitted: bytes, reference: bytes) -> str:
    """Why code in `submitted`'s task regions would run when the file is imported, or ''.

    A task file is imported while pytest collects the tests, before the worker's sandbox
    is armed and its guard takes its snapshot; and the sandbox takes code whose first line
    is outside the regions (a file's top level, a class body) for the instructor's. So
    defining what a region holds must run nothing of the student's: a region holds whole
    functions only, with the reference's decorators and names or constants as defaults,
    special methods only of names the reference defines, and the file's own top-level
    code calls none of them while it loads.
    """
    tree, theirs = ast.parse(submitted), ast.parse(reference)
    statements = list(_statements(tree.body, region_spans(submitted.decode("utf-8", "replace"))))
    defined = {s.name for s, inside, _ in statements if inside and isinstance(s, DEFINITIONS)}
    allowed = (
        {n.name for n in ast.walk(theirs) if isinstance(n, DEFINITIONS) and _dunder(n.name)},
        {
            ast.unparse(d)
            for n in ast.walk(theirs)
            if isinstance(n, DEFINITIONS)
            for d in n.decorator_list
        },
    )
    lazy = any(
        isinstance(n, ast.ImportFrom)
        and n.module == "__future__"
        and "annotations" in [a.name for a in n.names]
        for n in tree.body
    )
    for statement, inside, in_function in statements:
        if inside:
            problem = _region_problem(statement, defined, allowed, lazy)
        else:
            called = set() if in_function else defined & _called_on_import(statement)
            problem = f"`{min(called)}` is called while the file loads" if called else ""
        if problem:
            return (
                f"{path}, line {_first_line(statement)}: {problem}, before grading can watch it; "
                "a task region holds whole functions only, and defining them may run no code"
            )
    return ""


def pretends(path: str, submitted: bytes) -> str:
    """Why an object that a task region's code makes could pass for what it is not, or '':
    the exercises' rule (`scan.py`), applied to what the regions hold. The stage tests
    compare with `==`: a class made inside observers' `quant_range`, whose `__eq__`
    answered True, earned all 5 points of task 8.1 (ninth red-team round). The reference's
    regions make no such object."""
    from tests.grading import scan

    text = submitted.decode("utf-8", "replace")
    tree = ast.parse(submitted)
    found: list[tuple[int, str]] = []
    for statement, inside, _ in _statements(tree.body, region_spans(text)):
        for node in ast.walk(statement) if inside else ():
            if isinstance(node, ast.ClassDef):
                found += scan._class_rules(node)
            elif node is not statement:
                found += [
                    (node.lineno, t) for t in scan._check(node, set()) if scan.WHY["pretend"] in t
                ]
    if not found:
        return ""
    line, problem = min(found)
    return f"{path}, line {line}: {problem}"


def region_spans(text: str) -> list[tuple[int, int]]:
    """The `(start, end)` marker lines of each task region in `text`."""
    spans, opened = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if build_tasks.START.match(line):
            opened.append(number)
        elif build_tasks.END.match(line) and opened:
            spans.append((opened.pop(), number))
    return spans


def _statements(body: list[ast.stmt], spans: list[tuple[int, int]], in_function: bool = False):
    """`(statement, inside a region, inside a function)` for each statement outside the
    regions and each outermost statement of a region, wherever it is (a region in a
    function's body runs, as that function, each time the function does)."""
    for statement in body:
        inside = any(start < _first_line(statement) < end for start, end in spans)
        yield statement, inside, in_function
        if inside:
            continue
        nested = in_function or isinstance(statement, DEFINITIONS)
        for child in _child_statements(statement):
            yield from _statements([child], spans, nested)


def _child_statements(statement: ast.stmt) -> list[ast.stmt]:
    children = []
    for field in ("body", "orelse", "finalbody", "handlers", "cases"):
        for child in getattr(statement, field, []):
            children += (
                child.body if isinstance(child, (ast.ExceptHandler, ast.match_case)) else [child]
            )
    return children


def _region_problem(statement, defined: set[str], allowed, lazy: bool) -> str:
    """What in one outermost statement of a region runs when it is defined, or ''."""
    specials, decorators = allowed
    if not isinstance(statement, DEFINITIONS):
        return f"`{ast.unparse(statement).splitlines()[0][:60]}` runs when the file is imported"
    if _dunder(statement.name) and statement.name not in specials:
        return f"`{statement.name}` is a special method that the reference does not define here"
    unknown = [d for d in statement.decorator_list if ast.unparse(d) not in decorators]
    if unknown:
        return f"the decorator `@{ast.unparse(unknown[0])[:60]}` is not one the reference uses"
    arguments = statement.args
    evaluated = [*arguments.defaults, *filter(None, arguments.kw_defaults)]
    if not lazy:  # without `from __future__ import annotations`, annotations run too
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        every += [a for a in (arguments.vararg, arguments.kwarg) if a]
        evaluated += [a.annotation for a in every if a.annotation]
        evaluated += [statement.returns] if statement.returns else []
    for expression in evaluated:
        if not _inert(expression, defined):
            return (
                f"`{ast.unparse(expression)[:60]}` in the definition of `{statement.name}` runs "
                "code, or reads a private name, when the file is imported"
            )
    return ""


def _inert(node: ast.expr, defined: set[str]) -> bool:
    """A constant, a tuple of such, or a (dotted) name that no region defines and that
    reaches into no private part (`torch._C._dispatch_library`, held as a default, kept
    for graded code what the worker takes away once the files are imported)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return True
    if isinstance(node, ast.Tuple):
        return all(_inert(item, defined) for item in node.elts)
    while isinstance(node, ast.Attribute):
        if node.attr.startswith("_"):
            return False
        node = node.value
    return isinstance(node, ast.Name) and node.id not in defined


def _called_on_import(statement: ast.stmt) -> set[str]:
    """The names a statement outside the regions calls (or decorates with) when it runs."""
    if isinstance(statement, DEFINITIONS):
        parts = [*statement.decorator_list, *statement.args.defaults]
    elif isinstance(statement, ast.ClassDef):
        parts = [*statement.decorator_list, *statement.bases, *statement.keywords]
    else:  # its expressions; the statements in its body are looked at one by one
        parts = [n for n in ast.iter_child_nodes(statement) if not isinstance(n, ast.stmt)]
    names = set()
    for part in parts:
        for node in _expressions(part):
            target = node.func if isinstance(node, ast.Call) else node if node is part else None
            while isinstance(target, ast.Attribute):
                target = target.value
            if isinstance(target, ast.Name):
                names.add(target.id)
    return names


def _expressions(node: ast.AST):
    """`node` and what it holds, but not the bodies of lambdas (they run later)."""
    yield node
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, (ast.stmt, ast.ExceptHandler)):
            yield from _expressions(child.args if isinstance(child, ast.Lambda) else child)


def _first_line(statement: ast.stmt) -> int:
    return min([statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", []))])


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def tests_sha256(grader: str, files: dict[str, bytes]) -> str:
    """One digest of a task's test files, as the worker computes it from its copies."""
    import hashlib

    digest = hashlib.sha256()
    for path in grader.split(";"):
        digest.update(files[path])
    return digest.hexdigest()
