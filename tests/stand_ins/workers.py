"""A simulated TPU pod for the test suite: each worker's command runs locally.

Shared by the stand-in ``gcloud`` and the stand-in XRT-era ``xla_dist``. A worker is
``bash -c COMMAND`` in a clean environment, as over ssh: PATH is STAND_IN_WORKER_PATH
(whose tools, from worker_bin/, record what they are run with), HOME is a folder of its
own (so a ``$HOME`` expanded on a worker differs from the local one), TPU_WORKER_ID is
its index, and the STAND_IN_* variables tell the tools where to record. Nothing else of
the local environment reaches a worker. Its ``/etc/profile`` is worker_profile.sh (read
through worker_startup.sh, which bash reads first as BASH_ENV). The commands worker N is
given are kept in $STAND_IN_RECORDS/commands-N, one JSON string a line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def worker_count() -> int:
    return int(os.environ.get("STAND_IN_WORKERS", "4"))


def worker_env(worker: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k.startswith("STAND_IN_")}
    env["PATH"] = os.environ.get("STAND_IN_WORKER_PATH", "/usr/bin:/bin")
    env["HOME"] = f"/home/worker-{worker}"  # need not exist: only its expansion is looked at
    env["TPU_WORKER_ID"] = str(worker)
    env["BASH_ENV"] = os.path.join(HERE, "worker_startup.sh")
    return env


def run_workers(commands: dict[int, str], lost_after: float | None = None) -> int:
    """Run each worker's command at once; output passes through; the first failure's status.
    With ``lost_after``, the connection is lost then: the output stops coming through, the
    commands run on, and the status is ssh's own failure, 255."""
    records = os.environ.get("STAND_IN_RECORDS")
    if records:
        for w, cmd in commands.items():
            with open(os.path.join(records, f"commands-{w}"), "a") as log:
                log.write(json.dumps(cmd) + "\n")
    # Each worker in a session of its own: like a remote process, it outlives this "ssh client".
    relay = subprocess.PIPE if lost_after is not None else None
    procs = {
        w: subprocess.Popen(["bash", "-c", cmd], env=worker_env(w), start_new_session=True, stdout=relay, stderr=relay)
        for w, cmd in commands.items()
    }
    if lost_after is None:
        codes = [procs[w].wait() for w in sorted(procs)]
        return next((c for c in codes if c != 0), 0)
    for proc in procs.values():  # through this process, so that they stop coming when it is gone
        for stream, sink in ((proc.stdout, sys.stdout.buffer), (proc.stderr, sys.stderr.buffer)):
            threading.Thread(target=_relay, args=(stream, sink), daemon=True).start()
    time.sleep(lost_after)
    sys.stderr.write(
        "Connection to 10.0.0.2 closed by remote host.\n"
        "ERROR: (gcloud.compute.tpus.tpu-vm.ssh) [/usr/bin/ssh] exited with return code [255].\n"
    )
    sys.stderr.flush()
    return 255


def _relay(stream, sink) -> None:
    for line in iter(stream.readline, b""):
        sink.write(line)
        sink.flush()
