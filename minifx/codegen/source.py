"""Running, explaining and saving generated source.

- `compile_forward` execs the source under a file name that `linecache`
  knows, so tracebacks, `pdb` and `inspect.getsource` show the generated lines;
  the name says where the traced code came from, as torch.fx's does.
- `explain_error` adds a note to an exception raised inside generated code,
  naming the node whose line failed.
- `import_block` writes the imports that recreate a source's globals; pickling
  (`retrace`) and `GraphModule.to_folder` (`module_source`) need them.
"""

from __future__ import annotations

import builtins
import hashlib
import importlib
import itertools
import linecache
import pickle
from pathlib import Path
from typing import Any, Callable

import torch
import torch.fx.graph_module

from ..graph.tracer import Tracer
from ..proxy.ir import format_target
from .python_code import CUSTOM_BUILTINS, PythonCode

# Hash of a source and its origin -> the start of its file name (`<eval_with_key>.N`).
_SOURCE_KEYS: dict[str, str] = {}
_own_numbers = itertools.count()

# Modules that to_folder rebuilds from their repr instead of pickling them.
_MODULES_WITH_EXACT_REPR = (torch.nn.Linear, torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d,
                            torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d)


# --8<-- [start:compile_forward]
def compile_forward(code: PythonCode, co_fields: dict | None = None) -> tuple[Callable, str]:
    """Exec the generated source; return its `forward` and the file name it runs under.

    The file name is torch.fx's: `<eval_with_key>.3`, followed by where the
    traced code lives when the tracer recorded it (`co_fields`), as in
    `<eval_with_key>.3 from /home/me/model.py:12 in forward`. It is
    registered in `linecache`, which is where tracebacks and debuggers look
    for source lines.
    """
    filename = register_source(code.src, co_fields)
    namespace = dict(code.globals)
    # dont_inherit: this module's `from __future__ import annotations` must not
    # turn the generated code's annotations into strings.
    try:
        compiled = compile(code.src, filename, "exec", dont_inherit=True)
    except SyntaxError as error:  # a graph python_code could not check: say which line
        error.add_note(f"The generated code of this graph does not compile; line {error.lineno} "
                       f"is:\n    {(error.text or '').strip()}\nprint the code with "
                       "minifx.codegen.python_code(graph).src, and fix the graph's node.")
        raise
    exec(compiled, namespace)
    return namespace["forward"], filename


def register_source(src: str, co_fields: dict | None = None) -> str:
    """Store `src` in `linecache` under a file name of its own, and return that name.

    The same code from the same place gets the same name again, so
    recompiling in a loop does not fill the cache.
    """
    origin = (f" from {co_fields['co_filename']}:{co_fields['co_firstlineno']} in "
              f"{co_fields['co_name']}") if co_fields else ""
    key = hashlib.sha1((src + origin).encode()).hexdigest()
    if key not in _SOURCE_KEYS:
        _SOURCE_KEYS[key] = _fresh_key()
    filename = _SOURCE_KEYS[key] + origin
    # mtime None: linecache.checkcache() never drops an entry that has no file.
    linecache.cache[filename] = (len(src), None, src.splitlines(keepends=True), filename)
    return filename
# --8<-- [end:compile_forward]


def _fresh_key() -> str:
    """`<eval_with_key>.N` with a number torch.fx will not use: a program that runs both
    libraries must never get two sources under one name, or tracebacks show wrong lines."""
    loader = getattr(torch.fx.graph_module, "_loader", None)  # torch.fx's numbering, if any
    if hasattr(loader, "_get_key"):
        return loader._get_key()
    return f"<eval_with_key>.minifx{next(_own_numbers)}"


# --8<-- [start:explain_error]
def explain_error(error: BaseException, gm: Any) -> None:
    """Add a note to `error` naming the node of `gm` whose generated line raised it."""
    frames = []
    traceback = error.__traceback__
    while traceback is not None:
        if traceback.tb_frame.f_code.co_filename == gm._source_file:
            frames.append(traceback.tb_lineno)
        traceback = traceback.tb_next
    index = gm._lineno_map.get(frames[-1] - gm._prologue_start) if frames else None
    if index is None:
        return
    node = next(n for i, n in enumerate(gm.graph.nodes) if i == index)
    line = linecache.getline(gm._source_file, frames[-1]).strip()
    note = (f"While running node %{node.name} ({node.op} {format_target(node.target)}) in the generated "
            f"forward of {gm._get_name()}, line {frames[-1]}:\n    {line}\n"
            "print(gm.code) shows the whole function; print(gm.graph) shows the nodes.")
    if note not in getattr(error, "__notes__", []):
        error.add_note(note)
# --8<-- [end:explain_error]


