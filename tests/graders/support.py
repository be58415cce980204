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


def explain_graphs(what: str, want: str, got: str, hint: str, see: str) -> str:
    """`explain(...)` for two printed graphs: the first line that differs, then both graphs.

    Args:
        what: what the graph is, such as "the graph after remove_noops".
        want: the expected `str(graph)`.
        got: the `str(graph)` the code under test produced.
        hint: as for `explain`.
        see: as for `explain`.
    """
    return explain_texts(what, want, got, hint, see, kind="graph")


def explain_texts(what: str, want: str, got: str, hint: str, see: str, kind: str) -> str:
    """`explain_graphs` for any multi-line text, such as generated code (`kind="code"`).

    Args:
        what: what the text is, such as "gm.code after the pass".
        want: the expected text.
        got: the text the code under test produced.
        hint: as for `explain`.
        see: as for `explain`.
        kind: what to call the text in the message: "graph", "code", ...
    """
    want_lines, got_lines = want.splitlines(), got.splitlines()
    first_difference = next((i for i, (a, b) in enumerate(zip(want_lines, got_lines)) if a != b),
                            min(len(want_lines), len(got_lines)))
    end = f"(the {kind} ends here)"
    want_line = want_lines[first_difference].strip() if first_difference < len(want_lines) else end
    got_line = got_lines[first_difference].strip() if first_difference < len(got_lines) else end
    line = first_difference + 1
    message = explain(f"{what}; line {line} of the {kind}: {want_line}", f"line {line}: {got_line}",
                      hint, see)
    return f"{message}\n\nExpected {kind}:\n{want}\n\nGot {kind}:\n{got}"
