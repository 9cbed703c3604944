"""Start-up cost of the command line, against a bare interpreter measured in the same run.

    python bench/startup.py [--repeat N]

Prints wall time (fastest of N runs) and peak memory of `python -c pass`,
`xrt2pjrt --help` (console script and `python -m`), and `xrt2pjrt migrate` on an empty
folder, with each one's ratio to the bare interpreter and the slowest imports of the
migrate run (from `python -X importtime`). None of them may import torch; that is
asserted by tests/test_cli_startup.py, and shown here as a column.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import machine, measure  # noqa: E402


def imports(argv: list[str]) -> list[tuple[int, str]]:
    """(cumulative microseconds, module) of every top-level import of a run, slowest first."""
    done = subprocess.run([sys.executable, "-X", "importtime", *argv], capture_output=True, text=True)
    rows = []
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            _, cumulative, name = line.split(":", 1)[1].split("|")
            if not name.startswith("  "):  # one space of indent: imported by the program itself
                rows.append((int(cumulative), name.strip()))
    return sorted(rows, reverse=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    repeat = parser.parse_args().repeat
    script = Path(sys.executable).with_name("xrt2pjrt")

    with tempfile.TemporaryDirectory() as empty:
        # interpreter arguments; the console script is run by the same interpreter
        commands = {
            "python -c pass": ["-c", "pass"],
            "xrt2pjrt --help": [str(script), "--help"],
            "python -m xrt2pjrt --help": ["-m", "xrt2pjrt", "--help"],
            "xrt2pjrt migrate EMPTY_FOLDER": [str(script), "migrate", empty],
        }
        results = {label: measure([sys.executable, *args], repeat) for label, args in commands.items()}
        torch_seen = {
            label: any(name.split(".")[0] in ("torch", "torch_xla") for _, name in imports(args))
            for label, args in commands.items()
        }
        slowest = imports(commands["xrt2pjrt migrate EMPTY_FOLDER"])[:6]

    bare = results["python -c pass"]
    print(f"machine: {machine()}\n")
    for label, m in results.items():
        torch = "imports torch!" if torch_seen[label] else "no torch"
        print(f"{label:<32} wall {m.wall * 1000:6.0f} ms  ({m.wall / bare.wall:4.1f}x python -c pass)  "
              f"peak {m.peak_mb:4.0f} MB  {torch}")
    print("\nslowest top-level imports of `xrt2pjrt migrate EMPTY_FOLDER` (cumulative):")
    for micros, name in slowest:
        print(f"  {micros / 1000:6.0f} ms  {name}")


if __name__ == "__main__":
    main()
