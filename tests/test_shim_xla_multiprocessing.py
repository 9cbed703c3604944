"""xrt2pjrt.shim.xla_multiprocessing: legacy spawn arguments, run_multiprocess, and the
"runtime already initialised" error that names the call. Real torch_xla 2.9 on CPU for
the spawns (in subprocesses); torch_xla's spawn replaced by a recorder where a TPU's
device count is mocked."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from tests.test_shim_rendezvous import free_port

pytestmark = pytest.mark.xla

SPAWNING_PROGRAM = '''
import json, sys, warnings
import xrt2pjrt.shim.xla_model as xm
import xrt2pjrt.shim.xla_multiprocessing as xmp

warnings.simplefilter("error", DeprecationWarning)


def report(index, tag):
    print(json.dumps([tag, index, xm.get_ordinal(), xm.xrt_world_size(), str(xm.xla_device())]), flush=True)


def square(x, offset=0):
    return x * x + offset + xm.get_ordinal()


if __name__ == "__main__":
    print(json.dumps(["results", {str(k): v for k, v in xmp.run_multiprocess(square, 3, offset=1).items()}]))
    context = xmp.spawn(report, args=("spawned",), nprocs=None, join=False, daemon=True, start_method="spawn")
    print(json.dumps(["joined", context.join()]))  # XRT's join=False: a context to join
    xmp.spawn(report, args=("in-process",), nprocs=1)  # last: it starts the runtime here
'''


def run_program(tmp_path, text: str, devices: int = 1, **extra_env: str) -> subprocess.CompletedProcess:
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(text))
    env = {**os.environ, "PJRT_DEVICE": "CPU", "CPU_NUM_DEVICES": str(devices), **extra_env}
    for name in ("XRT2PJRT_CPU_REPLICAS", "MASTER_ADDR", "XRT2PJRT_RENDEZVOUS_TRANSPORT"):
        env.pop(name, None)
    return subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)


def test_spawn_and_run_multiprocess_on_one_cpu_replica(tmp_path):
    import json

    done = run_program(tmp_path, SPAWNING_PROGRAM)
    assert done.returncode == 0, done.stderr[-4000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("[")]
    assert lines.index(["spawned", 0, 0, 1, "xla:0"]) < lines.index(["joined", True])
    assert ["in-process", 0, 0, 1, "xla:0"] in lines
    assert ["results", {"0": 10}] in lines  # {ordinal: fn(*args, **kwargs)}


THREADED_PROGRAM = '''
import json, time
import xrt2pjrt.shim.xla_model as xm
import xrt2pjrt.shim.xla_multiprocessing as xmp


def replica():
    device = xm.xla_device()
    ordinal = xm.get_ordinal()
    if ordinal == 1:
        time.sleep(1)
    arrived = time.time()
    payloads = [p.decode() for p in xm.rendezvous("threads", f"thread {ordinal}".encode())]
    left = time.time()
    mean = xm.mesh_reduce("mean", float(ordinal), lambda xs: sum(xs) / len(xs))
    return [ordinal, xm.get_local_ordinal(), xm.xrt_world_size(), str(device), xm.is_master_ordinal(),
            payloads, mean, arrived, left]


if __name__ == "__main__":
    print(json.dumps(xmp.run_multiprocess(replica)))  # the store's port: XRT2PJRT_RENDEZVOUS_PORT
'''


def test_two_devices_in_one_process_are_two_thread_replicas_that_meet(tmp_path):
    """v2/v3 shape (two devices per process, one thread each) with real PJRT ordinals. The
    threads never run an XLA collective (two CPU replicas cannot); they meet on the host."""
    import json

    done = run_program(tmp_path, THREADED_PROGRAM, devices=2, XRT2PJRT_RENDEZVOUS_PORT=str(free_port()))
    assert done.returncode == 0, done.stderr[-4000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    first, second = results["0"], results["1"]
    assert first[:5] == [0, 0, 2, "xla:0", True] and second[:5] == [1, 1, 2, "xla:1", False]
    assert first[5] == second[5] == ["thread 0", "thread 1"]
    assert first[6] == second[6] == 0.5
    assert first[8] >= second[7], "thread 0 left the rendezvous before thread 1 arrived"


@pytest.mark.parametrize(
    "touch,named",
    [
        ("device = xm.xla_device()", "xm.xla_device() at {script}:5"),
        ("device = torch_xla.device()", "a call outside the shim"),
        ("xmp.spawn(print, nprocs=1)", "xmp.spawn(nprocs=1), which runs fn in this process, at {script}:5"),
    ],
)
def test_spawn_after_the_runtime_started_names_the_call(tmp_path, touch, named):
    program = f"""\
        import torch_xla
        import xrt2pjrt.shim.xla_model as xm
        import xrt2pjrt.shim.xla_multiprocessing as xmp
        world = xm.xrt_world_size()  # XRT-era module-level call: must not start the runtime
        {touch}
        for start in (lambda: xmp.spawn(print, nprocs=None), lambda: xmp.run_multiprocess(print),
                      lambda: xmp.spawn(print, nprocs=2, start_method="fork")):  # CPU replica mode
            try:
                start()
            except xmp.RuntimeAlreadyStarted as error:
                print(error)
        """
    done = run_program(tmp_path, program)
    assert done.returncode == 0, done.stderr[-4000:]
    said = named.format(script=tmp_path / "program.py")
    spawn_error, run_error, fork_error = [line for line in done.stdout.splitlines() if "cannot start replicas" in line]
    assert spawn_error.startswith("xmp.spawn cannot start replicas") and said in spawn_error
    assert run_error.startswith("run_multiprocess cannot start replicas") and said in run_error
    assert fork_error == spawn_error
    assert "inside the function passed to spawn" in spawn_error


# --- nprocs mapping on a mocked TPU host (torch_xla's spawn replaced by a recorder) ------


@pytest.fixture
def tpu_host(monkeypatch):
    """A TPU host with 4 chips of ``cores`` devices each; returns the spawn calls made."""
    from torch_xla._internal import tpu

    import xrt2pjrt.shim.xla_multiprocessing as xmp

    def host(cores: int):
        monkeypatch.setenv("PJRT_DEVICE", "TPU")
        monkeypatch.delenv("TPU_PROCESS_BOUNDS", raising=False)
        monkeypatch.setattr(tpu, "num_available_chips", lambda: 4)
        monkeypatch.setattr(tpu, "num_logical_cores_per_chip", lambda: cores)
        calls = []
        monkeypatch.setattr(xmp._pjrt, "spawn", lambda fn, nprocs, start_method, args: calls.append((nprocs, start_method, args)))
        return calls

    return host


@pytest.mark.parametrize(
    "cores,nprocs,passed",
    [
        (1, None, None),  # v4: all 4 devices
        (1, 4, None),  # exactly the local devices
        (2, 8, None),  # v3-8's classic nprocs=8
        (1, 1, 1),  # one device
    ],
)
def test_legacy_nprocs_become_what_torch_xla_accepts(tpu_host, cores, nprocs, passed, recwarn):
    import xrt2pjrt.shim.xla_multiprocessing as xmp

    calls = tpu_host(cores)
    xmp.spawn(print, args=("a",), nprocs=nprocs, start_method="fork")
    assert calls == [(passed, "fork", ("a",))]
    assert not [w for w in recwarn if issubclass(w.category, xmp.ShimNote)]


def test_more_processes_than_devices_runs_all_with_one_note(tpu_host):
    import xrt2pjrt.shim.xla_multiprocessing as xmp

    calls = tpu_host(1)
    with pytest.warns(xmp.ShimNote, match="nprocs=8 but this host has 4 XLA devices: running on all 4"):
        xmp.spawn(print, nprocs=8)
    assert calls == [(None, "spawn", ())]


def test_a_tpu_subset_is_refused_with_what_to_set_instead(tpu_host):
    import xrt2pjrt.shim.xla_multiprocessing as xmp

    calls = tpu_host(2)
    with pytest.raises(ValueError, match="fewer than the 8 TPU devices.*TPU_PROCESS_BOUNDS=1,1,1 TPU_VISIBLE_CHIPS=0"):
        xmp.spawn(print, nprocs=4)
    assert calls == []


def test_tpu_process_bounds_shrink_the_local_device_count(tpu_host, monkeypatch):
    import xrt2pjrt.shim.xla_multiprocessing as xmp

    tpu_host(1)
    monkeypatch.setenv("TPU_PROCESS_BOUNDS", "1,2,1")
    assert xmp.local_device_count() == 2


def test_a_cpu_subset_limits_cpu_num_devices(monkeypatch):
    import xrt2pjrt.shim.xla_multiprocessing as xmp

    monkeypatch.setenv("PJRT_DEVICE", "CPU")
    monkeypatch.setenv("CPU_NUM_DEVICES", "4")
    monkeypatch.setattr(xmp.cpu_replicas, "requested", lambda nprocs: False)  # upstream CPU path
    calls = []
    monkeypatch.setattr(xmp._pjrt, "spawn", lambda fn, nprocs, start_method, args: calls.append(nprocs))
    xmp.spawn(print, nprocs=2)
    assert calls == [None] and os.environ["CPU_NUM_DEVICES"] == "2"


def test_cpu_multi_replica_requests_go_to_the_cpu_replica_mode(monkeypatch):
    import xrt2pjrt.shim.xla_multiprocessing as xmp

    monkeypatch.setenv("PJRT_DEVICE", "CPU")
    handed = []
    monkeypatch.setattr(xmp.cpu_replicas, "spawn", lambda *a: handed.append(a) or "replica results")
    assert xmp.spawn(print, ("x",), 3, start_method="fork") == "replica results"
    assert handed == [(print, ("x",), 3, "fork")]


def test_join_false_returns_at_once_and_join_raises_what_the_replicas_raised(monkeypatch):
    import threading

    import xrt2pjrt.shim.xla_multiprocessing as xmp

    monkeypatch.setenv("PJRT_DEVICE", "CPU")
    release = threading.Event()

    def replicas(fn, args, nprocs, start_method):
        release.wait(10)
        raise xmp.cpu_replicas.ReplicaFailed("CPU replica 1 exited with code 7", 1, 7)

    monkeypatch.setattr(xmp.cpu_replicas, "spawn", replicas)
    context = xmp.spawn(print, nprocs=2, join=False)
    assert context.join(timeout=0.1) is False  # still running
    release.set()
    with pytest.raises(xmp.cpu_replicas.ReplicaFailed, match="exited with code 7"):
        context.join(timeout=10)


def test_model_wrapper_and_serial_executor_pass_through():
    from torch_xla.distributed import xla_multiprocessing as upstream

    import xrt2pjrt.shim.xla_multiprocessing as xmp

    assert xmp.MpModelWrapper is upstream.MpModelWrapper
    assert xmp.MpSerialExecutor().run(lambda: 42) == 42
