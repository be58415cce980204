"""The architecture rules of DESIGN.md section 1, checked for every stage that exists.

1. A stage imports only itself and earlier stages (parsed from the source, and observed
   in a fresh interpreter through `sys.modules`). The one sanctioned exception: the
   imports listed in `LAZY_LATER_STAGE_IMPORTS`, each inside one named function, so that
   it runs when the function is called and never when the stage is imported.
2. `import minifx` loads no stage: the root re-exports lazily (PEP 562 `__getattr__`).
3. A stage never assigns attributes onto an earlier stage's classes or modules.

Stages are listed here once, in book order; a stage whose directory does not exist yet
is skipped, so each new stage is guarded as soon as its directory appears.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.meta

ROOT = Path(__file__).resolve().parent.parent
STAGES = ["proxy", "graph", "codegen", "interpreter", "passes"]
EXISTING = [s for s in STAGES if (ROOT / "minifx" / s / "__init__.py").is_file()]

# (file, the function the import is in, the module it imports) -> why it may import a
# later stage. torch.fx's Graph has these methods, and they need code generation
# (stage 3); they import it when called. `import minifx.graph` still loads no codegen
# (test_importing_a_stage_loads_no_later_stage), and no other import may do this.
LAZY_LATER_STAGE_IMPORTS = {
    (
        "minifx/graph/codegen_hooks.py",
        "python_code",
        "minifx.codegen.python_code",
    ): "Graph.python_code(root_module), torch.fx's method, is stage 3's python_code(graph)",
    (
        "minifx/graph/codegen_hooks.py",
        "process_inputs",
        "minifx.codegen.codegen",
    ): "Graph.process_inputs asks the graph's CodeGen (stage 3), the default one or the set one",
    (
        "minifx/graph/codegen_hooks.py",
        "process_outputs",
        "minifx.codegen.codegen",
    ): "Graph.process_outputs asks the graph's CodeGen (stage 3), the default one or the set one",
    (
        "minifx/graph/codegen_hooks.py",
        "on_generate_code",
        "minifx.codegen.codegen",
    ): "Graph.on_generate_code sets a body transformer on the graph's CodeGen (stage 3)",
}


def stage_files(stage: str) -> list[Path]:
    return sorted((ROOT / "minifx" / stage).rglob("*.py"))


def module_parts(relpath: str) -> list[str]:
    """`minifx/graph/node.py` -> `["minifx", "graph", "node"]`; a package is its `__init__`."""
    parts = relpath.removesuffix(".py").split("/")
    return parts[:-1] if parts[-1] == "__init__" else parts


def imports(relpath: str, source: str) -> list[tuple[int, str, list[str]]]:
    """Every import of the file as `(line, absolute module, imported names)`."""
    return [
        (line, module, names) for line, module, names, _ in imports_in_functions(relpath, source)
    ]


def imports_in_functions(relpath: str, source: str) -> list[tuple[int, str, list[str], str | None]]:
    """Every import as `(line, absolute module, imported names, enclosing function or None)`."""
    found = []
    package = (
        module_parts(relpath) if relpath.endswith("__init__.py") else module_parts(relpath)[:-1]
    )
    tree = ast.parse(source)
    function_of = {
        id(inner): outer.name
        for outer in ast.walk(tree)
        if isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef))
        for inner in ast.walk(outer)
        if inner is not outer
    }
    for node in ast.walk(tree):
        function = function_of.get(id(node))
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, [], function) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + (node.module.split(".") if node.module else []))
            found.append((node.lineno, module, [alias.name for alias in node.names], function))
    return found


def imported_stages(module: str, names: list[str]) -> list[str | None]:
    """The stages a minifx import loads; `None` for a minifx module outside every stage."""
    parts = module.split(".")
    if parts[0] != "minifx":
        return []
    if len(parts) > 1:
        return [parts[1] if parts[1] in STAGES else None]
    # `from minifx import X`: X is a stage package or a lazily re-exported name.
    return [name if name in STAGES else None for name in names]


def import_violations(stage: str, relpath: str, source: str) -> list[str]:
    """Imports in a stage's file of a later stage, or of minifx outside a stage."""
    rank = STAGES.index(stage)
    problems = []
    for line, module, names, function in imports_in_functions(relpath, source):
        if (relpath, function, module) in LAZY_LATER_STAGE_IMPORTS:
            continue
        for target in imported_stages(module, names):
            if target is None:
                problems.append(
                    f"{relpath}:{line}: imports {module} {names or ''}, which is no stage; "
                    f"import from the stage package that defines the name (minifx.<stage>)"
                )
            elif STAGES.index(target) > rank:
                problems.append(
                    f"{relpath}:{line}: stage {stage!r} imports the later stage {target!r} ({module}); "
                    f"a stage may use only earlier stages; offer a free function in {target!r} instead"
                )
    return problems


