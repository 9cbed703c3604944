"""``xrt2pjrt run``: real commands in real processes (torch_xla 2.9 on CPU), and its options.

The one-world behaviour inside the replicas is tests/shim/cpu/test_cpu_world.py (a run of 4
replicas); here: how run starts a script (once, or once per replica), what the script sees
(its arguments, torchrun's variables), exit codes and failures, several hosts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from xrt2pjrt.runtime import doctor
from xrt2pjrt.runtime import run as run_command
from tests.shim.test_shim_xla_model_rendezvous import free_port

ROOT = Path(__file__).resolve().parents[2]

TORCHRUN_STYLE = '''
import json, os, sys
import torch
import torch.distributed as dist
import torch_xla
import torch_xla.distributed.xla_backend  # noqa: F401
import torch_xla.runtime as xr
import neighbour  # a module beside the script, as `python script.py` finds it

OUT = sys.argv[1]
dist.init_process_group("xla", init_method="xla://")
rank = xr.global_ordinal()
if os.environ.get("FAULT") == "exit" and rank == 1:
    sys.exit(4)
summed = torch.tensor([rank + 1.0], device=torch_xla.device())
dist.all_reduce(summed)
with open(os.path.join(OUT, f"{rank}.json"), "w") as handle:
    json.dump({"name": __name__, "argv": sys.argv[2:], "dist": [dist.get_rank(), dist.get_world_size()],
               "torchrun": [os.environ[k] for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE")],
               "torchelastic": dist.is_torchelastic_launched(),
               "all_reduce": summed.cpu().tolist(), "world_size": xr.world_size(), "neighbour": neighbour.NAME},
              handle)
'''

SPAWNING = '''
import json, os, sys
import torch
import torch_xla
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr
import xrt2pjrt.shim.xla_multiprocessing as shim_xmp


def where(offset):
    return [offset, xr.global_ordinal(), xr.world_size(), xr.host_index()]


def report(index, out):
    with open(os.path.join(out, f"{index}.json"), "w") as handle:
        json.dump(where(0), handle)


def report_as(index, out, transform):
    report(transform(index), out)


def nested_mp_fn(spawn, out, **how):  # XRT-era scripts nested their _mp_fn in main()
    def _mp_fn(index):
        report(index, out)

    spawn(_mp_fn, **how)


def die_on_1(index):
    import signal
    import torch_xla.core.xla_model as xm

    if index == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    xm.rendezvous("never complete")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "run_multiprocess":
        print(json.dumps(shim_xmp.run_multiprocess(where, 7, start_method="fork")))
    elif mode == "launch":
        torch_xla.launch(report, args=(sys.argv[2],), start_method="fork")
    elif mode == "ask before, use after":
        # what a launching process may do: ask what it runs on (no runtime started), spawn,
        # then use the device itself once its replicas are done
        asked = [xr.device_type(), xr.is_spmd(), xr.host_index(), xr.local_process_count()]
        torch_xla.launch(report, args=(sys.argv[2],), start_method="fork")
        print(json.dumps({"asked": asked, "after": torch.ones(3, device=torch_xla.device()).sum().item()}))
    elif mode in ("xmp.spawn(nprocs=1)", "shim xmp.spawn(nprocs=1)", "launch(debug_single_process=True)"):
        if mode == "launch(debug_single_process=True)":
            torch_xla.launch(report, args=(sys.argv[2],), debug_single_process=True)
        else:
            spawn = shim_xmp.spawn if mode.startswith("shim") else xmp.spawn
            spawn(report, args=(sys.argv[2],), nprocs=1)
    elif mode.startswith("shim xmp.spawn(nprocs="):  # an XRT-era count: 8 cores of a v3-8
        shim_xmp.spawn(report, args=(sys.argv[2],), nprocs=int(mode.split("=")[1].rstrip(")")), start_method="fork")
    elif mode == "xmp.spawn(nested fn)":
        nested_mp_fn(xmp.spawn, sys.argv[2], start_method="fork")
    elif mode == "shim xmp.spawn(nested fn)":
        nested_mp_fn(shim_xmp.spawn, sys.argv[2], start_method="fork")
    elif mode == "launch(lambda in args)":
        torch_xla.launch(report_as, args=(sys.argv[2], lambda index: index), start_method="fork")
    elif mode == "kill":
        torch_xla.launch(die_on_1, start_method="fork")
    sys.exit(int(sys.argv[-1]))
'''


def _env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("XRT_", "XRT2PJRT_", "CPU_NUM_DEVICES", "PJRT_", "MASTER_"))
    }
    env.update(PYTHONPATH=str(ROOT), XRT2PJRT_RENDEZVOUS_TIMEOUT="120", **extra)
    return env


def _script(tmp_path: Path, text: str) -> Path:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(text))
    (tmp_path / "neighbour.py").write_text("NAME = 'beside the script'\n")
    return script


def _run(*words: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "run", *words],
        env=env or _env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _results(folder: Path) -> dict[int, dict]:
    return {int(path.stem): json.loads(path.read_text()) for path in folder.glob("*.json")}


@pytest.mark.slow
@pytest.mark.xla
def test_per_process_runs_the_script_once_per_replica_as_torchrun_would(tmp_path):
    script = _script(tmp_path, TORCHRUN_STYLE)
    # words after SCRIPT are the script's, even those that look like run's own options
    done = _run("--nprocs", "2", "--per-process", str(script), str(tmp_path), "--nprocs", "9", "--help")
    assert done.returncode == 0, done.stderr[-4000:]
    seen = _results(tmp_path)
    assert sorted(seen) == [0, 1]
    for i, replica in seen.items():
        assert replica == {
            "name": "__main__",
            "argv": ["--nprocs", "9", "--help"],
            "dist": [i, 2],
            "torchrun": [str(i), str(i), "2", "2"],
            "torchelastic": True,
            "all_reduce": [3.0],
            "world_size": 2,
            "neighbour": "beside the script",
        }


@pytest.mark.slow
@pytest.mark.xla
def test_per_process_a_failed_replica_ends_the_run_with_its_exit_code(tmp_path):
    script = _script(tmp_path, TORCHRUN_STYLE)
    done = _run("--nprocs", "2", "--per-process", str(script), str(tmp_path), env=_env(FAULT="exit"))
    assert done.returncode == 4, done.stderr[-4000:]
    assert "CPU replica 1" in done.stderr and "exited with code 4" in done.stderr
    assert _results(tmp_path) == {}  # replica 0, waiting in all_reduce for replica 1, was ended


@pytest.mark.slow
@pytest.mark.xla
def test_the_shims_run_multiprocess_returns_every_replicas_result_and_the_scripts_exit_code_is_runs(tmp_path):
    done = _run("--nprocs", "2", str(_script(tmp_path, SPAWNING)), "run_multiprocess", "5")
    assert done.returncode == 5, done.stderr[-4000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {str(i): [7, i, 2, 0] for i in range(2)}


@pytest.mark.slow
@pytest.mark.xla
def test_a_dead_replica_ends_the_run_with_an_error_naming_it(tmp_path):
    done = _run("--nprocs", "2", str(_script(tmp_path, SPAWNING)), "kill", "0")
    assert done.returncode == 1  # the script's uncaught ReplicaFailed, as in the shim's mode
    assert "ReplicaFailed: CPU replica 1" in done.stderr and "killed by SIGKILL" in done.stderr


@pytest.mark.slow
@pytest.mark.xla
def test_a_script_that_never_starts_replicas_is_not_passed_off_as_n_replicas(tmp_path):
    done = _run("--nprocs", "4", str(_script(tmp_path, SPAWNING)), "exit", "0")
    assert done.returncode == run_command.EXIT_NEVER_SPAWNED
    assert "ran as one process, not 4 replicas" in done.stderr and "--per-process" in done.stderr


NEVER_SPAWNS = '''
import argparse, os, sys
import torch
import torch.distributed as dist
import torch_xla
import torch_xla.distributed.xla_backend  # noqa: F401
import torch_xla.runtime as xr
import xrt2pjrt.shim.xla_model as shim_xm

parser = argparse.ArgumentParser()
parser.add_argument("first_call")
parser.add_argument("out")
flags = parser.parse_args()
print("on", xr.device_type(), flush=True)  # asking what it runs on starts nothing
if flags.first_call == "torch_xla.device":
    device = torch_xla.device()
elif flags.first_call == "xr.world_size":
    world = xr.world_size()
elif flags.first_call == "init_process_group":
    dist.init_process_group("xla", init_method="xla://")
elif flags.first_call == "shim xm.xla_device":
    world, device = shim_xm.xrt_world_size(), shim_xm.xla_device()
with open(os.path.join(flags.out, "trained"), "w") as handle:  # a whole training run, as one process
    handle.write("all epochs")
'''


@pytest.mark.slow
@pytest.mark.xla
@pytest.mark.parametrize(
    "first_call,line",
    [
        ("torch_xla.device", "device = torch_xla.device()"),
        ("xr.world_size", "world = xr.world_size()"),
        ("init_process_group", 'dist.init_process_group("xla", init_method="xla://")'),
        ("shim xm.xla_device", "world, device = shim_xm.xrt_world_size(), shim_xm.xla_device()"),
    ],
)
def test_a_script_that_never_spawns_stops_at_its_first_device_call_not_after_training(tmp_path, first_call, line):
    script = _script(tmp_path, NEVER_SPAWNS)
    done = _run("--nprocs", "4", str(script), first_call, str(tmp_path))
    assert done.returncode == run_command.EXIT_NEVER_SPAWNED, done.stderr[-3000:]
    assert not (tmp_path / "trained").exists()
    number = [text.strip() for text in NEVER_SPAWNS.splitlines()].index(line) + 1
    assert f"{script}:{number}: {line}" in done.stderr
    assert "started torch_xla's runtime" in done.stderr and "--per-process" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
@pytest.mark.xla
def test_at_one_replica_a_script_that_never_spawns_runs_to_its_end(tmp_path):
    done = _run("--nprocs", "1", str(_script(tmp_path, NEVER_SPAWNS)), "torch_xla.device", str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "trained").read_text() == "all epochs"


@pytest.mark.slow
@pytest.mark.xla
@pytest.mark.parametrize(
    "mode", ["xmp.spawn(nprocs=1)", "shim xmp.spawn(nprocs=1)", "launch(debug_single_process=True)"]
)
def test_a_spawn_of_one_replica_stops_at_the_spawn_saying_so(tmp_path, mode):
    done = _run("--nprocs", "4", str(_script(tmp_path, SPAWNING)), mode, str(tmp_path), "0")
    assert done.returncode == run_command.EXIT_NEVER_SPAWNED, done.stderr[-3000:]
    assert _results(tmp_path) == {}  # the function did not run as one replica
    assert "spawns with nprocs=1" in done.stderr and "asked for 4 replicas" in done.stderr
    assert "--per-process" not in done.stderr  # the script does spawn


@pytest.mark.slow
@pytest.mark.xla
@pytest.mark.parametrize(
    "nprocs, replicas, note",
    [
        (8, 2, "nprocs=8 but XRT2PJRT_CPU_REPLICAS gives this host 2 CPU replicas: running all 2"),
        (3, 3, "nprocs=3 runs 3 of the 4 CPU replicas"),
        (4, 4, None),
    ],
)
def test_the_shims_spawn_of_a_legacy_count_runs_the_replicas_run_asked_for_as_a_tpu_host_runs_its_devices(
    tmp_path, nprocs, replicas, note
):
    asked = 2 if nprocs == 8 else 4
    done = _run(
        "--nprocs", str(asked), str(_script(tmp_path, SPAWNING)), f"shim xmp.spawn(nprocs={nprocs})", str(tmp_path), "0"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = _results(tmp_path)
    assert sorted(results) == list(range(replicas)) and {r[2] for r in results.values()} == {replicas}
    assert (note in done.stderr) if note else "ShimNote" not in done.stderr


@pytest.mark.slow
@pytest.mark.xla
def test_torch_xlas_spawn_of_a_nested_fn_fails_as_on_a_tpu_naming_it(tmp_path):
    """torch_xla's spawn pickles fn and args even under fork (its ProcessPoolExecutor): run
    fails where a pod would, before any replica starts, rather than run 2 healthy replicas."""
    script = _script(tmp_path, SPAWNING)
    alone = subprocess.run(
        [sys.executable, str(script), "xmp.spawn(nested fn)", str(tmp_path), "0"],
        env=_env(PJRT_DEVICE="CPU"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert alone.returncode != 0 and "Can't pickle local object 'nested_mp_fn.<locals>._mp_fn'" in alone.stderr
    done = _run("--nprocs", "2", str(script), "xmp.spawn(nested fn)", str(tmp_path), "0")
    assert done.returncode == 1, done.stderr[-3000:]
    assert _results(tmp_path) == {}
    assert (
        "torch_xla's spawn (xmp.spawn, torch_xla.launch) sends fn and args to its replica processes by pickle, "
        "even with start_method='fork', as it does on a TPU, and fn cannot be pickled: Can't pickle local "
        "object 'nested_mp_fn.<locals>._mp_fn'"
    ) in done.stderr
    assert "or use the shim's xmp.spawn (xrt2pjrt.shim.xla_multiprocessing) with start_method='fork'" in done.stderr
    done = _run("--nprocs", "2", str(script), "launch(lambda in args)", str(tmp_path), "0")
    assert done.returncode == 1 and _results(tmp_path) == {}
    assert "and args[1] cannot be pickled: Can't pickle <function <lambda>" in done.stderr, done.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.xla
def test_the_shims_spawn_under_fork_hands_a_nested_fn_to_the_replicas(tmp_path):
    done = _run("--nprocs", "2", str(_script(tmp_path, SPAWNING)), "shim xmp.spawn(nested fn)", str(tmp_path), "0")
    assert done.returncode == 0, done.stderr[-3000:]
    assert _results(tmp_path) == {o: [0, o, 2, 0] for o in range(2)}


@pytest.mark.slow
@pytest.mark.xla
def test_a_launching_process_may_ask_about_the_device_before_its_replicas_and_use_it_after(tmp_path):
    done = _run("--nprocs", "2", str(_script(tmp_path, SPAWNING)), "ask before, use after", str(tmp_path), "0")
    assert done.returncode == 0, done.stderr[-3000:]
    assert _results(tmp_path) == {o: [0, o, 2, 0] for o in range(2)}
    assert json.loads(done.stdout.splitlines()[-1]) == {"asked": ["CPU", False, 0, 1], "after": 3.0}


def test_without_torch_xla_run_says_so(tmp_path, monkeypatch):
    script = _script(tmp_path, "print('never')")
    monkeypatch.setattr(run_command.importlib.util, "find_spec", lambda name, *rest: None)
    monkeypatch.setattr(doctor, "installed_versions", lambda: {"torch": "2.9.0", "torch_xla": None, "libtpu": None})
    with pytest.raises(run_command.RunError) as said:
        run_command.main(str(script), [], 2)
    # it said "pip install 'xrt2pjrt[xla]'", which is not on PyPI
    assert str(said.value) == (
        "torch_xla is not installed: run needs it (pip install torch==2.9.0 torch_xla==2.9.0; "
        "or, in the xrt2pjrt checkout, pip install -e '.[xla]')"
    )


def test_a_missing_script_is_an_error_before_anything_starts(tmp_path):
    done = _run("--nprocs", "2", str(tmp_path / "absent.py"))
    assert done.returncode == 2 and "absent.py: no such file" in done.stderr


@pytest.mark.parametrize(
    "master,address,port",
    [
        ("10.0.0.2", "10.0.0.2", None),
        ("10.0.0.2:29500", "10.0.0.2", "29500"),
        ("host-0:1", "host-0", "1"),
        ("[fd00::1]:29500", "fd00::1", "29500"),
        ("[fd00::1]", "fd00::1", None),
        ("fd00::1", "fd00::1", None),
    ],
)
def test_master_sets_master_addr_and_port(master, address, port):
    environ: dict[str, str] = {}
    run_command.configure(2, hosts=2, host_index=1, master=master, environ=environ)
    assert environ["MASTER_ADDR"] == address and environ.get("MASTER_PORT") == port
    assert (environ["PJRT_DEVICE"], environ["XRT2PJRT_CPU_REPLICAS"]) == ("CPU", "2")
    assert (environ["XRT2PJRT_CPU_HOSTS"], environ["XRT2PJRT_CPU_HOST_INDEX"]) == ("2", "1")


@pytest.mark.parametrize("master", ["host:port", ":29500", "[fd00::1]:x"])
def test_a_master_that_is_not_addr_port_is_an_error(master):
    with pytest.raises(run_command.RunError, match="not ADDR"):
        run_command.configure(2, master=master, environ={})


@pytest.mark.parametrize(
    "hosts,index,environ", [(2, 2, {}), (None, 1, {}), (None, None, {"XRT2PJRT_CPU_HOSTS": "two"})]
)
def test_a_host_index_outside_the_hosts_is_an_error(hosts, index, environ):
    with pytest.raises(run_command.RunError, match="is not one of"):
        run_command.configure(2, hosts=hosts, host_index=index, environ=environ)


def test_options_leave_the_existing_variables_alone_when_not_given():
    environ = {"XRT2PJRT_CPU_HOSTS": "3", "XRT2PJRT_CPU_HOST_INDEX": "2", "MASTER_ADDR": "10.1.1.1"}
    run_command.configure(2, environ=environ)
    assert environ["XRT2PJRT_CPU_HOSTS"] == "3" and environ["MASTER_ADDR"] == "10.1.1.1"


@pytest.mark.xla
@pytest.mark.slow
def test_two_hosts_join_through_run_options(tmp_path):
    script = _script(tmp_path, SPAWNING)
    port = free_port()
    secret = uuid.uuid4().hex  # several hosts: the job's store lets in only its holders
    runs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "xrt2pjrt",
                "run",
                "--nprocs",
                "2",
                "--hosts",
                "2",
                "--host-index",
                str(h),
                "--master",
                f"127.0.0.1:{port}",
                str(script),
                "launch",
                str(tmp_path),
                "0",
            ],
            env=_env(XRT2PJRT_JOB_SECRET=secret),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for h in (1, 0)
    ]
    outputs = [process.communicate(timeout=300)[0] for process in runs]
    assert all(process.returncode == 0 for process in runs), "\n---\n".join(o[-3000:] for o in outputs)
    # host h runs ordinals 2h and 2h+1, as torch_xla numbers a pod's processes
    assert _results(tmp_path) == {o: [0, o, 4, o // 2] for o in range(4)}
