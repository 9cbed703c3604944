"""Start-up cost of the command line, against a bare interpreter measured in the same run.

    python bench/startup.py [--repeat N]

Prints wall time (fastest of N runs, the commands taken in turn so that a change of load
on the machine hits them alike) and peak memory of `python -c pass`, `xrt2pjrt
--version`, `--help` (console script and `python -m`), `migrate --help`, and `xrt2pjrt
migrate --check` on an empty folder and on a tree with nothing to do (a file of every
kind, none XRT-era), each with its ratio to the bare interpreter; then the slowest
imports of the nothing-to-do run and whether it imported libcst or torch (which
tests/test_cli_startup.py forbids). The aim: --version and --help within 6x.

The package is byte-compiled first, as an installed one is: a checkout run with
PYTHONDONTWRITEBYTECODE=1 would compile every module on every run and measure that.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import machine, measure  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NOTHING_TO_DO = {
    "train.py": "import torch\nprint(torch.ones(2))\n", "run.sh": "python3 train.py\n",
    "Dockerfile": "FROM python:3.11\n", "job.yaml": "steps: [1]\n", "README.md": "```python\nx = 1\n```\n",
    "nb.ipynb": '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n', "requirements.txt": "torch\n",
}


def modules_of(argv: list[str], env: dict) -> set[str]:
    """sys.modules at the end of `xrt2pjrt ARGV` run in this interpreter."""
    with tempfile.NamedTemporaryFile("r", suffix=".json") as listing:
        code = ("import json, sys\nfrom xrt2pjrt.cli import main\ncode = main(sys.argv[1:])\n"
                f"open({listing.name!r}, 'w').write(json.dumps(sorted(sys.modules)))\n")
        subprocess.run([sys.executable, "-c", code, *argv], env=env, capture_output=True)
        return set(json.loads(Path(listing.name).read_text() or "[]"))


def slowest_imports(argv: list[str], env: dict) -> list[tuple[int, str]]:
    """(cumulative microseconds, module) of the top-level imports of a run, slowest first."""
    done = subprocess.run([sys.executable, "-X", "importtime", *argv], capture_output=True, text=True, env=env)
    rows = []
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            _, cumulative, name = line.split(":", 1)[1].split("|")
            if not name.startswith("  "):  # one space of indent: imported by the program itself
                rows.append((int(cumulative), name.strip()))
    return sorted(rows, reverse=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    repeat = parser.parse_args().repeat
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "xrt2pjrt")], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    script = Path(sys.executable).with_name("xrt2pjrt")

    with tempfile.TemporaryDirectory() as empty, tempfile.TemporaryDirectory() as tree:
        for name, text in NOTHING_TO_DO.items():
            Path(tree, name).write_text(text)
        commands = {  # interpreter arguments; the console script is run by the same interpreter
            "python -c pass": ["-c", "pass"],
            "xrt2pjrt --version": [str(script), "--version"],
            "xrt2pjrt --help": [str(script), "--help"],
            "python -m xrt2pjrt --help": ["-m", "xrt2pjrt", "--help"],
            "xrt2pjrt migrate --help": [str(script), "migrate", "--help"],
            "xrt2pjrt migrate --check EMPTY": [str(script), "migrate", "--check", empty],
            "xrt2pjrt migrate --check NOTHING_TO_DO": [str(script), "migrate", "--check", tree],
        }
        best: dict[str, object] = {}
        for _ in range(repeat):  # in turn, so that the load of the machine hits every command alike
            for label, args in commands.items():
                m = measure([sys.executable, *args], 1, env=env)
                if label not in best or m.wall < best[label].wall:
                    best[label] = m
        loaded = modules_of(["migrate", "--check", tree], env)
        slowest = slowest_imports(commands["xrt2pjrt migrate --check NOTHING_TO_DO"], env)[:6]

    bare = best["python -c pass"]
    print(f"machine: {machine()}\n")
    for label, m in best.items():
        print(f"{label:<40} wall {m.wall * 1000:5.0f} ms  ({m.wall / bare.wall:4.1f}x python -c pass)  "
              f"peak {m.peak_mb:3.0f} MB")
    heavy = sorted({name.split(".")[0] for name in loaded} & {"libcst", "torch", "torch_xla"})
    print(f"\n`migrate --check NOTHING_TO_DO` imported: {', '.join(heavy) or 'neither libcst nor torch'}")
    print("slowest top-level imports of that run (cumulative):")
    for micros, name in slowest:
        print(f"  {micros / 1000:6.1f} ms  {name}")


if __name__ == "__main__":
    main()
