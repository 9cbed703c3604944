"""A simulated TPU pod for the test suite: each worker's command runs locally.

Shared by the stand-in ``gcloud`` and the stand-in XRT-era ``xla_dist``. A worker is
``bash -c COMMAND`` in a clean environment, as over ssh: PATH is STAND_IN_WORKER_PATH
(whose tools, from worker_bin/, record what they are run with), HOME is a folder of its
own (so a ``$HOME`` expanded on a worker differs from the local one), TPU_WORKER_ID is
its index, and the STAND_IN_* variables tell the tools where to record. Nothing else of
the local environment reaches a worker.
"""

from __future__ import annotations

import os
import subprocess


def worker_count() -> int:
    return int(os.environ.get("STAND_IN_WORKERS", "4"))


def worker_env(worker: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k.startswith("STAND_IN_")}
    env["PATH"] = os.environ.get("STAND_IN_WORKER_PATH", "/usr/bin:/bin")
    env["HOME"] = f"/home/worker-{worker}"  # need not exist: only its expansion is looked at
    env["TPU_WORKER_ID"] = str(worker)
    return env


def run_workers(commands: dict[int, str]) -> int:
    """Run each worker's command at once; output passes through; the first failure's status."""
    # Each worker in a session of its own: like a remote process, it outlives this "ssh client".
    procs = {w: subprocess.Popen(["bash", "-c", cmd], env=worker_env(w), start_new_session=True)
             for w, cmd in commands.items()}
    codes = [procs[w].wait() for w in sorted(procs)]
    return next((c for c in codes if c != 0), 0)
