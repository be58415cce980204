"""Helpers for graders: failure messages that teach instead of a wall of traceback."""

from __future__ import annotations


def explain(expected: str, got: str, hint: str, see: str) -> str:
    """Build a grader's failure message, for `assert cond, explain(...)`.

    The grading tool shows this message first, so it reads top to bottom as: what the
    test expected, what the code under test did, a hint, and the book section to reread.

    Args:
        expected: What the test expected, in words or as a repr.
        got: What the implementation under test produced.
        hint: One or two sentences that point at the likely mistake.
        see: The book section, as `chapters/<page>.md#<anchor>`.

    Returns:
        The message, four lines: `Expected: ...`, `Got: ...`, `Hint: ...`, `See: ...`.

    Raises:
        ValueError: If `see` does not point into `chapters/` with an anchor.
    """
    if not (see.startswith("chapters/") and "#" in see):
        raise ValueError(
            f"explain(see={see!r}): point at a book section as 'chapters/<page>.md#<anchor>'"
        )
    return f"Expected: {expected}\nGot: {got}\nHint: {hint}\nSee: {see}"
