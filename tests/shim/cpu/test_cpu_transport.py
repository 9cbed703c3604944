"""xrt2pjrt.shim.cpu.transport: a replica's stdout holds only what the program printed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from replica_programs import ROOT


PRINTS_JSON = """
import json, sys, torch, torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr
import torch_xla.distributed.xla_multiprocessing as xmp


def _mp_fn(index):
    d = torch_xla.device()
    # one write per line: the replicas share the pipe (and may run unbuffered)
    sys.stdout.write(f"before {index}\\n")  # not flushed: may be in Python's buffer when gloo first connects
    x = torch.tensor([float(xr.global_ordinal())], device=d)
    total = xm.all_reduce(xm.REDUCE_SUM, x).cpu().item()  # the world's gloo group
    backwards = xm.all_gather(x, groups=[[2, 1, 0]]).cpu().tolist()  # another group: another order
    if xm.is_master_ordinal():
        sys.stdout.write(json.dumps({"sum": total, "gather": backwards}) + "\\n")
    sys.stdout.write(f"after {index}\\n")
    sys.stdout.flush()


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=())
"""


@pytest.mark.slow
@pytest.mark.xla
def test_a_replicas_stdout_holds_only_what_the_program_printed(tmp_path):
    """gloo prints "[Gloo] Rank r is connected to k peer ranks ..." on stdout (fd 1, from C++)
    for every group it connects: the program's JSON on stdout did not parse. It goes to stderr
    now, and fd 1 is the program's stdout again after."""
    script = tmp_path / "prints_json.py"
    script.write_text(PRINTS_JSON)
    ran = subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "run", "--nprocs", "3", str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    lines = ran.stdout.splitlines()
    assert sorted(lines) == sorted(
        [f"before {i}" for i in range(3)]
        + [f"after {i}" for i in range(3)]
        + ['{"sum": 3.0, "gather": [2.0, 1.0, 0.0]}']
    ), ran.stdout
    # what gloo printed is on stderr: each of the 3 replicas connects 2 groups
    assert ran.stderr.count("[Gloo] Rank") == 6, ran.stderr[-3000:]


STDOUT_INTO_STDERR = """
import os, threading
from xrt2pjrt.shim.cpu import transport

os.write(1, b"out 1\\n")
try:
    with transport._stdout_into_stderr():
        os.write(1, b"err 1\\n")
        raise KeyError("a failure inside")
except KeyError:
    pass
os.write(1, b"out 2\\n")
inside, leave = threading.Event(), threading.Event()


def other():
    with transport._stdout_into_stderr():
        inside.set()
        leave.wait()
        os.write(1, b"err 4\\n")


thread = threading.Thread(target=other)
with transport._stdout_into_stderr():
    thread.start()
    inside.wait()
    os.write(1, b"err 2\\n")
os.write(1, b"err 3\\n")  # the other thread is still inside
leave.set()
thread.join()
os.write(1, b"out 3\\n")
"""


def test_stdout_into_stderr_restores_fd_1_when_the_block_raises_and_when_the_last_thread_leaves():
    ran = subprocess.run(
        [sys.executable, "-c", STDOUT_INTO_STDERR],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert ran.returncode == 0, ran.stderr
    assert (ran.stdout, ran.stderr) == ("out 1\nout 2\nout 3\n", "err 1\nerr 2\nerr 3\nerr 4\n")
