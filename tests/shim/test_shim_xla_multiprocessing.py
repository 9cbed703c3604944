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

from tests.shim.test_shim_xla_model_rendezvous import free_port

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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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
        monkeypatch.setattr(
            xmp._pjrt, "spawn", lambda fn, nprocs, start_method, args: calls.append((nprocs, start_method, args))
        )
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
    xmp.spawn(print, args=("a",), nprocs=nprocs, start_method="spawn")  # fork hands args over by key
    assert calls == [(passed, "spawn", ("a",))]
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
    monkeypatch.setattr(xmp.cpu_placement, "requested", lambda nprocs: False)  # upstream CPU path
    calls = []
    monkeypatch.setattr(xmp._pjrt, "spawn", lambda fn, nprocs, start_method, args: calls.append(nprocs))
    xmp.spawn(print, nprocs=2)
    assert calls == [None] and os.environ["CPU_NUM_DEVICES"] == "2"


def test_cpu_multi_replica_requests_go_to_the_cpu_replica_mode(monkeypatch):
    import xrt2pjrt.shim.xla_multiprocessing as xmp

    monkeypatch.setenv("PJRT_DEVICE", "CPU")
    handed = []
    monkeypatch.setattr(xmp.cpu_supervisor, "spawn", lambda *a: handed.append(a) or "replica results")
    assert xmp.spawn(print, ("x",), 3, start_method="fork") == "replica results"
    assert handed == [(print, ("x",), 3, "fork")]


def test_join_false_returns_at_once_and_join_raises_what_the_replicas_raised(monkeypatch):
    import threading

    import xrt2pjrt.shim.xla_multiprocessing as xmp

    monkeypatch.setenv("PJRT_DEVICE", "CPU")
    release = threading.Event()

    def replicas(fn, args, nprocs, start_method):
        release.wait(10)
        raise xmp.cpu_supervisor.ReplicaFailed("CPU replica 1 exited with code 7", 1, 7)

    monkeypatch.setattr(xmp.cpu_supervisor, "spawn", replicas)
    context = xmp.spawn(print, nprocs=2, join=False)
    assert context.join(timeout=0.1) is False  # still running
    release.set()
    with pytest.raises(xmp.cpu_supervisor.ReplicaFailed, match="exited with code 7"):
        context.join(timeout=10)


def test_model_wrapper_and_serial_executor_pass_through():
    from torch_xla.distributed import xla_multiprocessing as upstream

    import xrt2pjrt.shim.xla_multiprocessing as xmp

    assert xmp.MpModelWrapper is upstream.MpModelWrapper
    assert xmp.MpSerialExecutor().run(lambda: 42) == 42


# --- fn and args: inherited under fork, pickled otherwise (as XRT's spawn did) ----------

CLOSURE_PROGRAM = '''
import json, os, sys, threading
import torch_xla.distributed.xla_multiprocessing as upstream_xmp
import xrt2pjrt.shim.xla_model as xm
import xrt2pjrt.shim.xla_multiprocessing as xmp

PARENT = os.getpid()


def train_all(world_size):
    lock = threading.Lock()  # pickle refuses a lock

    def _mp_fn(index, transform, lock):  # nested, as XRT-era scripts wrote it
        with lock:  # one write per line: the workers share the pipe
            os.write(1, (json.dumps(["replica", index, world_size(), transform(index), os.getpid() != PARENT,
                                     os.environ.get("PJRT_LOCAL_PROCESS_RANK")]) + "\\n").encode())

    xmp.spawn(_mp_fn, args=(lambda i: i * 10 + 1, lock), nprocs=None, start_method="fork")
    return _mp_fn


if __name__ == "__main__":
    if sys.argv[1:] == ["simulated-host"]:
        # SIMULATION of a TPU host's several processes: torch_xla's device-plugin hook stands in
        # for the chip count, so its run_multiprocess forks 3 pool workers (each a CPU world of one).
        from torch_xla.experimental import plugins

        class ThreeChips(plugins.DevicePlugin):
            def physical_chip_count(self):
                return 3

            def configure_multiprocess(self, local_rank, local_world_size):
                pass

        plugins.using_dynamic_plugins = lambda: True
        plugins.default = lambda: ThreeChips()
        from torch_xla._internal import pjrt  # each worker is ordinal 0 of its own world: no duplicate check

        pjrt._merge_replica_results = lambda results: dict(enumerate(results))
        fn = train_all(lambda: None)  # the shim rightly refuses an ordinal in a world of one per process
    else:
        fn = train_all(xm.xrt_world_size)
        results = xmp.run_multiprocess(lambda a, b: [a, b(a), os.getpid() != PARENT], 5, b=lambda a: a + 1,
                                       start_method="fork")
        print(json.dumps(["results", {str(k): v for k, v in results.items()}]), flush=True)
    try:  # torch_xla's own spawn, same closure: the pool it uses pickles even with fork
        upstream_xmp.spawn(fn, args=(str, threading.Lock()), start_method="fork")
    except Exception as error:
        print(json.dumps(["upstream", type(error).__name__, str(error)]), flush=True)
'''


