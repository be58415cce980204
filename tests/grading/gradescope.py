"""Build Gradescope's autograder: `make gradescope` writes `build/gradescope-autograder.zip`.

Usage (from the repository root):

    python -m tests.grading.gradescope build/gradescope-autograder.zip

The zip holds `setup.sh` (installs Python, the CPU build of torch and pytest into
`/autograder/venv`), `run_autograder`, and `source/`: minifx, the graders, the grading
tool, the points manifest and the stubs, and never `solutions/`. For each submission,
`run_autograder` grades only the files named like `exercises/<module>.py` in the
manifest, found anywhere in the submission, and writes `/autograder/results/results.json`
with each test's visibility from the manifest. Built with `--track build` or `all`, it
also grades the build tasks: the submission's `minifx/` files that hold tasks (the
rest of minifx is the instructor's copy in `source/`).
"""

from __future__ import annotations

import argparse
import sys
import zipfile
from pathlib import Path

from tests.grading.build import stage_tests as stage_test_files
from tests.grading.judge import snapshot
from tests.grading.manifest import MANIFEST, ROOT, GradingError, load_manifest

TORCH_SPEC = "torch==2.13.0"
TORCH_INDEX_URL = "https://download.pytorch.org/whl/cpu"
# What the graders import besides torch; pinned like pyproject.toml's dev extra.
PACKAGES = (
    '"pytest>=8,<10"',
    '"hypothesis>=6.100,<7"',
    '"numpy>=1.24"',
    "\"tomli>=2; python_version < '3.11'\"",
)

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, when the autograder image is built.
set -euo pipefail
apt-get update -q && apt-get install -y -q python3 python3-venv python3-pip
python3 -m venv /autograder/venv
/autograder/venv/bin/python -m pip install -q "{torch_spec}" --index-url {index_url}
/autograder/venv/bin/python -m pip install -q {packages}
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this for every submission. Only exercises/<module>.py files named in the
# manifest are read from the submission; the graders, minifx and the manifest are ours.
set -u
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PYTHON="${AUTOGRADER_PYTHON:-$ROOT/venv/bin/python}"
cd "$ROOT/source" || exit 1
mkdir -p "$ROOT/results"
"$PYTHON" -m tests.grading --submission "$ROOT/submission" --track {track} --results "$ROOT/results/results.json"
"""


def build(
    out: Path,
    root: Path = ROOT,
    torch_spec: str = TORCH_SPEC,
    index_url: str = TORCH_INDEX_URL,
    track: str = "exercises",
) -> Path:
    """Write the autograder zip to `out`, from the trusted files of `root`; `track` is what
    it grades: `exercises`, `build` (the tasks carved out of minifx) or `all`."""
    load_manifest(
        root / MANIFEST.relative_to(ROOT)
    )  # a broken manifest stops here, not on Gradescope
    files = snapshot(root)
    stubs = sorted((root / "exercises").glob("*.py"))
    if not stubs:
        raise GradingError(f"{root / 'exercises'} has no stubs to ship")
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        _add(
            archive,
            "setup.sh",
            SETUP.format(torch_spec=torch_spec, index_url=index_url, packages=" ".join(PACKAGES)),
        )
        _add(archive, "run_autograder", RUN.replace("{track}", track))
        # The build track grades each task with its stage tests (tests/<stage>/test_*.py).
        stage_tests = stage_test_files(files) if track != "exercises" else {}
        for relative, data in files.items():
            if not relative.startswith("tests/") or _needed(relative) or relative in stage_tests:
                archive.writestr(f"source/{relative}", data)
        for stub in stubs:
            archive.writestr(f"source/exercises/{stub.name}", stub.read_bytes())
    return out


def _needed(relative: str) -> bool:
    """Of tests/, the autograder needs the graders, the grading tool and their helpers."""
    return not Path(relative).name.startswith("test_") or relative.startswith("tests/graders/")


def _add(archive: zipfile.ZipFile, name: str, text: str) -> None:
    info = zipfile.ZipInfo(name)
    info.external_attr = 0o755 << 16  # executable, as Gradescope requires
    archive.writestr(info, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.grading.gradescope", description=__doc__.splitlines()[0]
    )
    parser.add_argument("out", type=Path, help="the zip to write")
    parser.add_argument("--torch-spec", default=TORCH_SPEC)
    parser.add_argument("--torch-index-url", default=TORCH_INDEX_URL)
    parser.add_argument("--track", choices=("exercises", "build", "all"), default="exercises")
    args = parser.parse_args(argv)
    try:
        build(
            args.out, torch_spec=args.torch_spec, index_url=args.torch_index_url, track=args.track
        )
    except GradingError as exc:
        print(f"cannot build the autograder: {exc}", file=sys.stderr)
        return 2
    print(
        f"wrote {args.out}: upload it as the assignment's autograder (Gradescope: Configure Autograder, zip file)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
