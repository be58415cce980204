"""Find lines in a test file by `# marker: NAME` comments, for exact-location messages.

An error test puts `# marker: NAME` on the line before the code that fails; the
expected message computes the line number from the marker, so editing the file
cannot silently break the test.
"""

from __future__ import annotations


def line_after(path: str, marker: str) -> int:
    """The number of the line that follows the comment `# marker: <marker>` in `path`."""
    with open(path) as source:
        for number, line in enumerate(source, start=1):
            if line.strip() == f"# marker: {marker}":
                return number + 1
    raise LookupError(f"no marker {marker!r} in {path}")


def traceback_lines(path: str, marker: str, function: str, source: str) -> str:
    """The two traceback-style lines an error message shows for the marked line."""
    return f'  File "{path}", line {line_after(path, marker)}, in {function}\n    {source}'
