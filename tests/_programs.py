"""Migrate XRT-era programs, run them on the installed torch_xla, and say how each ended.

    python tests/_programs.py [--keep DIR] PROGRAM.py|FOLDER ...

Each program (a file, or a folder with its files and a ``main.py`` or the one named by
``# run: FILE ARGS``) is copied to a scratch folder, migrated there with ``xrt2pjrt migrate
--write`` (options from a first-line ``# migrate: ...`` comment), then run with
PJRT_DEVICE=CPU. It ends in one of three ways:

- ``ran``: exit code 0;
- ``marked``: it failed, and the line its traceback last names in a migrated file is in a
  statement the tool marked with a ``# TODO(xrt2pjrt)`` line;
- ``unmarked``: any other failure (a crash, a timeout, an exception at an unmarked line).

Used by tests/test_programs.py on the programs of tests/programs/, and by hand on real
public XRT-era code (which is never committed).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from xrt2pjrt.settling import marking

ROOT = Path(__file__).resolve().parents[1]
_FRAME = re.compile(r'^  File "([^"]+)", line (\d+)', re.M)


@dataclass
class Ending:
    program: str
    outcome: str  # ran | marked | unmarked
    where: str = ""  # file:line of the failure
    error: str = ""  # the last line of the traceback
    todo: str = ""  # the TODO line that marks it


def _directive(text: str, name: str) -> list[str]:
    found = re.search(rf"^# {name}: (.*)$", text, re.M)
    return found.group(1).split() if found else []


def run(
    program: Path, scratch: Path, timeout: int = 600, command: list[str] | None = None, name: str | None = None
) -> Ending:
    """``program``: a file, or a folder (then ``command`` says what to run in it, or its
    main.py's ``# run:`` line does). ``name``: the scratch folder's and the report's."""
    name = name or program.stem
    folder = scratch / name
    if program.is_dir():
        shutil.copytree(program, folder)
    else:
        folder.mkdir(parents=True)
        shutil.copy(program, folder / program.name)
    main = folder / (program.name if program.is_file() else "main.py")
    text = main.read_text() if main.exists() else ""
    command = command or _directive(text, "run") or [main.name]
    options = _directive(text, "migrate")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XRT_", "PJRT_", "TPU_", "CPU_NUM"))}
    env.update(PJRT_DEVICE="CPU", PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    migrated = subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "migrate", "--write", *options, str(folder)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if migrated.returncode not in (0, 1):
        return Ending(name, "unmarked", error=f"migrate failed: {migrated.stderr.strip()[-500:]}")
    try:
        ran = subprocess.run(
            [sys.executable, *command], cwd=folder, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return Ending(name, "unmarked", error=f"timed out after {timeout}s")
    if ran.returncode == 0:
        return Ending(name, "ran")
    return _failure(name, folder, ran.stderr)


def _failure(name: str, folder: Path, stderr: str) -> Ending:
    error = next((line for line in reversed(stderr.strip().splitlines()) if line.strip()), "")
    # Python prints the cause first (a spawned process's traceback comes before the
    # parent's re-raise): the first traceback that passes through the program is where it failed.
    mine = []
    for block in stderr.split("Traceback (most recent call last):")[1:]:
        frames = [(Path(f), int(line)) for f, line in _FRAME.findall(block)]
        mine = [(f, line) for f, line in frames if f.resolve().is_relative_to(folder.resolve())]
        if mine:
            break
    if not mine:
        return Ending(name, "unmarked", error=error or f"no traceback: {stderr.strip()[-300:]}")
    path, line = mine[-1]
    todo = marking(path.read_text(), line)
    where = f"{path.relative_to(folder)}:{line}"
    return Ending(name, "marked" if todo else "unmarked", where, error, todo)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("programs", nargs="+", type=Path)
    parser.add_argument("--keep", type=Path, help="migrate and run in this folder (kept afterwards)")
    args = parser.parse_args(argv)
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="xrt2pjrt-programs-"))
    programs = [
        p
        for arg in args.programs
        for p in (sorted(arg.glob("*.py")) if arg.is_dir() and not (arg / "main.py").exists() else [arg])
    ]
    endings = [run(program, scratch) for program in programs]
    for ending in endings:
        print(f"{ending.outcome:9} {ending.program:32} {ending.where:20} {ending.error[:100]}")
    counts = {kind: sum(e.outcome == kind for e in endings) for kind in ("ran", "marked", "unmarked")}
    print(
        f"{len(endings)} programs: {counts['ran']} ran, {counts['marked']} failed at a marked line, "
        f"{counts['unmarked']} failed unmarked"
    )
    if not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)
    return 1 if counts["unmarked"] else 0


if __name__ == "__main__":
    sys.exit(main())
