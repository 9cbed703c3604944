"""xrt2pjrt.shim.cpu.supervisor, end to end: faults end every replica with an error naming the
cause, on one host and across hosts (loopback, network namespaces). Real processes, signals
and sockets (see replica_programs).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import time
import uuid

import pytest

from replica_programs import (
    SEED,
    alive,
    assert_seed_table,
    by_ordinal,
    edited,
    finish_program,
    free_port,
    run_program,
    start_program,
    write_program,
)


FAULTS = """
import signal

def _mp_fn(index):
    r = xm.get_ordinal()
    mode = os.environ["FAULT"]
    dump(f"pid{r}", os.getpid())
    xm.all_reduce("sum", torch.ones(2, device=xm.xla_device()))
    if mode == "exit" and r == 1:
        dump("fault", time.time())
        os._exit(7)
    if mode == "kill" and r == 2:
        dump("fault", time.time())
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "raise" and r == 2:
        dump("fault", time.time())
        raise ValueError("boom in replica 2")
    if mode == "tags":
        xm.rendezvous("checkpoint" if r < 2 else "eval")
    if mode == "late" and r == 2:
        time.sleep(120)
    for _ in range(1000):  # the survivors keep waiting for the faulty one
        xm.rendezvous("step")
        xm.all_reduce("sum", torch.ones(2, device=xm.xla_device()))
"""


FAULT_CASES = {
    # mode: (words the parent's error must contain)
    "exit": ["CPU replica 1", "exited with code 7"],
    "kill": ["CPU replica 2", "killed by SIGKILL"],
    "raise": ["CPU replica 2", "exited with code 1", "ValueError: boom in replica 2"],
    "tags": ["rendezvous('checkpoint')", "rendezvous('eval')", "ordinals [0, 1]", "ordinals [2]"],
    "late": ["timed out", "replicas [2] never arrived"],
}


def _assert_all_ended(results: dict) -> None:
    for name, pid in results.items():
        if name.startswith("pid"):
            assert not alive(pid), name


@pytest.mark.slow
@pytest.mark.xla
def test_faults_end_every_replica_with_an_error_naming_the_cause(tmp_path):
    """Five faulty runs side by side (which also shows that concurrent runs do not collide)."""
    script = write_program(tmp_path, FAULTS)
    runs = {
        mode: start_program(script, 3, "fork", env={"FAULT": mode, "XRT2PJRT_RENDEZVOUS_TIMEOUT": "4"})
        for mode in FAULT_CASES
    }
    for mode, run in runs.items():
        code, results, output = finish_program(run, deadline=120)
        assert code == 3, (mode, output[-3000:])
        parent = results["parent"]
        assert parent["error"] == "ReplicaFailed", (mode, parent)
        for words in FAULT_CASES[mode]:
            assert words in parent["message"], (mode, parent["message"])
        if "fault" in results:  # the parent noticed within seconds of the fault
            assert parent["ended"] - results["fault"] < 15, mode
        _assert_all_ended(results)


ORPHANS = """
def _mp_fn(index):
    dump(f"pid{xm.get_ordinal()}", os.getpid())
    time.sleep(300)
