"""SIMULATION of the shim's TPU path on a pod of two hosts, on this machine.

Each "host" is a process group of its own (its program, the replicas its spawn starts, the
store helper it may start), run with the environment a TPU VM of a v4-16 slice has
(``TPU_WORKER_ID``, ``TPU_WORKER_HOSTNAMES``, ``TPU_HOST_BOUNDS``, ``TPU_SKIP_MDS_QUERY``).
Host h's address is the loopback address 127.0.0.(h+2). What needs TPU chips is stood in
by tests/pod_simulation.py (how many chips a host has, the runtime's ordinals, the XLA
collectives, which raise if the rendezvous reaches for them); the shim, its store,
sockets, processes and signals are real. Killing a host kills its process group.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

pytestmark = [pytest.mark.xla, pytest.mark.slow]  # each test runs two simulated hosts: 20-60 s

ROOT = Path(__file__).resolve().parent.parent
HOSTS = ("127.0.0.2", "127.0.0.3")

PROGRAM = textwrap.dedent('''
    import json, os, sys, time
    import pod_simulation  # SIMULATION: stands in for the TPU runtime (tests/pod_simulation.py)
    import torch
    import xrt2pjrt.shim.xla_model as xm
    import xrt2pjrt.shim.xla_multiprocessing as xmp

    OUT, PLAN = os.environ["SIM_OUT"], json.loads(os.environ["SIM_PLAN"])

    def run(step, ordinal):
        kind = step[0]
        if kind == "rendezvous":  # [kind, tag, replicas, timeout (optional)]
            return [p.decode() for p in xm.rendezvous(step[1], str(ordinal).encode(), step[2], timeout=(step[3:] or [None])[0])]
        if kind == "sleep":
            return time.sleep(step[1])
        if kind == "wait_for":  # until the test creates the file
            while not os.path.exists(step[1]):
                time.sleep(0.1)
            return None
        if kind == "mesh_reduce":  # a payload of step[2] float32 values from every replica
            return xm.mesh_reduce(step[1], torch.full((step[2],), float(ordinal)),
                                  lambda xs: [float(x[0]) for x in xs] + [sum(x.numel() for x in xs)])
        if kind == "do_on_ordinals":
            return xm.do_on_ordinals(lambda: os.environ["TPU_WORKER_ID"], (), tuple(step[1]))
        if kind == "save":
            return xm.save({"saved by": ordinal}, step[1], global_master=True)
        if kind == "master_print":
            return xm.master_print(f"master says {ordinal}", flush=True)
        if kind == "raise":
            raise ValueError(f"replica {ordinal} fails on purpose")
        raise AssertionError(kind)

    def _mp_fn(index):
        ordinal = xm.get_ordinal()
        record = {"index": index, "ordinal": ordinal, "world": xm.xrt_world_size(), "local": xm.get_local_ordinal(),
                  "master": xm.is_master_ordinal(local=False), "pid": os.getpid(), "steps": []}
        try:
            for step in PLAN.get(str(ordinal), PLAN.get("*")):
                open(os.path.join(OUT, f"{ordinal}.at-{step[0]}"), "w").close()  # for the test to watch
                started = time.time()
                try:
                    outcome = run(step, ordinal)
                except xm.RendezvousError as error:
                    outcome = f"{type(error).__name__}: {error}"
                name = step[1] if step[0] == "rendezvous" else step[0]
                record["steps"].append([name, outcome, started, time.time()])
        finally:
            with open(os.path.join(OUT, f"{ordinal}.json"), "w") as handle:
                json.dump(record, handle)

    if __name__ == "__main__":
        host = os.environ["TPU_WORKER_ID"]
        if os.environ.get("SIM_LAUNCH") == "direct":  # no spawn: this process is the replica
            try:
                xm.get_ordinal()
            except RuntimeError as error:
                with open(os.path.join(OUT, f"before-{host}.txt"), "w") as handle:
                    handle.write(str(error))
            if not os.environ.get("XLA_USE_SPMD"):
                pod_simulation.start_runtime()  # SIMULATED: xm.xla_device() would start it
            _mp_fn(xm.get_ordinal())
        else:
            xmp.spawn(_mp_fn, start_method="fork")
        with open(os.path.join(OUT, f"host-{host}.json"), "w") as handle:
            json.dump({"ended": time.time()}, handle)
''')


# The hosts start when they start (importing torch_xla on a loaded machine): a first meeting
# with a long timeout, so that a test's short timeout counts from there.
STARTED = ["rendezvous", "start", [], 120]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOSTS[0], 0))
        return probe.getsockname()[1]


class Pod:
    """One job on the simulated pod: its program, plan, port and secret."""

    def __init__(self, tmp_path: Path, plan: dict, *, order="0,1,2,3", timeout=60, port=None, **env):
        self.out = tmp_path / f"out-{uuid.uuid4().hex[:6]}"
        self.out.mkdir()
        script = tmp_path / "program.py"
        script.write_text(PROGRAM)
        self.script = script
        self.port = port or _free_port()
        self.env = {
            **os.environ,
            "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests'}",
            "PJRT_DEVICE": "TPU",
            "TPU_SKIP_MDS_QUERY": "1",
            "TPU_ACCELERATOR_TYPE": "v4-16",
            "TPU_HOST_BOUNDS": "1,1,2",
            "TPU_CHIPS_PER_HOST_BOUNDS": "2,2,1",
            "TPU_WORKER_HOSTNAMES": ",".join(HOSTS),
            "SIM_LOCAL_PROCESSES": "2",
            "SIM_ORDER": order,
            "SIM_OUT": str(self.out),
            "SIM_PLAN": json.dumps(plan),
            "XRT2PJRT_RENDEZVOUS_PORT": str(self.port),
            "XRT2PJRT_RENDEZVOUS_TIMEOUT": str(timeout),
            "XRT2PJRT_JOB_SECRET": uuid.uuid4().hex,
            **env,
        }
        for name in (
            "MASTER_ADDR",
            "MASTER_PORT",
            "XRT2PJRT_RENDEZVOUS_TRANSPORT",
            "XLA_USE_SPMD",
            "PJRT_LOCAL_PROCESS_RANK",
            "PJRT_LOCAL_PROCESS_COUNT",
            "CLOUD_TPU_TASK_ID",
        ):
            if name not in env:
                self.env.pop(name, None)
        self.hosts: dict[str, subprocess.Popen] = {}

    def start(self, name: str, worker: int, **env) -> subprocess.Popen:
        """Start a host program (``name`` tells apart several on one worker)."""
        process = subprocess.Popen(
            [sys.executable, str(self.script)],
            env={**self.env, "TPU_WORKER_ID": str(worker), **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.hosts[name] = process
        return process

    def kill(self, name: str) -> None:
        """The host dies: every process of its group at once."""
        os.killpg(self.hosts[name].pid, signal.SIGKILL)

    def finish(self, deadline: float = 120) -> dict[str, tuple[int, str]]:
        """Wait until every host program and everything it started (the store helper too: it
        writes to the same output) has ended; return {name: (exit code, output)}."""
        ended = {}
        for name, process in self.hosts.items():
            try:
                output, _ = process.communicate(timeout=deadline)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                output, _ = process.communicate()
                pytest.fail(f"host {name} did not finish in {deadline}s:\n{output[-3000:]}")
            ended[name] = (process.returncode, output)
        return ended

    def replicas(self) -> dict[int, dict]:
        return {int(p.stem): json.loads(p.read_text()) for p in self.out.glob("*.json") if p.stem.isdigit()}

    def ended(self, host: int) -> float:
        return json.loads((self.out / f"host-{host}.json").read_text())["ended"]


def _succeeded(ended: dict) -> None:
    for name, (code, output) in ended.items():
        assert code == 0, f"host {name} exited {code}:\n{output[-3000:]}"
        assert "Broken pipe" not in output and "Traceback" not in output, output[-3000:]


def _steps(record: dict) -> dict[str, list]:
    """A replica's steps by name: a rendezvous by its tag, anything else by its kind."""
    return {step[0]: step for step in record["steps"]}