def _lines(done: subprocess.CompletedProcess) -> list:
    import json

    assert done.returncode == 0, done.stderr[-4000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("[")]


@pytest.mark.slow
def test_under_fork_closures_lambdas_and_locks_reach_the_replicas_through_torch_xlas_pool(tmp_path):
    """The shim's TPU path for real on one CPU device: torch_xla 2.9's run_multiprocess forks
    a ProcessPoolExecutor worker, which gets a nested fn, a lambda and a lock as XRT's fork did."""
    lines = _lines(run_program(tmp_path, CLOSURE_PROGRAM))
    assert ["replica", 0, 1, 1, True, "0"] in lines  # in the forked worker, not here
    assert ["results", {"0": [5, 6, True]}] in lines
    upstream = [line for line in lines if line[0] == "upstream"]
    assert upstream == [["upstream", "AttributeError", "Can't pickle local object 'train_all.<locals>._mp_fn'"]]


@pytest.mark.slow
def test_under_fork_every_worker_of_a_simulated_tpu_host_gets_the_closure(tmp_path):
    """SIMULATION: torch_xla's pool forks 3 workers (a TPU host's chips, stood in by its
    device-plugin hook); the values registered before the first submit reach each of them."""
    script = tmp_path / "program.py"
    script.write_text(CLOSURE_PROGRAM)
    env = {**os.environ, "PJRT_DEVICE": "CPU", "CPU_NUM_DEVICES": "1"}
    for name in ("XRT2PJRT_CPU_REPLICAS", "MASTER_ADDR", "XRT2PJRT_RENDEZVOUS_TRANSPORT"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, str(script), "simulated-host"], env=env, capture_output=True, text=True, timeout=600
    )
    lines = _lines(done)
    replicas = sorted(line[-1] for line in lines if line[0] == "replica")
    assert replicas == ["0", "1", "2"]  # PJRT_LOCAL_PROCESS_RANK of each forked worker
    assert all(line[3:5] == [1, True] for line in lines if line[0] == "replica")  # one world each: ordinal 0
    assert [line[0] for line in lines if line[0] == "upstream"] == ["upstream"]


EXIT_PROGRAM = '''
import sys
import xrt2pjrt.shim.xla_multiprocessing as xmp
from torch_xla._internal import pjrt
from torch_xla.experimental import plugins


class ThreeChips(plugins.DevicePlugin):  # SIMULATION: a TPU host of 3 chips, each a CPU world of one
    def physical_chip_count(self):
        return 3

    def configure_multiprocess(self, local_rank, local_world_size):
        pass


def _mp_fn(index, status):
    sys.exit(status)


if __name__ == "__main__":
    plugins.using_dynamic_plugins = lambda: True
    plugins.default = lambda: ThreeChips()
    pjrt._merge_replica_results = lambda results: dict(enumerate(results))  # each is ordinal 0
    try:
        xmp.spawn(_mp_fn, args=(int(sys.argv[1]),), start_method="fork")
    except xmp.ReplicaExited as error:
        print("failed:", error, flush=True)
    print("the launcher goes on", flush=True)
'''


