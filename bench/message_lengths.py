"""How long the items and the TODO lines of a migration are, and how many overrun the width.

    python bench/message_lengths.py [--tool CHECKOUT] [--corpus] [PATH ...]

Copies the paths (default: tests/fixtures, less their expected outputs, and examples;
``--corpus`` adds the released XRT-era code of tests/_corpus.py, from its cache or pip) into
a temporary folder, runs
``xrt2pjrt migrate`` there once as a preview (the JSON report: each item's message and
long text) and once with ``--write`` (the TODO lines it writes, in Python, notebooks and the
text kinds), and prints the median and largest length of the items' messages and of the new
TODO lines, how many TODO lines are longer than the width of their file (width.py), and
how many were cut to fit it.
``--tool`` runs the xrt2pjrt of another checkout (an older commit, for a before/after).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "tests")]

from xrt2pjrt import files, width  # noqa: E402
from xrt2pjrt.report import CUT  # noqa: E402

MARK = "TODO(xrt2pjrt)"


def _migrate(tool: Path, root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(tool)}
    return subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "migrate", str(root), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
    )  # (-m puts the cwd first)


def _lines(path: Path) -> list[str]:
    """The lines a linter reads in ``path``: a notebook's cells', the text's otherwise."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".ipynb":
        try:
            cells = json.loads(text)["cells"]
        except (ValueError, KeyError, TypeError):
            return []
        return [
            line
            for c in cells
            for line in ("".join(c["source"]) if isinstance(c["source"], list) else c["source"]).splitlines()
        ]
    return text.splitlines()


def new_todo_lines(before: Path, after: Path) -> list[tuple[str, int]]:
    """(line, width of its file) of each TODO line in ``after`` that ``before`` lacked."""
    found = []
    for path in sorted(after.rglob("*")):
        kind = files.kind_of(path) if path.is_file() else None
        if kind is None:
            continue
        old = Counter(_lines(before / path.relative_to(after)))
        limit = width.for_kind(kind, width.of(path.parent))
        for line in _lines(path):
            if MARK in line:
                if old[line]:
                    old[line] -= 1
                else:
                    found.append((line, limit))
    return found


def _figures(lengths: list[int]) -> str:
    return f"{len(lengths)}, median {statistics.median(lengths):.0f}, max {max(lengths)}" if lengths else "none"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--tool", type=Path, default=HERE.parent, help="the checkout whose xrt2pjrt runs")
    parser.add_argument("--corpus", action="store_true", help="add the released XRT-era corpus")
    args = parser.parse_args()
    paths = args.paths or [HERE.parent / "tests" / "fixtures", HERE.parent / "examples"]
    if args.corpus:
        import _corpus

        paths += _corpus.corpus_paths()
    with tempfile.TemporaryDirectory() as tmp:
        before, after = Path(tmp) / "before", Path(tmp) / "after"
        for n, path in enumerate(paths):
            # (the fixtures' expected outputs are this tool's output, not code to migrate)
            shutil.copytree(
                path,
                before / f"{n}-{path.name}",
                symlinks=True,
                ignore=shutil.ignore_patterns("*.after.*", "*.expected*"),
            )
        shutil.copytree(before, after, symlinks=True)
        preview = _migrate(args.tool.resolve(), before, "--output-format", "json")
        if preview.returncode not in (0, 1, 2):
            raise SystemExit(preview.stderr)
        report = json.loads(preview.stdout)
        items = [i for f in report["files"] for key in ("manual", "pending") for i in f.get(key, [])]
        written = _migrate(args.tool.resolve(), after, "--write")
        if written.returncode not in (0, 1, 2):
            raise SystemExit(written.stderr)
        todos = new_todo_lines(before, after)
    print(f"items to decide or pending: {_figures([len(i['message']) for i in items])} characters")
    if any("detail" in i for i in items):
        print(f"  their long text (detail): {_figures([len(i.get('detail') or i['message']) for i in items])}")
    print(f"TODO lines written: {_figures([len(line) for line, _ in todos])} characters")
    print(
        f"  longer than their file's width: {sum(len(line) > limit for line, limit in todos)}; "
        f"cut to fit: {sum(f'{CUT} [' in line for line, _ in todos)}"
    )


if __name__ == "__main__":
    main()