def test_hosts_start_in_any_order_and_meet_in_worker_0s_store_though_ordinal_0_runs_on_worker_1(tmp_path):
    """Worker 1 starts 3 s before worker 0; PJRT put ordinals 0 and 1 on worker 1. The store
    is worker 0's (at worker 0's address only), found with no collective and no graph sync
    (both raise in this simulation), and a 20 MiB mesh_reduce payload goes through it."""
    plan = {"*": [["rendezvous", "start", []], ["mesh_reduce", "big", 5 << 20], ["rendezvous", "pair", []]]}
    pod = Pod(tmp_path, plan, order="2,3,0,1")
    started = time.monotonic()
    pod.start("1", 1)
    time.sleep(3)
    with pytest.raises(OSError):  # nothing listens on the port until worker 0's store is up
        socket.create_connection((HOSTS[0], pod.port), timeout=1).close()
    pod.start("0", 0)
    _succeeded(pod.finish())
    assert time.monotonic() - started < 60
    replicas = pod.replicas()
    assert sorted(replicas) == [0, 1, 2, 3]
    for ordinal, record in replicas.items():
        assert (record["index"], record["world"], record["master"]) == (ordinal, 4, ordinal == 0)
        steps = _steps(record)
        assert steps["start"][1] == steps["pair"][1] == ["0", "1", "2", "3"]
        assert steps["mesh_reduce"][1] == [0.0, 1.0, 2.0, 3.0, 4 * (5 << 20)]
    assert {o: replicas[o]["local"] for o in range(4)} == {2: 0, 3: 1, 0: 0, 1: 1}