def earlier_stage_names(stage: str, relpath: str, source: str) -> set[str]:
    """Names the file binds to classes, functions or modules of strictly earlier stages."""
    rank = STAGES.index(stage)
    bound = set()
    tree = ast.parse(source)
    for line, module, names in imports(relpath, source):
        stages = [s for s in imported_stages(module, names) if s is not None]
        if stages and all(STAGES.index(s) < rank for s in stages):
            bound |= _bindings(tree, line, module)
    return bound


def _bindings(tree: ast.Module, line: int, module: str) -> set[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and node.lineno == line:
            return {
                alias.asname or alias.name.split(".")[0]
                for alias in node.names
                if alias.name == module
            }
        if isinstance(node, ast.ImportFrom) and node.lineno == line:
            return {alias.asname or alias.name for alias in node.names}
    return set()


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def patch_violations(stage: str, relpath: str, source: str) -> list[str]:
    """Assignments (`Graph.x = ...`, `setattr(Graph, ...)`) onto an earlier stage's objects."""
    earlier = earlier_stage_names(stage, relpath, source)
    problems = []
    for node in ast.walk(ast.parse(source)):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("setattr", "delattr")
        ):
            targets = node.args[:1]
        for target in targets:
            is_attr = isinstance(target, ast.Attribute) or isinstance(node, ast.Call)
            if is_attr and _root_name(target) in earlier:
                problems.append(
                    f"{relpath}:{node.lineno}: stage {stage!r} changes {ast.unparse(target)}, which an earlier "
                    f"stage defines; no monkey-patching: write a free function or a subclass in {stage!r}"
                )
    return problems


def _read(path: Path) -> tuple[str, str]:
    return path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")


# --- the rules, on every existing stage -------------------------------------------


def test_the_first_stage_exists():
    assert EXISTING and EXISTING[0] == STAGES[0], f"minifx/{STAGES[0]}/__init__.py is missing"


@pytest.mark.parametrize("stage", EXISTING)
def test_stage_imports_only_itself_and_earlier_stages(stage):
    problems = [p for f in stage_files(stage) for p in import_violations(stage, *_read(f))]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("stage", EXISTING)
def test_stage_never_patches_an_earlier_stage(stage):
    problems = [p for f in stage_files(stage) for p in patch_violations(stage, *_read(f))]
    assert not problems, "\n".join(problems)


def loaded_after(statement: str) -> list[str]:
    """The minifx modules in `sys.modules` after running `statement` in a fresh interpreter."""
    code = f"import json, sys; {statement}; print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'minifx')))"
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, f"`{statement}` failed in a fresh interpreter:\n{run.stderr}"
    return json.loads(run.stdout.splitlines()[-1])


@pytest.mark.parametrize("stage", EXISTING)
def test_importing_a_stage_loads_no_later_stage(stage):
    later = STAGES[STAGES.index(stage) + 1 :]
    loaded = [
        m
        for m in loaded_after(f"import minifx.{stage}")
        if m.split(".")[1:2] and m.split(".")[1] in later
    ]
    assert not loaded, (
        f"`import minifx.{stage}` loaded later stages: {loaded}; a stage must import only earlier ones"
    )


