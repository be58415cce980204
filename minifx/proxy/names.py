"""Names for recorded values, made the way torch.fx makes them.

Every recorded operation gets a name (`add`, `add_1`, `relu`, ...) so that a
reader can refer to it (`%add`) and so that later stages can turn it into a
Python variable. The rules here are torch.fx's, so both print the same names:

1. The candidate comes from the target: a function's `__name__`, a method or
   placeholder's string, with `__magic__` underscores removed and camelCase
   turned into snake_case (`getattr`, `relu`, `batch_norm`).
2. Characters that cannot appear in a Python identifier become `_`, and a
   leading digit gets a `_` in front.
3. A name already taken, or one that would shadow a keyword or a builtin
   (`abs`, `getattr`, `len`, `torch`), gets the next free `_N` suffix.
"""

from __future__ import annotations

import builtins
import functools
import keyword
import re
from typing import Any

# Names a generated variable must never take: they would shadow something the
# generated code (chapter 3) or the reader relies on.
RESERVED_NAMES = frozenset(
    [
        *keyword.kwlist,
        *dir(builtins),
        "inf",
        "nan",
        "NoneType",
        "torch",
        "device",
        "fx_pytree",
        "pytree",
    ]
)

_CAMEL_HUMP = re.compile(r"(?<=[a-z])([A-Z])")
_NOT_IDENTIFIER_CHARS = re.compile(r"[^0-9a-zA-Z_]+")
# A valid name, split into its base and an optional numeric suffix: add_3 -> (add, 3).
_NAME_WITH_SUFFIX = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")


@functools.lru_cache(maxsize=4096)  # the same few names (relu, conv2d) come again and again
def snake_case(name: str) -> str:
    """Turn `camelCase` into `camel_case` and lower-case the rest.

    Example: `snake_case("batchNorm") == "batch_norm"`.
    """
    return _CAMEL_HUMP.sub(r"_\1", name).lower()


def target_to_name(target: Any) -> str:
    """The name candidate for an operation on `target`.

    Args:
        target: a callable (named after its `__name__`) or a string (a method
            name, a placeholder's name, a module path; `__magic__` underscores
            are dropped from strings only, as torch.fx does).

    Returns:
        The candidate, before uniqueness is enforced by a `Namespace`.
    """
    if callable(target):
        return snake_case(target.__name__)
    name = str(target)
    if name.startswith("__") and name.endswith("__"):  # a method such as "__call__"
        name = name[2:-2]
    return snake_case(name)


class Namespace:
    """Hands out unique, valid Python names.

    `create_name("add")` returns `add`, then `add_1`, `add_2`, ... A candidate
    that already carries a free suffix (`x_3`) keeps it. Counting per base name
    keeps each call O(1) instead of searching from `_1` every time.
    """

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._last_suffix: dict[str, int] = {}

    def create_name(self, candidate: str) -> str:
        """Return a unique, valid name based on `candidate`, and reserve it."""
        name, base, suffix = _parse(candidate)
        if suffix is None or name in self._used:
            suffix = self._last_suffix.get(base, 0)
            if name in RESERVED_NAMES:
                suffix += 1
                name = f"{base}_{suffix}"
        while name in self._used:
            suffix += 1
            name = f"{base}_{suffix}"
        self._used.add(name)
        self._last_suffix[base] = suffix
        return name

    def reserve(self, name: str) -> None:
        """Take `name` exactly as given (say, a parameter named `input`), so no later name collides."""
        self._used.add(name)

    def __contains__(self, name: str) -> bool:
        return name in self._used


# A tracer asks for the same few candidates (add, relu) again and again, and the
# regular expressions cost more than the rest of create_name: cache them.
@functools.lru_cache(maxsize=4096)
def _parse(candidate: str) -> tuple[str, str, int | None]:
    """`candidate` as a valid name, and that name split into base and suffix."""
    # Most candidates are valid names already: then one match both checks and splits.
    match = _NAME_WITH_SUFFIX.match(candidate)
    if match is None:  # replace illegal characters: `layer1.0.conv` -> `layer1_0_conv`
        name = _NOT_IDENTIFIER_CHARS.sub("_", candidate) or "_unnamed"
        match = _NAME_WITH_SUFFIX.match(f"_{name}" if name[0].isdigit() else name)
    base, suffix = match.group(1, 2)
    return match.string, base, None if suffix is None else int(suffix)