def test_the_store_outlives_worker_0_whose_replicas_finish_first(tmp_path):
    """Worker 0 (the store's host, with ordinals 0 and 1) is done after the first barrier;
    worker 1 meets twice more, seconds after worker 0's program has ended."""
    late = [STARTED, ["sleep", 3], ["rendezvous", "late", [2, 3]], ["rendezvous", "again", [3, 2]]]
    pod = Pod(tmp_path, {"0": [STARTED], "1": [STARTED], "2": late, "3": late}, timeout=5)
    pod.start("0", 0)
    pod.start("1", 1)
    _succeeded(pod.finish())
    replicas = pod.replicas()
    worker_0_ended = pod.ended(0)
    for ordinal in (2, 3):
        steps = _steps(replicas[ordinal])
        assert steps["late"][1] == steps["again"][1] == ["2", "3"] and steps["late"][2] > worker_0_ended


def test_a_host_that_dies(tmp_path):
    """Worker 1 is killed while worker 0 waits: worker 0's replicas give up at the timeout,
    naming the replicas that never came. Then the store's host is killed while worker 1's
    replicas wait: they know at once, not after the timeout."""
    pod = Pod(
        tmp_path,
        {
            "0": [STARTED, ["rendezvous", "after", []]],
            "1": [STARTED, ["rendezvous", "after", []]],
            "2": [STARTED, ["sleep", 60]],
            "3": [STARTED, ["sleep", 60]],
        },
        timeout=6,
    )
    pod.start("0", 0)
    pod.start("1", 1)
    _wait_until_at("sleep", pod, (2, 3))
    pod.kill("1")
    ended = pod.finish()
    assert ended["0"][0] == 0, ended["0"][1][-3000:]
    for ordinal in (0, 1):
        kind, outcome, arrived, left = _steps(pod.replicas()[ordinal])["after"]
        assert outcome.startswith("RendezvousTimeout") and "replicas [2, 3] never arrived" in outcome
        assert 6 - 0.5 < left - arrived < 6 + 2.0

    pod = Pod(
        tmp_path,
        {
            "*": [["rendezvous", "start", []], ["rendezvous", "after", []]],
            "0": [["rendezvous", "start", []], ["sleep", 60]],
            "1": [["rendezvous", "start", []], ["sleep", 60]],
        },
        timeout=60,
    )
    pod.start("0", 0)
    pod.start("1", 1)
    _wait_until_at("sleep", pod, (0, 1))
    time.sleep(1)  # worker 1's replicas now wait in "after"
    killed = time.time()
    pod.kill("0")
    ended = pod.finish()
    for ordinal in (2, 3):
        kind, outcome, arrived, left = _steps(pod.replicas()[ordinal])["after"]
        assert outcome.startswith("RendezvousError") and "went away" in outcome
        assert left - killed < 3, "worker 1 waited for the timeout instead of seeing the store go"
    assert "Broken pipe" not in ended["1"][1]


