"""Runs a program on the installed torch_xla's CPU PJRT in a process of its own, as a user
would: PJRT_DEVICE unset (torch_xla picks CPU on a host without a TPU), its stdout returned."""

import os
import subprocess
import sys
import textwrap


def run_on_cpu(source: str, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "PJRT_DEVICE" and not k.startswith("XRT_")}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(source)],
        env={**environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout
