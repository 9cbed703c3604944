"""The default --jobs against -j 1 and -j 2: is the default ever slower than no pool?

    python bench/jobs.py [--repeat N]

The default sizes the process pool by the work found (xrt2pjrt/codemod.py: the parent tests
every file's trigger, and only text left to parse, POOL_MIN_WORK characters or more over
two files or more, gets a pool). Measured on trees of the real corpus (tests/_corpus.py)
that give the pool little to much work: the whole corpus (most files stop at the trigger),
its relevant files only, and those copied four times over (a large migration). Each command
runs in its own process, start-up included; the fastest of N runs counts. Ratios are wall
time (what a user waits for), with CPU time beside.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests"), str(HERE.parent)]

import _corpus  # noqa: E402
from _measure import machine, measure  # noqa: E402

from xrt2pjrt import codemod, files, rewriters  # noqa: E402


def relevant(targets: list[tuple[Path, str]]) -> list[Path]:
    out = []
    for path, kind in targets:
        text = files.decode(path.read_bytes(), kind).text if kind == "python" else ""
        if kind == "python" and rewriters.trigger_for(kind).search(text):
            out.append(path)
    return out


def copies(paths: list[Path], folder: Path, n: int) -> Path:
    for i in range(n):
        for k, path in enumerate(paths):
            shutil.copyfile(path, folder / f"c{i}_{k}_{path.name}")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per command; the fastest counts")
    repeat = parser.parse_args().repeat

    roots = _corpus.corpus_paths()
    targets = files.discover(roots).targets
    hits = relevant(targets)
    print(f"machine: {machine()}")
    print(f"pool: none below {codemod.POOL_MIN_WORK:,} characters to parse, a worker per {codemod.WORK_PER_WORKER:,}\n")
    tool = [sys.executable, "-m", "xrt2pjrt", "migrate"]
    with tempfile.TemporaryDirectory() as tmp:
        trees = {
            f"whole corpus ({len(targets)} files, {len(hits)} to parse)": [str(r) for r in roots],
            f"relevant files only ({len(hits)})": [str(p) for p in hits],
            f"relevant files x4 ({4 * len(hits)})": [str(copies(hits, Path(tmp), 4))],
            "one relevant file": [str(max(hits, key=lambda p: p.stat().st_size))],
        }
        print(f"{'tree':<44} {'default':>16} {'-j 1':>16} {'-j 2':>16}  default / -j 1 (wall)")
        for label, args in trees.items():
            m = {
                jobs: measure([*tool, *([] if jobs is None else ["--jobs", str(jobs)]), *args], repeat)
                for jobs in (None, 1, 2)
            }
            cells = "".join(f"  {m[j].wall:6.2f}s ({m[j].cpu:5.2f})" for j in (None, 1, 2))
            print(f"{label:<44}{cells}  {m[None].wall / m[1].wall:5.2f}x")
    print("\n(wall seconds, CPU seconds in parentheses)")


if __name__ == "__main__":
    main()