def _wait_until_at(step: str, pod: Pod, ordinals) -> None:
    """Until the replicas ``ordinals`` have started a step of kind ``step`` (their records
    are written at the end)."""
    deadline = time.monotonic() + 90
    while not all((pod.out / f"{ordinal}.at-{step}").exists() for ordinal in ordinals):
        assert time.monotonic() < deadline, f"replicas {list(ordinals)} never reached {step}"
        time.sleep(0.2)


def test_a_replica_that_raises_ends_every_rendezvous_of_the_job_at_once(tmp_path):
    meet = [["rendezvous", "start", []], ["rendezvous", "after", []]]
    pod = Pod(tmp_path, {"*": meet, "3": [["rendezvous", "start", []], ["raise"]]}, timeout=60)
    pod.start("0", 0)
    pod.start("1", 1)
    ended = pod.finish()
    assert ended["1"][0] != 0 and "ValueError: replica 3 fails on purpose" in ended["1"][1]
    replicas = pod.replicas()
    raised_at = _steps(replicas[3])["start"][3]
    for ordinal in (0, 1, 2):
        _, outcome, _, left = _steps(replicas[ordinal])["after"]
        assert outcome.startswith("RendezvousAborted") and "replica 3 raised ValueError" in outcome
        assert left - raised_at < 3, "the others waited for the timeout"


def test_a_strangers_forged_arrival_is_refused_and_the_job_sees_only_its_own_payloads(tmp_path):
    """A stranger on the network knows the port and the key of the late replica's arrival,
    not the secret."""
    from xrt2pjrt.shim import rendezvous
    from xrt2pjrt.shim.store.client import StoreClient
    from xrt2pjrt.shim.store.protocol import StoreAuthenticationError

    pod = Pod(tmp_path, {"*": [["rendezvous", "start", []]], "3": [["sleep", 4], ["rendezvous", "start", []]]})
    pod.start("0", 0)
    pod.start("1", 1)
    _wait_until_at("sleep", pod, [3])
    stranger = StoreClient(HOSTS[0], pod.port, uuid.uuid4().hex.encode(), timeout=20)
    with pytest.raises(StoreAuthenticationError):
        stranger.set("xrt2pjrt/rendezvous/all/0/3", rendezvous._encode("start", b"forged"))
    ended = pod.finish()
    _succeeded({"1": ended["1"]})
    assert ended["0"][0] == 0
    assert all(_steps(r)["start"][1] == ["0", "1", "2", "3"] for r in pod.replicas().values())


def test_two_jobs_on_one_port_never_mix(tmp_path):
    """Job B is started on the port job A's store holds: B's worker 0 fails at once naming
    the port; B's worker 1 finds A's store and is turned away at once; A is undisturbed."""
    b_is_done = tmp_path / "job B is done"
    job_a = Pod(tmp_path, {"*": [["rendezvous", "start", []], ["wait_for", str(b_is_done)], ["rendezvous", "end", []]]})
    job_a.start("0", 0)
    job_a.start("1", 1)
    _wait_until_at("wait_for", job_a, range(4))
    job_b = Pod(tmp_path, {"*": [["rendezvous", "start", []]]}, port=job_a.port)
    job_b.start("1", 1)
    job_b.start("0", 0)
    b_ended = job_b.finish()
    assert b_ended["0"][0] != 0 and f"port {job_a.port} on {HOSTS[0]} is taken" in b_ended["0"][1], b_ended
    for ordinal in (2, 3):
        _, outcome, arrived, left = _steps(job_b.replicas()[ordinal])["start"]
        assert outcome.startswith("RendezvousError") and "another job's store on the same port" in outcome
        assert left - arrived < 2
    b_is_done.touch()
    _succeeded(job_a.finish())
    assert all(_steps(r)["end"][1] == ["0", "1", "2", "3"] for r in job_a.replicas().values())