"""


@pytest.mark.slow
@pytest.mark.xla
def test_replicas_die_with_a_killed_parent(tmp_path):
    """A test runner that kills the program must not leave replicas behind."""
    process, out = start_program(write_program(tmp_path, ORPHANS), 3, "fork")
    try:
        deadline = time.monotonic() + 120
        while len(list(out.glob("pid*.json"))) < 3:
            assert time.monotonic() < deadline and process.poll() is None, "replicas did not start"
            time.sleep(0.2)
        process.kill()
        process.communicate(timeout=30)
        pids = [json.loads(path.read_text()) for path in out.glob("pid*.json")]
        ended = time.monotonic() + 10
        while any(alive(pid) for pid in pids) and time.monotonic() < ended:
            time.sleep(0.1)
        assert not any(alive(pid) for pid in pids)
    finally:
        process.kill()


HOSTS = edited(
    SEED,
    "    dump(rank, seen)\n",
    '    seen["host"] = int(os.environ["XRT2PJRT_CPU_HOST_INDEX"])\n'
    '    seen["payloads"] = [p.decode() for p in xm.rendezvous("hosts", str(seen["host"]).encode())]\n'
    "    dump(rank, seen)\n",
)


JOB_SECRET = uuid.uuid4().hex  # the same on every host of one job


def _host_env(index: int, master: str, port: int, **extra) -> dict:
    return {
        "XRT2PJRT_CPU_HOSTS": "2",
        "XRT2PJRT_CPU_HOST_INDEX": str(index),
        "MASTER_ADDR": master,
        "XRT2PJRT_RENDEZVOUS_PORT": str(port),
        "XRT2PJRT_RENDEZVOUS_TIMEOUT": "60",
        "XRT2PJRT_JOB_SECRET": JOB_SECRET,
        **extra,
    }


def _pod_replicas(runs) -> dict[int, dict]:
    """Every host's run finished and succeeded; their replicas' results by ordinal. A
    failure shows every host's output: the first to fail is often only waiting for another."""
    finished = [finish_program(run) for run in runs]
    outputs = "\n".join(
        f"--- host run {k} (exit {code}):\n{output[-3000:]}" for k, (code, _, output) in enumerate(finished)
    )
    assert all(code == 0 for code, _, _ in finished), outputs
    return {ordinal: value for _, results, _ in finished for ordinal, value in by_ordinal(results).items()}


def _assert_pod_layout(replicas: dict[int, dict]) -> None:
    """Two hosts x two processes: host h runs ordinals 2h, 2h+1 with local ordinals 0, 1."""
    assert_seed_table(replicas, 4)
    assert [replicas[o]["host"] for o in range(4)] == [0, 0, 1, 1]
    assert [replicas[o]["local"] for o in range(4)] == [0, 1, 0, 1]
    assert [replicas[o]["master"] for o in range(4)] == [True, False, True, False]
    assert all(replicas[o]["payloads"] == ["0", "0", "1", "1"] for o in range(4))


@pytest.mark.xla
@pytest.mark.slow
def test_two_hosts_on_loopback_join_through_the_store_of_host_0(tmp_path):
    script = write_program(tmp_path, HOSTS)
    port = free_port()
    runs = [start_program(script, 2, "fork", env=_host_env(h, "127.0.0.1", port)) for h in (1, 0)]
    _assert_pod_layout(_pod_replicas(runs))


@pytest.mark.xla
@pytest.mark.slow
def test_a_failure_on_one_host_ends_the_other_host(tmp_path):
    script = write_program(tmp_path, edited(FAULTS, 'mode == "exit" and r == 1', 'mode == "exit" and r == 3'))
    port = free_port()
    runs = [start_program(script, 2, "fork", env=_host_env(h, "127.0.0.1", port, FAULT="exit")) for h in (0, 1)]
    outcomes = [finish_program(run) for run in runs]
    for code, results, output in outcomes:
        assert code == 3, output[-3000:]
        assert "CPU replica 3 on host 1" in results["parent"]["message"]
        assert "exited with code 7" in results["parent"]["message"]
        _assert_all_ended(results)
    assert "another host failed" in outcomes[0][1]["parent"]["message"]


@contextlib.contextmanager
def _network_namespaces(count: int):
    """``count`` namespaces joined by veth pairs to a bridge: hosts 10.231.x.(h+1)/24."""
    if shutil.which("ip") is None:
        pytest.skip("needs the `ip` tool (iproute2) to make network namespaces")
    tag = uuid.uuid4().hex[:6]
    names = [f"xrtns{tag}{h}" for h in range(count)]
    bridge = f"xrtbr{tag}"
    subnet = 10 + int(tag[:2], 16) % 200
    commands = []

    def ip(*words):
        commands.append(words)
        done = subprocess.run(["ip", *words], capture_output=True, text=True)
        if done.returncode:
            raise OSError(f"ip {' '.join(words)}: {done.stderr.strip()}")

    try:
        try:
            ip("link", "add", bridge, "type", "bridge")
            ip("link", "set", bridge, "up")
            addresses = []
            for h, name in enumerate(names):
                ip("netns", "add", name)
                ip("link", "add", f"{name}a", "type", "veth", "peer", "name", f"{name}b")
                ip("link", "set", f"{name}a", "master", bridge)
                ip("link", "set", f"{name}a", "up")
                ip("link", "set", f"{name}b", "netns", name)
                address = f"10.231.{subnet}.{h + 1}"
                ip("-n", name, "addr", "add", f"{address}/24", "dev", f"{name}b")
                ip("-n", name, "link", "set", f"{name}b", "up")
                ip("-n", name, "link", "set", "lo", "up")
                addresses.append(address)
        except OSError as error:
            pytest.skip(f"needs root and CAP_NET_ADMIN to make network namespaces ({error})")
        yield list(zip(names, addresses))
    finally:
        for name in names:
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
            subprocess.run(["ip", "link", "del", f"{name}a"], capture_output=True)
        subprocess.run(["ip", "link", "del", bridge], capture_output=True)