def test_importing_minifx_loads_no_stage():
    loaded = [m for m in loaded_after("import minifx") if m != "minifx"]
    assert not loaded, (
        f"`import minifx` loaded {loaded}; re-export stage names lazily with a module __getattr__ (PEP 562)"
    )


# --- the checkers themselves, on made-up files --------------------------------------


@pytest.mark.parametrize(
    ("relpath", "source", "expected"),
    [
        ("minifx/graph/graph.py", "from minifx.proxy import Proxy", []),
        ("minifx/graph/graph.py", "from ..proxy.proxy import Proxy", []),
        ("minifx/graph/__init__.py", "from .graph import Graph", []),
        ("minifx/graph/graph.py", "import torch.fx", []),
        (
            "minifx/graph/graph.py",
            "from minifx.codegen import python_code",
            ["later stage 'codegen'"],
        ),
        (
            "minifx/graph/graph.py",
            "def f():\n    from ..interpreter import Interpreter",
            ["later stage 'interpreter'"],
        ),
        ("minifx/graph/__init__.py", "from ..passes import shape_prop", ["later stage 'passes'"]),
        ("minifx/graph/graph.py", "import minifx.passes.shape_prop", ["later stage 'passes'"]),
        ("minifx/graph/graph.py", "from minifx import symbolic_trace", ["which is no stage"]),
        ("minifx/graph/graph.py", "from .. import codegen", ["later stage 'codegen'"]),
    ],
)
def test_import_checker(relpath, source, expected):
    problems = import_violations("graph", relpath, source)
    assert len(problems) == len(expected) and all(e in p for e, p in zip(expected, problems)), (
        problems
    )


@pytest.mark.parametrize(
    ("source", "allowed"),
    [
        ("def python_code(self):\n    from ..codegen.python_code import python_code", True),
        ("class G:\n    def python_code(self):\n        from ..codegen.python_code import f", True),
        ("from ..codegen.python_code import python_code", False),  # at import time
        ("def other(self):\n    from ..codegen.python_code import python_code", False),
        ("def python_code(self):\n    from ..codegen.graph_module import GraphModule", False),
    ],
    ids=["in-the-function", "in-the-method", "module-level", "another-function", "another-module"],
)
def test_the_lazy_import_allowlist_names_file_function_and_module(source, allowed):
    problems = import_violations("graph", "minifx/graph/codegen_hooks.py", source)
    assert (not problems) is allowed, problems


def test_every_allowlisted_lazy_import_exists_inside_its_function():
    found = {
        (relpath, function, module)
        for relpath, _, _ in LAZY_LATER_STAGE_IMPORTS
        for _, module, _, function in imports_in_functions(*_read(ROOT / relpath))
    }
    stale = set(LAZY_LATER_STAGE_IMPORTS) - found
    assert not stale, f"allowlisted imports that no longer exist (remove them): {sorted(stale)}"


@pytest.mark.parametrize(
    ("source", "patched"),
    [
        ("from minifx.proxy import Proxy\nProxy.extra = 1", True),
        ("from ..proxy import Proxy as P\nsetattr(P, 'extra', 1)", True),
        ("import minifx.proxy\nminifx.proxy.Proxy.extra = 1", True),
        ("from minifx import proxy\nproxy.Proxy.extra += 1", True),
        ("from minifx.proxy import Proxy\nclass Sub(Proxy):\n    pass\nSub.extra = 1", False),
        ("from minifx.proxy import Proxy\np = Proxy\nx = Proxy.__name__", False),
        ("from .graph import Graph\nGraph.extra = 1", False),
    ],
)
def test_patch_checker(source, patched):
    assert bool(patch_violations("graph", "minifx/graph/extra.py", source)) == patched
