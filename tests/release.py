"""Make a student release: the repository at HEAD without `solutions/`.

Usage (from the repository root; `make student-release` runs it):

    python -m tests.release ../minifx-student

The release is `git archive HEAD` unpacked into a new folder, with `solutions/` removed
and each chapter's collapsed solution replaced by a note, so that its book builds
(`make book`) and its exercises grade (`make grade`) with no solution anywhere in it.
"""

from __future__ import annotations

import argparse
import io
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# A chapter's solution: `??? success "Solution"`, then its indented body.
SOLUTION = re.compile(r'^\?\?\? success "Solution"\n(?:\n|    .*\n)*', re.M)
NOTE = (
    '!!! info "Solution"\n\n'
    "    Solutions are not part of the student release; `make grade` tells you how your\n"
    "    version does.\n\n"
)


def strip_solutions(markdown: str) -> str:
    """`markdown` with every collapsed solution replaced by a note that says why."""
    return SOLUTION.sub(NOTE, markdown)


def release(out: Path, root: Path = ROOT) -> None:
    """Write the student release of `root`'s HEAD into the new folder `out`."""
    if out.exists():
        raise FileExistsError(f"{out} exists; remove it or choose another folder")
    archive = subprocess.run(
        ["git", "archive", "--format=tar", "HEAD"], cwd=root, capture_output=True, check=True
    ).stdout
    out.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        # The "data" filter refuses links and paths that leave `out`; Pythons before
        # 3.10.12 / 3.11.4 lack it, and `git archive` of our own HEAD makes neither.
        if hasattr(tarfile, "data_filter"):
            tar.extractall(out, filter="data")
        else:
            tar.extractall(out)
    shutil.rmtree(out / "solutions")
    for page in (out / "chapters").rglob("*.md"):
        text = page.read_text(encoding="utf-8")
        if SOLUTION.search(text):
            page.write_text(strip_solutions(text), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.release", description=__doc__.splitlines()[0]
    )
    parser.add_argument("out", type=Path, help="the folder to create")
    args = parser.parse_args(argv)
    try:
        release(args.out)
    except (FileExistsError, subprocess.CalledProcessError) as exc:
        print(f"cannot make the release: {exc}", file=sys.stderr)
        return 2
    print(f"wrote the student release to {args.out}: make book and make grade work there")
    return 0


if __name__ == "__main__":
    sys.exit(main())
