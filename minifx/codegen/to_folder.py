"""`GraphModule.to_folder`: a GraphModule as a Python package of its own.

`folder/module.py` defines `class <module_name>(torch.nn.Module)` with the
generated `forward`; the weights go to `folder/state_dict.pt`, and submodules
without a repr that rebuilds them exactly to `folder/<name>.pt`. Then
`from folder import <module_name>` works from the folder's parent, without
minifx's GraphModule.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from .codegen import PythonCode
from .copying import import_block
from .python_code import python_code

if TYPE_CHECKING:
    from .graph_module import GraphModule

# Modules that to_folder rebuilds from their repr instead of pickling them.
_MODULES_WITH_EXACT_REPR = (
    torch.nn.Linear,
    torch.nn.Conv1d,
    torch.nn.Conv2d,
    torch.nn.Conv3d,
    torch.nn.BatchNorm1d,
    torch.nn.BatchNorm2d,
    torch.nn.BatchNorm3d,
)


class ToFolderMixin(torch.nn.Module):
    """`GraphModule.to_folder`."""

    def to_folder(self, folder: str | Path, module_name: str = "FxModule") -> None:
        """Write this module as a Python package that imports and runs on its own.

        `folder/module.py` defines `class <module_name>(torch.nn.Module)` with
        the generated `forward`; the weights go to `folder/state_dict.pt` and
        submodules without a simple repr to `folder/<name>.pt`. Then
        `from folder import <module_name>` works from the folder's parent.
        """
        write_folder(self, folder, module_name)


def write_folder(gm: GraphModule, folder: str | Path, module_name: str = "FxModule") -> None:
    """Write `gm` as a package in `folder` (see the module docstring)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    code = python_code(gm.graph, root_module="self")
    (folder / "module.py").write_text(module_source(gm, code, folder, module_name))
    (folder / "__init__.py").write_text("from .module import *")  # torch.fx's, byte for byte
    torch.save(gm.state_dict(), folder / "state_dict.pt")


def module_source(gm: GraphModule, code: PythonCode, folder: Path, class_name: str) -> str:
    """`module.py` for `to_folder`: imports, a class that rebuilds the state, and forward."""
    lines = [
        "import os",
        "",
        import_block(code.globals),
        "_HERE = os.path.dirname(os.path.abspath(__file__))",
        "",
        "",
        f"class {class_name}(torch.nn.Module):",
        "    def __init__(self):",
        "        super().__init__()",
        *_state_lines(gm, folder),
    ]
    # `wrap(...)` lines must run at module level; the method goes into the class.
    wraps, _, forward = code.src.strip("\n").rstrip().partition("def forward")
    method = "\n".join(
        f"    {line}" if line else "" for line in f"def forward{forward}".split("\n")
    )
    wrap_lines = [wraps.strip()] if wraps.strip() else []
    return "\n".join(lines[:4] + wrap_lines + lines[4:]) + "\n\n" + method + "\n"


def _state_lines(gm: GraphModule, folder: Path) -> list[str]:
    """`__init__`'s lines that rebuild `gm`'s state, saving what has no exact repr."""
    lines, pickled = [], []
    for name, child in gm.named_children():
        if type(child) in _MODULES_WITH_EXACT_REPR:
            lines.append(f"        setattr(self, {name!r}, torch.nn.{child!r})")
            continue
        torch.save(child, folder / f"{name}.pt")
        pickled.append(name)
        loaded = f"torch.load(os.path.join(_HERE, {name + '.pt'!r}), weights_only=False)"
        shown = repr(child).replace("\r", " ").replace("\n", " ")  # a comment, as torch.fx's
        lines.append(f"        setattr(self, {name!r}, {loaded}) # {shown}")
    if pickled:
        warnings.warn(
            "Was not able to save the following children modules as reprs -"
            f"saved as pickled files instead: {pickled}",
            stacklevel=4,
        )
    for name, buffer in gm.named_buffers(recurse=False):
        lines.append(
            f"        self.register_buffer({name!r}, "
            f"torch.empty({list(buffer.shape)}, dtype={buffer.dtype}))"
        )
    for name, parameter in gm.named_parameters(recurse=False):
        lines.append(
            f"        setattr(self, {name!r}, torch.nn.Parameter("
            f"torch.empty({list(parameter.shape)}, dtype={parameter.dtype})))"
        )
    lines.append("        self.load_state_dict(torch.load(os.path.join(_HERE, 'state_dict.pt')))")
    if getattr(gm, "_in_spec", None) is not None:  # structured inputs: keep the structures
        torch.save((gm._in_spec, gm._out_spec), folder / "pytree_specs.pt")
        lines.append(
            "        self._in_spec, self._out_spec = torch.load(os.path.join(_HERE, "
            "'pytree_specs.pt'), weights_only=False)"
        )
    return lines
