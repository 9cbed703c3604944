"""Dense XRT-era code: a tree where nearly every file uses torch_xla, and one large such file.

    python bench/dense.py [--repeat N] [--kernels 816] [--from DIR [--copies K]] [--sizes 100k,1M]
                          [--against CHECKOUT]

The tree is generated (bench/_dense_tree.py: TPU kernels in the shapes of public Kaggle and
Colab ones, each file different), or copied from DIR (any folder of XRT-era kernels, e.g.
public ones exported into a temporary folder; K copies of it). Measured, each command in
a process of its own, CPU time, the fastest of N runs:

- (a) a libcst parse of every file (a notebook: its code cells), what any libcst codemod
  pays at least, against ``migrate`` without the results cache: the ratio (a)/migrate;
- ``migrate`` into an empty cache folder, then again over the unchanged tree, and
  ``migrate --check`` once more: the first run against the reruns;
- one file of the kernels one after another, at each size: ``migrate`` (no cache) against
  its libcst parse, and time and peak memory against the smallest size.

With --against, the runs without the cache are made with another checkout too (say the
commit before a change, from ``git worktree add``), in the same run.

Targets (issue 36): (a)/migrate >= 2; rerun >= 10x faster than the first run; at 1 MB,
migrate no slower than the parse; 10x the size at most 10x the time and the memory.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]

import _dense_tree  # noqa: E402
from _measure import Measurement, machine, measure  # noqa: E402

from xrt2pjrt import files  # noqa: E402
from xrt2pjrt.files import parse_size  # noqa: E402
from xrt2pjrt.shim.settings import NO_CACHE  # noqa: E402

SCRIPT = Path(sys.executable).with_name("xrt2pjrt")
BASELINE = [sys.executable, str(HERE / "_libcst_baselines.py"), "parse"]
EXITS = (0, 1, 2)  # done; --check with changes pending; a file that does not parse (in real kernels)


def tool_env(checkout: Path, cache: bool = False) -> dict:
    """The environment that runs CHECKOUT's xrt2pjrt, byte-compiled first as an installed
    one is (bench/startup.py); without the results cache unless ``cache``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", NO_CACHE.name)}
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(checkout / "xrt2pjrt")],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return {**env, "PYTHONPATH": str(checkout), **({} if cache else {NO_CACHE.name: "1"})}


def migrate(checkout: Path, args: list, repeat: int = 1, cache: bool = False) -> Measurement:
    return measure(
        [sys.executable, str(SCRIPT), "migrate", *map(str, args)], repeat, env=tool_env(checkout, cache), ok=EXITS
    )


def row(label: str, m: Measurement) -> str:
    return f"  {label:<52} wall {m.wall:7.2f}s  cpu {m.cpu:7.2f}s  peak {m.peak_mb:5.0f} MB"


def tree_figures(root: Path, tmp: Path, repeat: int, checkouts: dict[str, Path]) -> None:
    paths = sorted(path for path, _ in files.discover([root]).targets)
    size = sum(path.stat().st_size for path in paths)
    print(f"\ntree: {len(paths)} files, {size / 1e6:.1f} MB ({sum(p.suffix == '.ipynb' for p in paths)} notebooks)")
    listing = tmp / "files.txt"
    listing.write_text("\n".join(map(str, paths)))
    parse = measure([*BASELINE, str(listing)], repeat)
    print(row("(a) libcst parse of every file", parse))
    for name, checkout in checkouts.items():
        cold = migrate(checkout, [root], repeat)
        print(row(f"migrate, no cache ({name})", cold))
        print(f"  (a) / migrate, no cache ({name}): {parse.cpu / cold.cpu:5.2f}x   (target >= 2x)")
    rounds = []
    for _ in range(repeat):  # each round from an empty cache folder
        folder = tmp / "cache"
        shutil.rmtree(folder, ignore_errors=True)
        rounds.append(
            [migrate(ROOT, ["--cache-dir", folder, *flags, root], cache=True) for flags in ([], [], ["--check"])]
        )
    first, rerun, check = (min(runs, key=lambda m: m.cpu) for runs in zip(*rounds))
    print(row("migrate, first run (empty cache)", first))
    print(row("migrate, rerun (unchanged)", rerun))
    print(row("migrate --check, rerun", check))
    print(
        f"  first run / rerun : {first.cpu / rerun.cpu:5.1f}x   (target >= 10x); "
        f"/ --check rerun: {first.cpu / check.cpu:5.1f}x"
    )


def file_figures(tmp: Path, sizes: list[int], repeat: int, checkouts: dict[str, Path]) -> None:
    for name, checkout in checkouts.items():
        print(
            f"\none file of kernels ({name})\n  {'size':>8} {'migrate':>9} {'parse':>8} {'parse/migrate':>13} "
            f"{'peak':>7} {'size x':>7} {'cpu x':>6} {'peak x':>7}"
        )
        base = None
        for size in sizes:
            path = tmp / f"kernels_{size}.py"
            path.write_text(one_file(size))
            listing = tmp / f"one_{size}.txt"
            listing.write_text(str(path))
            m = migrate(checkout, ["--max-file-size", 2 * size, path], repeat)
            parse = measure([*BASELINE, str(listing)], repeat)
            base = base or (size, m)
            print(
                f"  {size / 1e3:>6.0f}kB {m.cpu:>8.2f}s {parse.cpu:>7.2f}s {parse.cpu / m.cpu:>12.2f}x "
                f"{m.peak_mb:>5.0f}MB {size / base[0]:>6.1f}x {m.cpu / base[1].cpu:>5.1f}x "
                f"{m.peak_mb / base[1].peak_mb:>6.1f}x"
            )


def one_file(size: int) -> str:
    """Generated kernels (their Python: scripts and nbconvert exports) one after another,
    up to ``size`` characters."""
    rng, out, n, serial = random.Random(1), [], 0, 0
    while n < size:
        name, text = _dense_tree.kernel(rng, serial)
        serial += 1
        if name.endswith(".py"):
            out.append(text)
            n += len(text)
    return "".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="runs per command; the fastest counts")
    parser.add_argument("--kernels", type=int, default=816, help="generated kernels in the tree")
    parser.add_argument("--from", dest="source", type=Path, help="a folder of kernels to copy instead")
    parser.add_argument("--copies", type=int, default=1, help="copies of --from's folder")
    parser.add_argument("--sizes", default="100k,1M", help="sizes of the one file (bytes, k, M); '' for none")
    parser.add_argument("--against", type=Path, metavar="CHECKOUT", help="also measure this checkout's migrate")
    args = parser.parse_args()
    checkouts = {"this checkout": ROOT, **({str(args.against): args.against.resolve()} if args.against else {})}

    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        root = tmp / "tree"
        if args.source:
            for k in range(args.copies):
                shutil.copytree(args.source, root / f"copy_{k:02d}")
        else:
            _dense_tree.build(root, args.kernels)
        tree_figures(root, tmp, args.repeat, checkouts)
        if args.sizes:
            file_figures(tmp, [parse_size(s) for s in args.sizes.split(",")], args.repeat, checkouts)


if __name__ == "__main__":
    main()