def test_under_spmd_ordinals_count_processes_and_everything_built_on_them_follows(tmp_path):
    """One SPMD process per host, launched without spawn, the runtime not yet started."""
    saved = tmp_path / "checkpoint.pt"
    common = [
        ["rendezvous", "start", []],
        ["master_print"],
        ["do_on_ordinals", [0]],
        ["save", str(saved)],
        ["rendezvous", "both", [1, 0]],
    ]
    pod = Pod(
        tmp_path, {"0": common, "1": common + [["rendezvous", "alone", [1]]]}, SIM_LAUNCH="direct", XLA_USE_SPMD="1"
    )
    pod.start("0", 0)
    pod.start("1", 1)
    ended = pod.finish()
    _succeeded(ended)
    replicas = pod.replicas()
    assert {o: (r["world"], r["local"], r["master"]) for o, r in replicas.items()} == {
        0: (2, 0, True),
        1: (2, 0, False),
    }
    for ordinal, record in replicas.items():
        steps = _steps(record)
        assert steps["start"][1] == steps["both"][1] == ["0", "1"]
        assert steps["do_on_ordinals"][1] == ("0" if ordinal == 0 else None)
    assert _steps(replicas[1])["alone"][1] == ["1"]
    assert "master says 0" in ended["0"][1] and "master says" not in ended["1"][1]
    import torch

    assert torch.load(saved) == {"saved by": 0}
    assert not list(pod.out.glob("before-*.txt"))  # SPMD's answers need no runtime


def test_a_launch_without_spawn(tmp_path):
    """Per-host launches, one process each (PJRT's process variables, as torchrun or
    nprocs=1 leave them): before the runtime starts the shim refuses to guess; after, the
    processes meet. PJRT put ordinal 0 on worker 1."""
    pod = Pod(
        tmp_path,
        {"*": [["rendezvous", "start", []], ["mesh_reduce", "m", 4]]},
        order="1,0",
        SIM_LAUNCH="direct",
        PJRT_LOCAL_PROCESS_COUNT="1",
        PJRT_LOCAL_PROCESS_RANK="0",
    )
    pod.start("1", 1)
    pod.start("0", 0)
    _succeeded(pod.finish())
    replicas = pod.replicas()
    assert sorted(replicas) == [0, 1]
    assert all(_steps(r)["start"][1] == ["0", "1"] and r["world"] == 2 for r in replicas.values())
    refused = (pod.out / "before-0.txt").read_text()
    assert (
        "xm.get_ordinal() before torch_xla's runtime started in this process, which is process 0 of 2 "
        "on host 0 of 2 (PJRT process variables)" in refused
    )


def test_torchrun_on_one_host_meets_on_loopback_with_a_secret_no_one_set(tmp_path):
    """torchrun's variables (two local processes), no XRT2PJRT_JOB_SECRET: the children of one
    parent derive the same secret; rank 0 serves at 127.0.0.1:MASTER_PORT+1."""
    port = _free_port()
    pod = Pod(
        tmp_path,
        {"*": [["rendezvous", "start", []], ["rendezvous", "end", []]]},
        order="0,1",
        SIM_LAUNCH="direct",
        TPU_HOST_BOUNDS="1,1,1",
        TPU_ACCELERATOR_TYPE="v4-8",
        TPU_WORKER_HOSTNAMES="",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port - 1),
        WORLD_SIZE="2",
        LOCAL_WORLD_SIZE="2",
    )
    del pod.env["XRT2PJRT_JOB_SECRET"], pod.env["XRT2PJRT_RENDEZVOUS_PORT"]
    for rank in (1, 0):
        pod.start(str(rank), 0, RANK=str(rank), LOCAL_RANK=str(rank), GROUP_RANK="0", CLOUD_TPU_TASK_ID=str(rank))
    _succeeded(pod.finish())
    assert all(_steps(r)["end"][1] == ["0", "1"] for r in pod.replicas().values())
    assert "(torchrun)" in (pod.out / "before-0.txt").read_text()