def import_block(globals_: dict[str, Any]) -> str:
    """Import statements that define every global of a generated source.

    Raises:
        pickle.PicklingError: if a global cannot be imported by name (a
            lambda, a local function, a tensor constant, ...).
    """
    lines = set()
    for name, value in globals_.items():
        builtin = CUSTOM_BUILTINS.get(name)
        if builtin is not None and builtin[0] is value:
            lines.add(builtin[1])
        elif getattr(builtins, name, None) is value:
            continue  # `getattr`, `int`, ...: always there
        else:
            lines.add(_import_statement(name, value))
    imports_first = sorted(lines, key=lambda line: (not line.startswith(("import", "from")), line))
    return "\n".join(imports_first) + "\n"


def _import_statement(name: str, value: Any) -> str:
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and _lookup(module, qualname) is value:
        first, *rest = qualname.split(".")
        statement = f"from {module} import {first} as {name}"
        return statement + (f"; {name} = {name}.{'.'.join(rest)}" if rest else "")
    raise pickle.PicklingError(
        f"The generated code refers to {name} = {value!r:.80}, which cannot be imported by "
        "name, so the GraphModule cannot be saved as source (pickle, to_folder). How to fix: "
        "use a module-level function instead of a lambda or local function, and keep tensors "
        "as buffers reached through get_attr."
    )


def _lookup(module: str, qualname: str) -> Any:
    try:
        value: Any = importlib.import_module(module)
        for part in qualname.split("."):
            value = getattr(value, part)
    except Exception:  # not importable by name: the caller reports it
        return None
    return value


class StateOf(torch.nn.Module):
    """A module whose `__dict__` is a GraphModule's saved state.

    A GraphModule built from it takes every child, parameter and buffer, not
    only the ones its graph names: deepcopy and unpickling keep everything.
    """

    def __init__(self, state: dict[str, Any]) -> None:
        super().__init__()
        self.__dict__ = state

    def everything(self) -> list[tuple[str, None]]:
        names = [name for name, _ in self.named_children()]
        names += [name for name, _ in self.named_parameters(recurse=False)]
        names += [name for name, _ in self.named_buffers(recurse=False)]
        return [(name, None) for name in names]


# --8<-- [start:retrace]
def retrace(state: dict[str, Any], source: str) -> tuple[StateOf, Any]:
    """Rebuild a graph from pickled source: exec it, then trace its `forward`.

    Submodules are kept as leaves: they were leaves (`call_module` nodes) in
    the graph the source came from.
    """
    namespace: dict[str, Any] = {}
    exec(compile(source, register_source(source), "exec", dont_inherit=True), namespace)
    root = type("CodeOnlyModule", (StateOf,), {"forward": namespace["forward"]})(state)
    tracer_cls = state.get("_tracer_cls") or Tracer

    class KeepModules(tracer_cls):
        def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
            return True

    graph = KeepModules().trace(root, **state.get("_tracer_extras", {}))
    graph._tracer_cls = tracer_cls
    return root, graph
# --8<-- [end:retrace]


def module_source(gm: Any, code: PythonCode, folder: Path, class_name: str) -> str:
    """`module.py` for `to_folder`: imports, a class that rebuilds the state, and forward."""
    lines = ["import os", "", import_block(code.globals),
             "_HERE = os.path.dirname(os.path.abspath(__file__))", "", "",
             f"class {class_name}(torch.nn.Module):", "    def __init__(self):",
             "        super().__init__()"]
    for name, child in gm.named_children():
        if type(child) in _MODULES_WITH_EXACT_REPR:
            built = f"torch.nn.{child!r}"
        else:
            torch.save(child, folder / f"{name}.pt")
            built = f"torch.load(os.path.join(_HERE, {name + '.pt'!r}), weights_only=False)"
        lines.append(f"        setattr(self, {name!r}, {built})")
    for name, buffer in gm.named_buffers(recurse=False):
        lines.append(f"        self.register_buffer({name!r}, "
                     f"torch.empty({list(buffer.shape)}, dtype={buffer.dtype}))")
    for name, parameter in gm.named_parameters(recurse=False):
        lines.append(f"        setattr(self, {name!r}, torch.nn.Parameter("
                     f"torch.empty({list(parameter.shape)}, dtype={parameter.dtype})))")
    lines.append("        self.load_state_dict(torch.load(os.path.join(_HERE, 'state_dict.pt')))")
    if getattr(gm, "_in_spec", None) is not None:  # structured inputs: keep the structures
        torch.save((gm._in_spec, gm._out_spec), folder / "pytree_specs.pt")
        lines.append("        self._in_spec, self._out_spec = torch.load(os.path.join(_HERE, "
                     "'pytree_specs.pt'), weights_only=False)")
    # `wrap(...)` lines must run at module level; the method goes into the class.
    wraps, _, forward = code.src.strip("\n").rstrip().partition("def forward")
    method = "\n".join(f"    {line}" if line else "" for line in f"def forward{forward}".split("\n"))
    wrap_lines = [wraps.strip()] if wraps.strip() else []
    return "\n".join(lines[:4] + wrap_lines + lines[4:]) + "\n\n" + method + "\n"
