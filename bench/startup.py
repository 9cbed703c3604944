"""Start-up cost of the command line, against a bare interpreter measured in the same run.

    python bench/startup.py [--repeat N] [--against CHECKOUT]

Prints wall time (fastest and median of N runs, the commands taken in turn so that a
change of load on the machine hits them alike), CPU time (the least of the runs) and
peak memory of `python -c pass`, `xrt2pjrt --version`, `--help` (console script and
`python -m`), `migrate --help`, and `xrt2pjrt migrate --check` on an empty folder and on
a tree with nothing to do (a file of every kind, none XRT-era), each with its ratios to
the bare interpreter; then whether `--version` and `--help` imported typer (they must
not: cli.py answers them itself), the slowest imports of the nothing-to-do run and
whether it imported libcst or torch (which tests/test_cli_startup.py forbids). The aim:
--version and --help within 6x.

With --against, the same commands of another checkout (another commit's tree, say from
`git worktree add`) are measured in the same runs, in turn with this one's.

The package is byte-compiled first, as an installed one is: a checkout run with
PYTHONDONTWRITEBYTECODE=1 would compile every module on every run and measure that.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import machine, measure  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NOTHING_TO_DO = {
    "train.py": "import torch\nprint(torch.ones(2))\n",
    "run.sh": "python3 train.py\n",
    "Dockerfile": "FROM python:3.11\n",
    "job.yaml": "steps: [1]\n",
    "README.md": "```python\nx = 1\n```\n",
    "nb.ipynb": '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n',
    "requirements.txt": "torch\n",
}


def modules_of(argv: list[str], env: dict) -> set[str]:
    """sys.modules at the end of `xrt2pjrt ARGV` run in this interpreter."""
    with tempfile.NamedTemporaryFile("r", suffix=".json") as listing:
        code = (
            "import json, sys\nfrom xrt2pjrt.cli import main\ncode = main(sys.argv[1:])\n"
            f"open({listing.name!r}, 'w').write(json.dumps(sorted(sys.modules)))\n"
        )
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


def checkout_env(checkout: Path) -> dict:
    """The environment that runs CHECKOUT's xrt2pjrt (whichever one the venv has installed)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(checkout / "xrt2pjrt")],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return {**env, "PYTHONPATH": str(checkout)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--against", type=Path, metavar="CHECKOUT", help="also measure this checkout's command line")
    options = parser.parse_args()
    checkouts = {"this checkout": ROOT}
    if options.against:
        checkouts[str(options.against)] = options.against.resolve()
    envs = {name: checkout_env(path) for name, path in checkouts.items()}
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
        runs: dict[tuple[str, str], list] = {}
        for _ in range(options.repeat):  # in turn, so that the load of the machine hits every command alike
            for checkout, env in envs.items():
                for label, args in commands.items():
                    runs.setdefault((checkout, label), []).append(measure([sys.executable, *args], 1, env=env))
        env = envs["this checkout"]
        typer_for = {
            label: "typer" in modules_of(commands[label][1:], env)
            for label in ("xrt2pjrt --version", "xrt2pjrt --help", "xrt2pjrt migrate --help")
        }
        loaded = modules_of(["migrate", "--check", tree], env)
        slowest = slowest_imports(commands["xrt2pjrt migrate --check NOTHING_TO_DO"], env)[:6]

    print(f"machine: {machine()}; {options.repeat} runs of each")
    for checkout in checkouts:
        walls = {label: sorted(m.wall for m in runs[checkout, label]) for label in commands}
        cpus = {label: min(m.cpu for m in runs[checkout, label]) for label in commands}
        fastest, median = walls["python -c pass"][0], statistics.median(walls["python -c pass"])
        print(f"\n{checkout + ':':<40} {'wall: fastest':>16} {'median':>16} {'CPU: least':>16} {'peak':>6}")
        for label, times in walls.items():
            peak = max(m.peak_mb for m in runs[checkout, label])
            print(
                f"{label:<40} {times[0] * 1000:5.0f} ms {times[0] / fastest:5.1f}x "
                f"{statistics.median(times) * 1000:6.0f} ms {statistics.median(times) / median:5.1f}x "
                f"{cpus[label] * 1000:6.0f} ms {cpus[label] / cpus['python -c pass']:5.1f}x {peak:3.0f} MB"
            )
    print(
        "\nimported typer (this checkout): "
        + ", ".join(f"{label}: {'yes' if used else 'no'}" for label, used in typer_for.items())
    )
    heavy = sorted({name.split(".")[0] for name in loaded} & {"libcst", "torch", "torch_xla"})
    print(f"`migrate --check NOTHING_TO_DO` imported: {', '.join(heavy) or 'neither libcst nor torch'}")
    print("slowest top-level imports of that run (cumulative):")
    for micros, name in slowest:
        print(f"  {micros / 1000:6.1f} ms  {name}")


if __name__ == "__main__":
    main()
