"""Codemod throughput on the real corpus (tests/_corpus.py), against baselines run alongside.

    python bench/throughput.py [--repeat N]

Every figure comes from this run on this machine; each command runs in its own process
(start-up included) and the fastest of N runs counts. Measured:

- the floor: ``grep`` finding the files a rewriter could act on;
- ``xrt2pjrt migrate`` (preview, the default) over the whole corpus with --jobs 1 and 2;
- (a) a libcst parse of every Python file, what any libcst codemod must do at least;
- on the relevant Python files only: ``xrt2pjrt migrate --jobs 1`` against
  (b) libcst parse + QualifiedNameProvider.

Ratios use CPU time (user + system of every process involved), which other load on the
machine disturbs less than wall time; wall times are printed beside them.
Targets from the issue: whole corpus >= 10x faster than (a) (aim 25x); relevant files
>= 3x faster than (b).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

import _corpus  # noqa: E402
from _measure import Measurement, machine, measure  # noqa: E402

from xrt2pjrt import files, rewriters  # noqa: E402


def trigger_pattern() -> str:
    """Every rewriter's text trigger as one PCRE: what a file must match to be parsed at all."""
    return "|".join(sorted({rewriters.trigger_for(kind).pattern for kind in rewriters.MODULES}))


def line(label: str, m: Measurement, files_n: int | None = None, lines_n: int | None = None) -> str:
    rates = ""
    if files_n:
        rates = f"  {files_n / m.wall:8.0f} files/s  {lines_n / m.wall:9.0f} lines/s"
    return f"{label:<48} wall {m.wall:6.2f}s  cpu {m.cpu:6.2f}s  peak {m.peak_mb:5.0f} MB{rates}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per command; the fastest counts")
    repeat = parser.parse_args().repeat

    roots = _corpus.corpus_paths()
    seen = files.discover(roots).targets
    python_files = [path for path, kind in seen if kind == "python"]
    lines_seen = sum(path.read_bytes().count(b"\n") for path, _ in seen)
    python_lines = sum(path.read_bytes().count(b"\n") for path in python_files)

    grep = ["grep", "-rlP", trigger_pattern(), *map(str, roots)]
    hits = set(subprocess.run(grep, capture_output=True, text=True).stdout.splitlines())
    relevant = [path for path in python_files if str(path) in hits]
    relevant_lines = sum(path.read_bytes().count(b"\n") for path in relevant)

    print(f"machine: {machine()}")
    print(
        f"corpus: {len(_corpus.RELEASES)} releases, {len(seen)} files seen by xrt2pjrt ({lines_seen} lines), "
        f"{len(python_files)} Python ({python_lines} lines); {len(relevant)} relevant Python files "
        f"({relevant_lines} lines)\n"
    )

    with tempfile.TemporaryDirectory() as tmp:
        all_list, relevant_list = Path(tmp, "all.txt"), Path(tmp, "relevant.txt")
        all_list.write_text("\n".join(map(str, python_files)))
        relevant_list.write_text("\n".join(map(str, relevant)))
        tool = [sys.executable, "-m", "xrt2pjrt", "migrate"]
        baseline = [sys.executable, str(HERE / "_libcst_baselines.py")]

        floor = measure(grep, repeat)
        jobs = {n: measure([*tool, "--jobs", str(n), *map(str, roots)], repeat) for n in (1, 2)}
        parse_all = measure([*baseline, "parse", str(all_list)], repeat)
        tool_relevant = measure([*tool, "--jobs", "1", *map(str, relevant)], repeat)
        qualified = measure([*baseline, "qualified", str(relevant_list)], repeat)

    print("Whole corpus")
    print(line("  grep for relevant files (floor)", floor))
    for n, m in jobs.items():
        print(line(f"  xrt2pjrt migrate --jobs {n}", m, len(seen), lines_seen))
    print(line("  (a) libcst parse of every Python file", parse_all, len(python_files), python_lines))
    print("Relevant Python files only")
    print(line("  xrt2pjrt migrate --jobs 1", tool_relevant, len(relevant), relevant_lines))
    print(line("  (b) libcst parse + QualifiedNameProvider", qualified, len(relevant), relevant_lines))

    print("\nRatios (CPU time)")
    print(f"  (a) full parse / migrate --jobs 1 : {parse_all.cpu / jobs[1].cpu:5.1f}x   (target >= 10x, aim 25x)")
    print(
        f"  (b) parse+qualified names / migrate on relevant files : {qualified.cpu / tool_relevant.cpu:5.1f}x"
        "   (target >= 3x)"
    )
    print(f"  migrate --jobs 1 / grep floor : {jobs[1].cpu / floor.cpu:5.0f}x")
    print(f"  wall, --jobs 1 / --jobs 2 : {jobs[1].wall / jobs[2].wall:4.2f}x")


if __name__ == "__main__":
    main()
