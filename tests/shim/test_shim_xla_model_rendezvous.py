"""xm.rendezvous through the shim, across real processes on loopback (default transport).

PJRT on CPU runs one replica per process, so each process here is told its ordinal and
the world size (the PJRT backend's two answers are SIMULATED). The processes carry PJRT's
process variables as torch_xla's spawn sets them (local process 0 of 3, ...), and no secret:
the job's store, its secret (derived for the children of one parent) and the real TCP
socket they meet over are the shim's own. The store module itself is tested in
test_shim_rendezvous.py; this file checks what the shim's callers see.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.xla

PARTICIPANT = textwrap.dedent("""
    import json, os, sys, time
    import torch_xla
    import xrt2pjrt.shim.xla_model as xm

    ordinal, world = int(os.environ["ORDINAL"]), int(os.environ["WORLD"])
    if not os.environ.get("XLA_USE_SPMD"):  # under SPMD the shim counts processes itself
        xm.PJRT.get_ordinal = lambda defval=0: ordinal  # SIMULATED: the replica id PJRT gives
        xm.PJRT.xrt_world_size = lambda defval=1: world
    out = []
    # the processes start when they start (importing torch_xla on a loaded machine): they
    # first meet with a long timeout, and the plan's own timeouts count from there
    xm.rendezvous("started", timeout=120)
    for tag, replicas, delay in json.loads(sys.argv[1])[ordinal]:
        time.sleep(delay)
        arrived = time.time()
        try:
            result = [p.decode() for p in xm.rendezvous(tag, f"from {ordinal}".encode(), replicas)]
        except xm.RendezvousError as error:
            result = f"{type(error).__name__}: {error}"
        out.append([tag, result, arrived, time.time()])
    out.append(["runtime started", torch_xla._XLAC._xla_runtime_is_initialized()])
    print(json.dumps(out))
""")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def meet(plan: list[list], timeout_setting: str = "30", **extra_env: str) -> list[list]:
    """Run one participant per entry of ``plan`` (its steps); return each one's report."""
    port = str(free_port())
    procs = []
    for ordinal in range(len(plan)):
        env = {
            **os.environ,
            "PJRT_DEVICE": "CPU",
            "ORDINAL": str(ordinal),
            "WORLD": str(len(plan)),
            "PJRT_LOCAL_PROCESS_RANK": str(ordinal),
            "PJRT_LOCAL_PROCESS_COUNT": str(len(plan)),
            "XRT2PJRT_RENDEZVOUS_PORT": port,
            "XRT2PJRT_RENDEZVOUS_TIMEOUT": timeout_setting,
            **extra_env,
        }
        for name in ("XRT2PJRT_RENDEZVOUS_TRANSPORT", "XRT2PJRT_JOB_SECRET", "XLA_USE_SPMD"):
            env.pop(name, None)
        env.update(extra_env)
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", PARTICIPANT, json.dumps(plan)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    reports = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 0, stderr[-3000:]
        reports.append(json.loads(stdout.strip().splitlines()[-1]))
    return reports


@pytest.mark.slow
def test_barrier_payloads_subset_tag_mismatch_and_timeout_through_xm_rendezvous():
    plan = [
        # ordinal 0's process serves the store and finishes first: the store stays until the
        # others are done, so ordinal 2 times out waiting for ordinal 1, not for the store
        [["barrier", [], 0], ["pair", [0, 1], 0], ["epoch", [], 0], ["checkpoint", [], 0]],
        [["barrier", [], 0], ["pair", [0, 1], 0], ["epoch-typo", [], 0]],  # never reaches checkpoint
        [["barrier", [], 1.5], ["epoch", [], 0], ["checkpoint", [], 0]],  # late, not in the pair
    ]
    reports = meet(plan, timeout_setting="3")
    steps = [{step[0]: step for step in report} for report in reports]
    late_arrival = steps[2]["barrier"][2]
    for ordinal, step in enumerate(steps):
        _, payloads, _, left = step["barrier"]
        assert payloads == ["from 0", "from 1", "from 2"]  # ordinal order
        assert left >= late_arrival, f"ordinal {ordinal} left the barrier before ordinal 2 arrived"
        mismatch = step["epoch-typo" if ordinal == 1 else "epoch"][1]
        assert "RendezvousTagMismatch" in mismatch
        assert "ordinals [0, 2] called rendezvous('epoch')" in mismatch
        assert "ordinals [1] called rendezvous('epoch-typo')" in mismatch
        # the default (host) transport never touched the device: no graph sync, no runtime
        assert step["runtime started"] == ["runtime started", False]
    assert steps[0]["pair"][1] == steps[1]["pair"][1] == ["from 0", "from 1"]
    for ordinal in (0, 2):
        _, message, arrived, gave_up = steps[ordinal]["checkpoint"]
        assert message.startswith("RendezvousTimeout:") and "replicas [1] never arrived" in message
        assert 2.5 < gave_up - arrived < 20


@pytest.mark.slow
def test_under_spmd_the_processes_meet():
    """Under SPMD one process drives all its devices, and an XLA collective does not
    synchronise processes (pytorch/xla#9479): the shim's rendezvous meets per process."""
    reports = meet([[["spmd", [], 0]], [["spmd", [], 1]]], XLA_USE_SPMD="1")
    first, second = ({step[0]: step for step in report} for report in reports)
    assert first["spmd"][1] == second["spmd"][1] == ["from 0", "from 1"]
    assert first["spmd"][3] >= second["spmd"][2]