@pytest.mark.xla
@pytest.mark.slow
def test_two_hosts_in_separate_network_namespaces(tmp_path):
    """Each "host" has its own network stack and address; only the bridge joins them."""
    script = write_program(tmp_path, HOSTS)
    with _network_namespaces(2) as hosts:
        (_, master), _ = hosts
        runs = [
            start_program(script, 2, "fork", env=_host_env(h, master, 29400), prefix=("ip", "netns", "exec", name))
            for h, (name, _) in reversed(list(enumerate(hosts)))
        ]
        replicas = _pod_replicas(runs)
    _assert_pod_layout(replicas)


MASTER_SAVES_WHILE_ANOTHER_FAILS = """
def _mp_fn(index):
    xm.all_reduce("sum", torch.ones(2, device=xm.xla_device()))
    if index == 0:
        time.sleep(3)  # the last checkpoint, written while replica 1 has already failed
        dump("saved", time.time())
    else:
        raise ValueError("boom after the last collective")
"""


@pytest.mark.slow
@pytest.mark.xla
def test_a_replica_that_waits_on_nobody_finishes_when_another_fails_as_on_a_pod(tmp_path):
    """torch_xla's spawn on a pod waits for every process before it raises: the master's
    last checkpoint is written although replica 1 failed (the CPU mode ended it within 0.2 s)."""
    code, results, output = run_program(tmp_path, MASTER_SAVES_WHILE_ANOTHER_FAILS, 2)
    assert code == 3, output[-3000:]
    assert "saved" in results, output[-3000:]
    assert (
        results["parent"]["error"] == "ReplicaFailed"
        and "boom after the last collective" in results["parent"]["message"]
    )


LONG_ON_HOST_1 = """
def _mp_fn(index):
    dump(f"pid{xm.get_ordinal()}", os.getpid())
    xm.rendezvous("started")
    if os.environ["XRT2PJRT_CPU_HOST_INDEX"] == "1":
        time.sleep(120)
"""


@pytest.mark.xla
@pytest.mark.slow
def test_a_host_whose_launcher_is_killed_does_not_leave_the_others_waiting_for_ever(tmp_path):
    """Host 1's launcher gets SIGKILL (no abort posted; its replica dies with it): host 0's
    replica, which returned and waits for the others with no deadline, sees host 1 stop
    counting and fails the run within the rendezvous timeout (it had waited for ever)."""
    script = write_program(tmp_path, LONG_ON_HOST_1)
    port = free_port()
    runs = [
        start_program(script, 1, "fork", env=_host_env(h, "127.0.0.1", port, XRT2PJRT_RENDEZVOUS_TIMEOUT="4"))
        for h in (0, 1)
    ]
    host_1, out_1 = runs[1]
    deadline = time.monotonic() + 120
    while not (out_1 / "pid1.json").exists():
        assert time.monotonic() < deadline, "host 1's replica never started"
        time.sleep(0.2)
    time.sleep(1)
    killed = time.monotonic()
    host_1.kill()
    code, results, output = finish_program(runs[0], deadline=60)
    assert code == 3, output[-3000:]
    assert "CPU host 1 stopped answering" in results["parent"]["message"]
    assert time.monotonic() - killed < 30
    host_1.communicate(timeout=30)
