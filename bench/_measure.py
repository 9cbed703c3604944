"""Run a command and measure it: wall time, CPU time and peak memory of its processes.

Each measurement runs the command under a fresh Python process (this file run as a
script), so ``getrusage(RUSAGE_CHILDREN)`` there covers exactly the command and the
worker processes it starts: CPU is their sum, peak RSS the largest single process.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Measurement:
    wall: float  # seconds
    cpu: float  # user + system seconds of the command and everything it started
    peak_mb: float  # largest resident set of any one of its processes
    returncode: int


def measure(argv: list[str], repeat: int = 1, env: dict | None = None, ok: tuple[int, ...] = (0,)) -> Measurement:
    """The fastest of ``repeat`` runs (by wall time); stdout is discarded. A run whose exit
    code is not in ``ok`` is an error, never a (suspiciously fast) figure."""
    runs = []
    for _ in range(repeat):
        done = subprocess.run([sys.executable, __file__, *argv], capture_output=True, text=True, env=env)
        run = Measurement(**json.loads(done.stdout.splitlines()[-1])) if done.returncode == 0 else None
        if run is None or run.returncode not in ok:
            raise RuntimeError(f"measuring {argv} failed:\n{done.stderr[-2000:]}")
        runs.append(run)
    return min(runs, key=lambda m: m.wall)


def machine() -> str:
    """nproc, CPU model and RAM: the line every figure is printed with."""
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    ram_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    # Other work on the machine shows in wall times (not much in CPU times): say how much.
    return (
        f"{os.cpu_count()} CPUs ({model}), {ram_gb:.0f} GiB RAM, Python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.1f} at start"
    )


def _run_and_report(argv: list[str]) -> None:
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "peak_mb": usage.ru_maxrss / 1024,  # Linux reports KiB
        "returncode": done.returncode,
    }))  # fmt: skip


if __name__ == "__main__":
    _run_and_report(sys.argv[1:])