@pytest.mark.slow
@pytest.mark.parametrize("status", [0, 3])
def test_sys_exit_in_a_replica_ends_that_replica_as_under_xrt_not_the_launcher(tmp_path, status):
    """SIMULATION of a TPU host's 3 processes (torch_xla's own pool, its chip count stood in
    by a device plugin). torch_xla's spawn re-raises a replica's SystemExit in the launcher,
    which exits there (status 0 for sys.exit(0), the code after the spawn skipped)."""
    script = tmp_path / "program.py"
    script.write_text(EXIT_PROGRAM)
    env = {**os.environ, "PJRT_DEVICE": "CPU", "CPU_NUM_DEVICES": "1"}
    for name in ("XRT2PJRT_CPU_REPLICAS", "MASTER_ADDR", "XRT2PJRT_RENDEZVOUS_TRANSPORT"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, str(script), str(status)], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "the launcher goes on" in done.stdout
    assert ("failed: replica 0 called sys.exit(3)" in done.stdout) == (status == 3)


SPAWN_METHOD_PROGRAM = '''
import json, threading
import xrt2pjrt.shim.xla_multiprocessing as xmp
from xrt2pjrt.shim.spawn_targets import NotPicklable


def report(index, *args, **kwargs):
    print("replica ran", flush=True)


def main():
    def nested(index):
        pass

    attempts = {
        "nested fn": lambda: xmp.spawn(nested, start_method="spawn"),
        "lambda arg": lambda: xmp.spawn(report, args=(1, lambda: 2), start_method="spawn"),
        "lock kwarg": lambda: xmp.run_multiprocess(report, 1, lock=threading.Lock(), start_method="forkserver"),
        "CPU replicas": lambda: xmp.spawn(report, args=(lambda: 2,), nprocs=2, start_method="spawn"),
    }
    for name, attempt in attempts.items():
        try:
            attempt()
        except NotPicklable as error:
            print(json.dumps([name, str(error)]), flush=True)


if __name__ == "__main__":
    main()
'''


@pytest.mark.slow
def test_under_spawn_an_unpicklable_fn_or_arg_fails_before_any_replica_starts(tmp_path):
    """XRT's spawn pickled fn and args for 'spawn' and 'forkserver' and raised in the parent:
    so does the shim, naming the value, on torch_xla's path and on the CPU replica mode's."""
    done = run_program(tmp_path, SPAWN_METHOD_PROGRAM)
    lines = dict(_lines(done))
    assert "replica ran" not in done.stdout
    assert lines["nested fn"].startswith(
        "xmp.spawn(start_method='spawn') sends fn and args to each replica by "
        "pickle, as XRT's spawn did, and fn cannot be pickled: Can't pickle "
        "local object 'main.<locals>.nested'."
    )
    assert "or use start_method='fork'" in lines["nested fn"]
    assert (
        "and args[1] cannot be pickled: Can't pickle local object 'main.<locals>.<lambda>.<locals>.<lambda>'"
        in lines["lambda arg"]
    )
    assert lines["lock kwarg"].startswith("run_multiprocess(start_method='forkserver') sends")
    assert "kwargs['lock'] cannot be pickled: cannot pickle '_thread.lock' object" in lines["lock kwarg"]
    assert "args[0] cannot be pickled" in lines["CPU replicas"]


def test_the_pickle_check_passes_what_multiprocessing_pickles_without_copying_it():
    """Tensors and sockets pickle by handle in multiprocessing: the check accepts them and
    serialises no tensor data (a 1 GiB tensor, expanded from one element, costs nothing)."""
    import socket

    import torch

    from xrt2pjrt.shim import spawn_targets

    huge = torch.zeros(1).expand(2**28)  # a view: serialising it would write 1 GiB
    with socket.socket() as sock:
        spawn_targets.require_picklable(
            print, (huge, sock, {"nested": [torch.nn.Parameter(torch.ones(2))]}), {"n": 3}, why="test"
        )
    with pytest.raises(spawn_targets.NotPicklable, match=r"^spawning, and args\[1\] cannot be pickled"):
        spawn_targets.require_picklable(print, (1, threading_lock()), why="spawning")


def threading_lock():
    import threading

    return threading.Lock()


def test_a_registered_target_outside_the_processes_forked_for_it_says_so():
    import pickle

    from xrt2pjrt.shim import spawn_targets

    echo = lambda *a, **k: (a, k)  # noqa: E731
    with spawn_targets.handed_over(echo, (2,), {"k": 3}, start_method="fork") as (target, args, kwargs):
        assert (args, kwargs) == ((), {})
        copy = pickle.loads(pickle.dumps(target))  # what a pool worker forked now receives
        assert copy(1) == ((1, 2), {"k": 3})
    with pytest.raises(RuntimeError, match="reaches only processes forked while the spawn that registered it runs"):
        copy(1)
