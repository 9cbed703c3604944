"""`xrt2pjrt launch` against the stand-in gcloud and its simulated pod (tests/stand_ins)."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import xrt2pjrt
from _hostile import hostile_words
from stand_ins.pod import Pod, set_up
from xrt2pjrt.runtime.launch import READ_SECRET, SECRET_PLACEHOLDER

LAUNCH = [sys.executable, "-m", "xrt2pjrt", "launch"]


@pytest.fixture
def pod(tmp_path):
    return Pod(tmp_path, workers=3)


def test_runs_on_every_worker_with_pjrt_and_prefixes_output(pod):
    ran = pod.run(
        LAUNCH
        + [
            "--tpu",
            "pod",
            "--zone",
            "z1",
            "--env",
            "MSG=hello world",
            "--env=TRAIN_DEBUG=1",
            "--",
            "python3",
            "train.py",
            "--model",
            "vit b/16",
            "$HOME/out",
        ]
    )
    assert ran.returncode == 0, ran.stderr
    calls = pod.calls()
    assert sorted(calls) == [0, 1, 2], "the worker count came from `gcloud ... describe`"
    for worker, (call,) in calls.items():
        # each word as given: the worker's shell expands nothing (xla_dist expanded $HOME there)
        assert call.argv == ["python3", "train.py", "--model", "vit b/16", "$HOME/out"]
        assert call.env["PJRT_DEVICE"] == "TPU"
        assert call.env["MSG"] == "hello world" and call.env["TRAIN_DEBUG"] == "1"
    assert sorted(ran.stdout.splitlines()) == [f"[worker {i}] python3 ran on worker {i}" for i in range(3)]
    assert sorted(ran.stderr.splitlines()) == [f"[worker {i}] python3 warns on worker {i}" for i in range(3)] + [
        "xrt2pjrt launch: try 1 of 51 ended: every worker exited 0: done"
    ]
    describe, *ssh = pod.gcloud_calls()  # the health check before the try (the next is 10 s into it)
    assert describe == ["compute", "tpus", "tpu-vm", "describe", "pod", "--zone=z1", "--format=json"]
    assert sorted(c[6] for c in ssh) == ["--worker=0", "--worker=1", "--worker=2"]


def test_num_workers_gives_the_count_and_the_health_check_stays(pod):
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--num-workers", "2", "--", "python3", "t.py"])
    assert ran.returncode == 0
    assert sorted(pod.calls()) == [0, 1], "2 of the 3 workers the TPU has"
    assert [c[3] for c in pod.gcloud_calls()] == ["describe", "ssh", "ssh"], "is it READY and HEALTHY, then the try"


def test_failing_worker_gives_its_status_and_name(pod):
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--", "python3", "t.py"], STAND_IN_EXIT_1="3")
    assert ran.returncode == 3
    assert "failed on worker 1 (worker 1: exit 3)" in ran.stderr


def test_a_failure_stops_the_other_workers(pod):
    start = time.monotonic()
    ran = pod.run(
        LAUNCH + ["--tpu", "pod", "--", "python3", "t.py"],
        STAND_IN_EXIT_1="4",
        STAND_IN_SLEEP_1="2",
        STAND_IN_SLEEP_0="60",
        STAND_IN_SLEEP_2="60",
    )
    assert time.monotonic() - start < 30
    assert ran.returncode == 4
    assert "worker 1 failed: stopping worker 0, 2" in ran.stderr
    assert "failed on worker 1 " in ran.stderr
    _assert_all_gone(pod)


@pytest.mark.parametrize("inherited", [signal.SIG_DFL, signal.SIG_IGN], ids=["terminal", "background-script"])
def test_ctrl_c_stops_every_worker(pod, inherited):
    """The simulated workers run in sessions of their own, as remote processes do: killing the
    local gcloud does not stop them; the launch's stop command on each worker does. A launch
    that a script started in the background inherits SIGINT ignored, and still stops."""
    proc = subprocess.Popen(
        LAUNCH + ["--tpu", "pod", "--", "python3", "t.py"],
        cwd=pod.root,
        env={**pod.env, "STAND_IN_SLEEP": "60"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, inherited),
    )
    _wait_for_sleepers(pod, 3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "interrupted: stopping every worker" in err
    _assert_all_gone(pod)


def test_dry_run_prints_the_commands_and_runs_nothing(pod):
    ran = pod.run(
        LAUNCH
        + [
            "--tpu",
            "pod",
            "--project",
            "p",
            "--num-workers",
            "2",
            "--conda-env",
            "xla",
            "--restart-tpuvm-pod-server",
            "--dry-run",
            "--",
            "python3",
            "train.py",
            "--lr",
            "0.1",
        ]
    )
    assert ran.returncode == 0
    assert pod.gcloud_calls() == [] and pod.calls() == {}
    health, describe, note, *lines = [shlex.split(line, comments=True) for line in ran.stdout.splitlines()]
    assert health == [] and "until the TPU is READY and HEALTHY" in ran.stdout  # a comment, then the check
    assert describe == ["gcloud", "compute", "tpus", "tpu-vm", "describe", "pod", "--project=p", "--format=json"]
    assert note == [] and "$XRT2PJRT_JOB_SECRET stands for it" in ran.stdout  # a comment, then the commands
    run_id = re.search(r"XRT2PJRT_LAUNCH=([0-9a-f]+);", ran.stdout).group(1)
    command = (
        f"--command=export XRT2PJRT_LAUNCH={run_id}; trap 'echo \"xrt2pjrt launch {run_id}: exit $?\" >&2' "
        f"EXIT; {READ_SECRET.text}. /etc/profile; conda activate xla && PJRT_DEVICE=TPU python3 train.py --lr 0.1"
    )
    stdin = ["printf", "%s\\n", "$XRT2PJRT_JOB_SECRET", "|"]  # the placeholder, never a secret
    assert lines == [
        stdin + ["gcloud", "compute", "tpus", "tpu-vm", "ssh", "pod", "--project=p", f"--worker={i}", command]
        for i in range(2)
    ]
    assert "ignoring --restart-tpuvm-pod-server" in ran.stderr
    assert "--conda-env" not in ran.stderr, "an env not named for a 1.x release is the user's to choose"


def test_a_conda_env_named_for_torch_xla_1_x_is_reported(pod):
    """xla_dist's --conda-env=torch-xla-1.13 holds XRT's torch_xla: the program would run on 1.13."""
    ran = pod.run(
        LAUNCH
        + [
            "--tpu",
            "pod",
            "--num-workers",
            "1",
            "--conda-env",
            "torch-xla-1.13",
            "--dry-run",
            "--",
            "python3",
            "train.py",
        ]
    )
    assert ran.returncode == 0
    assert "xrt2pjrt launch: --conda-env torch-xla-1.13: holds torch_xla 1.x" in ran.stderr


def test_dry_run_without_worker_count_shows_the_describe_step(pod):
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--dry-run", "--", "python3", "t.py"])
    assert ran.returncode == 0 and pod.gcloud_calls() == []
    health_note, first, note, secret_note, template = ran.stdout.splitlines()
    assert shlex.split(first) == ["gcloud", "compute", "tpus", "tpu-vm", "describe", "pod", "--format=json"]
    assert all(n.startswith("#") for n in (health_note, note, secret_note)) and "--worker=<i>" in template


def test_dry_run_matches_what_a_real_run_runs(pod):
    argv = [
        "--tpu",
        "pod",
        "--num-workers",
        "3",
        "--docker-image",
        "img:1",
        "--docker-run-flag=--shm-size=1G",
        "--",
        "python3",
        "t.py",
        "it's",
    ]
    printed = [
        line.removeprefix(SECRET_PLACEHOLDER)
        for line in pod.run(LAUNCH + ["--dry-run"] + argv).stdout.splitlines()
        if not line.startswith("#")
    ]
    assert pod.run(LAUNCH + argv).returncode == 0
    ran = [shlex.join(["gcloud"] + c) for c in pod.gcloud_calls()]
    same_id = re.compile(r"(XRT2PJRT_LAUNCH=|xrt2pjrt-|xrt2pjrt launch )[0-9a-f]{12}")  # each run has its own id
    assert {same_id.sub(r"\1ID", line) for line in printed} == {same_id.sub(r"\1ID", line) for line in ran}
    (docker,) = pod.calls()[0]
    assert same_id.sub(r"\1ID", shlex.join(docker.argv)) == shlex.join(
        [
            "docker",
            "run",
            "--rm",
            "--privileged",
            "--net=host",
            "-e",
            "PJRT_DEVICE=TPU",
            "-e",
            "XRT2PJRT_JOB_SECRET",
            "--shm-size=1G",
            "--name",
            "xrt2pjrt-ID",
            "img:1",
            "python3",
            "t.py",
            "it's",
        ]
    )


@pytest.mark.parametrize(
    "layer", [[], ["--conda-env", "torch-xla"], ["--docker-image", "img:1"]], ids=["plain", "conda", "docker"]
)
def test_the_workers_environment_is_set_up_as_xla_dist_set_it_up(tmp_path, layer):
    """The same flags to xla_dist (the stand-in of 1.13) and to launch: each worker reads
    /etc/profile first, as xla_dist's script did "for non-interactive non-login shell over
    ssh", then runs the same set-up (conda activate) in the same words, then the program."""
    old, new = Pod(tmp_path / "xrt", workers=2), Pod(tmp_path / "pjrt", workers=2)
    flags = [*layer, "--env", "MSG=hi", "--", "python3", "train.py"]
    assert old.run([sys.executable, "-m", "torch_xla.distributed.xla_dist", "--tpu=pod", *flags]).returncode == 0
    ran = new.run(LAUNCH + ["--tpu", "pod", "--num-workers", "2", *flags])
    assert ran.returncode == 0, ran.stderr
    for worker in (0, 1):
        (xla_dist,), (launched,) = old.commands()[worker], new.commands()[worker]
        assert set_up(launched) == set_up(xla_dist)
        marker, report, rest = launched.split("; ", 2)
        assert re.fullmatch(r"export XRT2PJRT_LAUNCH=[0-9a-f]+", marker)
        assert re.fullmatch(r"""trap 'echo "xrt2pjrt launch [0-9a-f]+: exit \$\?" >&2' EXIT""", report)
        assert rest.startswith(READ_SECRET.text + ". /etc/profile;"), "before it only the launch's id, report, secret"
        program = new.calls()[worker][-1]
        assert program.argv[-2:] == ["python3", "train.py"]
        if layer and layer[0] == "--conda-env":
            assert program.env["CONDA_DEFAULT_ENV"] == "torch-xla"
        if not layer or layer[0] != "--docker-image":  # in docker the container's environment is its own
            assert program.env["STAND_IN_PROFILE_READ"] == "1" and program.env["MSG"] == "hi"


# Each worker: the job's secret from the environment, the shim's store handshake with it (worker
# 0 serves, worker 1 connects: only holders of the same secret get in), then worker 0 looks for
# the secret on every command line of this machine while both are running, as `ps` would.
HANDSHAKE = """
import glob, hashlib, os, pathlib, sys, time
from xrt2pjrt.shim.store.client import StoreClient
from xrt2pjrt.shim.store.secret import job_secret
from xrt2pjrt.shim.store.server import StoreServer, listen
secret, shared = job_secret(), pathlib.Path(sys.argv[1])
assert sys.stdin.read() == "", "the program's stdin is empty"
if os.environ["TPU_WORKER_ID"] == "0":
    server = StoreServer(listen("127.0.0.1", 0), secret)
    (shared / "port").write_text(str(server.port))
    me = StoreClient("127.0.0.1", server.port, secret, timeout=120)
    me.wait(["worker 1 is in"])
    holding = []
    for path in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            holding += [path] if secret in pathlib.Path(path).read_bytes() else []
        except OSError:
            pass  # gone meanwhile
    me.set("command lines holding the secret", repr(holding))
    me.wait(["worker 1 is done"])
else:
    while not (shared / "port").exists():
        time.sleep(0.05)
    me = StoreClient("127.0.0.1", int((shared / "port").read_text()), secret, timeout=120)
    me.set("worker 1 is in", b"")
    print("command lines holding the secret:", me.get("command lines holding the secret").decode())
    me.set("worker 1 is done", b"")
print("secret", hashlib.sha256(secret).hexdigest()[:16])
"""


@pytest.mark.slow
def test_each_run_hands_every_worker_a_new_secret_on_no_command_line(pod, tmp_path):
    """Two workers meet in the shim's store with the secret the launch made; no process of
    the machine (the launch, its gcloud, the workers' shells and programs) has it in its argv."""
    root = Path(__file__).resolve().parents[2]
    seen = []
    for run in range(2):
        shared = tmp_path / f"run-{run}"
        shared.mkdir()
        ran = pod.run(
            LAUNCH
            + [
                "--tpu",
                "pod",
                "--num-workers",
                "2",
                "--env",
                f"PYTHONPATH={root}",
                "--",
                sys.executable,
                "-c",
                HANDSHAKE,
                str(shared),
            ],
            timeout=180,
        )
        assert ran.returncode == 0, ran.stderr
        assert "[worker 1] command lines holding the secret: []" in ran.stdout.splitlines()
        secrets = {line.split()[-1] for line in ran.stdout.splitlines() if " secret " in line}
        assert len(secrets) == 1, "the same secret on every worker"
        seen += secrets
    assert seen[0] != seen[1], "a new secret for each run"


def test_the_secret_reaches_a_container_by_name_only(pod):
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--num-workers", "2", "--docker-image", "img:1", "--", "python3", "t.py"])
    assert ran.returncode == 0, ran.stderr
    values = set()
    for worker in (0, 1):
        (docker,) = pod.calls()[worker]
        assert (
            docker.argv[:8] == ["docker", "run", "--rm", "--privileged", "--net=host", "-e", "PJRT_DEVICE=TPU", "-e"]
            and docker.argv[8] == "XRT2PJRT_JOB_SECRET"
        )  # `-e NAME`: from docker's env
        values.add(docker.env["XRT2PJRT_JOB_SECRET"])  # kept through sudo, which resets the environment
        assert not any(value in " ".join(docker.argv) for value in values)
    (secret,) = values
    assert len(secret) >= 32
    assert not any(secret in " ".join(call) for call in pod.gcloud_calls())


def test_a_worker_command_run_without_the_secret_on_stdin_says_so(pod):
    """The dry run's command, run by hand without its pipe or with the variable unset: the
    worker stops at once, saying why."""
    printed = pod.run(LAUNCH + ["--tpu", "pod", "--num-workers", "1", "--dry-run", "--", "python3", "t.py"]).stdout
    (command,) = [line for line in printed.splitlines() if line.startswith(SECRET_PLACEHOLDER)]
    for without in (command.removeprefix(SECRET_PLACEHOLDER) + " < /dev/null", command):  # no pipe; no value
        ran = pod.run(["bash", "-c", without], XRT2PJRT_JOB_SECRET="")
        assert ran.returncode == 1 and "xrt2pjrt launch: no job secret on stdin" in ran.stderr
        assert pod.calls() == {}, "nothing ran"
    ran = pod.run(["bash", "-c", command], XRT2PJRT_JOB_SECRET="s" * 32)  # with its pipe, as printed
    assert ran.returncode == 0 and pod.calls()[0][0].env["XRT2PJRT_JOB_SECRET"] == "s" * 32


def test_ctrl_c_removes_the_container_on_every_worker(pod):
    proc = subprocess.Popen(
        LAUNCH + ["--tpu", "pod", "--docker-image", "img:1", "--", "python3", "t.py"],
        cwd=pod.root,
        env={**pod.env, "STAND_IN_SLEEP": "60"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for_sleepers(pod, 3)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    for worker, calls in pod.calls().items():
        run, rm = calls
        name = run.argv[run.argv.index("--name") + 1]
        assert name.startswith("xrt2pjrt-") and rm.argv == ["docker", "rm", "-f", name]
    _assert_all_gone(pod)


def test_bad_input_exits_2_with_a_message(pod, tmp_path):
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--env", "not-an-assignment", "--", "python3", "t.py"])
    assert ran.returncode == 2 and "NAME=VALUE" in ran.stderr
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--vm", "vm-0", "--", "python3", "t.py"])
    assert ran.returncode == 2  # TPU nodes (--vm) are XRT only
    empty = tmp_path / "empty"
    empty.mkdir()
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--", "python3", "t.py"], PATH=str(empty))
    assert ran.returncode == 2 and "gcloud is not on PATH" in ran.stderr


def _wait_for_sleepers(pod: Pod, n: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(_pids(pod.records / "sleepers")) < n:
        time.sleep(0.1)
    assert len(_pids(pod.records / "sleepers")) == n, "every worker started"


def _pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _assert_all_gone(pod: Pod) -> None:
    pids = _pids(pod.records / "sleepers")
    assert pids
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids), "a worker process outlived the launch"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


# --- tries, as xla_dist made them: a simulated TPU under maintenance, simulated lost workers ---

FAST = ["--health-poll", "0.2"]  # how often the simulated TPU is asked about (a real launch: every 10 s)


def _scenario(pod: Pod, **plays) -> dict[str, str]:
    """What the stand-in gcloud's TPU does, call by call (stand_ins/gcloud): a simulation."""
    path = pod.root / "scenario.json"
    path.write_text(json.dumps(plays))
    return {"STAND_IN_SCENARIO": str(path)}


def _said(ran: subprocess.CompletedProcess) -> list[str]:
    return [line for line in ran.stderr.splitlines() if line.startswith("xrt2pjrt launch:")]


def _steps(pod: Pod) -> list[tuple[str, str, int]]:
    """The gcloud calls in order: ("describe", "", -1), or ("run" or "stop", the try's id, worker)."""
    steps = []
    for argv in pod.gcloud_calls():
        if argv[3] == "describe":
            steps.append(("describe", "", -1))
            continue
        worker = int(next(a for a in argv if a.startswith("--worker=")).split("=")[1])
        command = argv[-1]
        run_id = re.search(r"XRT2PJRT_LAUNCH=([0-9a-f]+)", command).group(1)
        steps.append(("run" if command.startswith("--command=export ") else "stop", run_id, worker))
    return steps


def _tries_stopped_in_turn(pod: Pod, workers: int = 3) -> list[str]:
    """The tries' ids, having checked that every worker of each try was stopped before the next began."""
    steps = _steps(pod)
    ids = list(dict.fromkeys(run_id for kind, run_id, _ in steps if kind == "run"))
    for before, after in zip(ids, ids[1:]):
        stops = [i for i, (kind, run_id, _) in enumerate(steps) if kind == "stop" and run_id == before]
        assert {steps[i][2] for i in stops} == set(range(workers)), f"every worker of try {before} was stopped"
        assert max(stops) < min(i for i, (kind, run_id, _) in enumerate(steps) if kind == "run" and run_id == after)
    return ids


def _left_running(ids: list[str]) -> list[int]:
    """The processes of this machine (the simulated workers') that belong to any of the tries."""
    marks = [f"XRT2PJRT_LAUNCH={run_id}".encode() for run_id in ids]
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if any(mark in environ.read_bytes().split(b"\0") for mark in marks):
                found.append(int(environ.parent.name))
        except OSError:
            pass  # gone, or not ours
    return found


def test_a_try_that_tpu_maintenance_ended_runs_again_on_every_worker_once_it_is_healthy(pod):
    """Simulation: the stand-in TPU goes under maintenance in the first try (every worker's
    program sleeps 60 s), is REPAIRING, then READY and HEALTHY again. As under xla_dist, every
    worker is stopped and the command runs again on every worker."""
    env = _scenario(
        pod,
        describe=[
            ["READY", "HEALTHY"],
            ["READY", "UNHEALTHY_MAINTENANCE"],
            ["REPAIRING", "UNHEALTHY_MAINTENANCE"],
            ["READY", "HEALTHY"],
        ],
    )
    ran = pod.run(LAUNCH + ["--tpu", "pod", *FAST, "--", "python3", "t.py"], STAND_IN_SLEEP="60", **env)
    assert ran.returncode == 0, ran.stderr
    assert _said(ran) == [
        "xrt2pjrt launch: try 1 of 51 ended: TPU pod is under maintenance (state READY, health UNHEALTHY_MAINTENANCE): "
        "stopping every worker, then try 2 once TPU pod is READY and HEALTHY",
        "xrt2pjrt launch: TPU pod is not READY and HEALTHY (state REPAIRING, health UNHEALTHY_MAINTENANCE): waiting "
        "up to 1200 s, asking every 0.2 s",
        "xrt2pjrt launch: try 2 of 51 ended: every worker exited 0: done",
    ]
    assert {w: [c.argv for c in calls] for w, calls in pod.calls().items()} == {
        w: [["python3", "t.py"]] * 2 for w in range(3)
    }
    assert len(_tries_stopped_in_turn(pod)) == 2
    _assert_all_gone(pod)


def test_a_lost_worker_stops_every_worker_before_the_command_runs_again(pod):
    """Simulation: worker 1's connection drops 1 s into the first try, its program running on
    as on a host the network lost; the other workers would wait for it in their first
    collective. Every worker's program of that try is stopped before the next try starts."""
    env = _scenario(pod, lost={"1": [1.0]})
    ran = pod.run(LAUNCH + ["--tpu", "pod", *FAST, "--", "python3", "t.py"], STAND_IN_SLEEP="60", **env)
    assert ran.returncode == 0, ran.stderr
    assert _said(ran) == [
        "xrt2pjrt launch: try 1 of 51 ended: worker 1 lost (its ssh ended with 255 before the command did): "
        "stopping every worker, then try 2 once TPU pod is READY and HEALTHY",
        "xrt2pjrt launch: try 2 of 51 ended: every worker exited 0: done",
    ]
    first, second = _tries_stopped_in_turn(pod)
    assert _left_running([first, second]) == []
    _assert_all_gone(pod)  # the programs of the first try, worker 1's among them


def test_a_worker_the_stop_did_not_reach_is_stopped_before_the_next_try(pod):
    """Simulation: worker 1 is lost, and so is the first stop sent to it; the next try waits
    until a stop reaches it, so that no program of the last try runs beside the new one."""
    env = _scenario(pod, lost={"1": [1.0, 0.5]})  # its ssh calls: the first try, the first stop
    ran = pod.run(LAUNCH + ["--tpu", "pod", *FAST, "--", "python3", "t.py"], STAND_IN_SLEEP="60", **env)
    assert ran.returncode == 0, ran.stderr
    assert (
        "xrt2pjrt launch: could not stop worker 1: ERROR: (gcloud.compute.tpus.tpu-vm.ssh) [/usr/bin/ssh] exited "
        "with return code [255]."
    ) in _said(ran)
    first, _ = _tries_stopped_in_turn(pod)
    assert [w for kind, run_id, w in _steps(pod) if kind == "stop" and run_id == first].count(1) == 2
    _assert_all_gone(pod)


def test_a_launch_gives_up_after_its_restarts_saying_so(pod):
    """Simulation: worker 1 is lost in every try; with --max-restarts 2 the third try is the last."""
    env = _scenario(pod, lost={"1": [0.5, None, 0.5, None, 0.5]})  # its ssh calls: a try, a stop, a try…
    ran = pod.run(LAUNCH + ["--tpu", "pod", *FAST, "--max-restarts", "2", "--", "sleep", "30"], **env)
    assert ran.returncode == 1
    said = _said(ran)
    assert [line.split(": ")[1] for line in said] == ["try 1 of 3 ended", "try 2 of 3 ended", "try 3 of 3 ended"]
    assert said[-1] == (
        "xrt2pjrt launch: try 3 of 3 ended: worker 1 lost (its ssh ended with 255 before the command "
        "did): stopping every worker; no restarts left (--max-restarts 2): giving up"
    )
    ids = _tries_stopped_in_turn(pod)
    assert len(ids) == 3
    stops = [(run_id, worker) for kind, run_id, worker in _steps(pod) if kind == "stop"]
    assert {(ids[-1], w) for w in range(3)} <= set(stops), "the last try's workers are stopped too"
    assert _left_running(ids) == []


@pytest.mark.parametrize("status", ["3", "255"])
def test_the_programs_own_failure_is_not_restarted(pod, status):
    """xla_dist restarted after maintenance or a lost worker, never after the program's own
    failure. A program may exit 255 itself (`sys.exit(-1)`), as ssh does when it loses the
    connection: xla_dist took it for a lost worker; its worker's exit report says otherwise."""
    ran = pod.run(LAUNCH + ["--tpu", "pod", *FAST, "--", "python3", "t.py"], STAND_IN_EXIT_1=status)
    assert ran.returncode == int(status)
    assert _said(ran)[-1] == (
        f"xrt2pjrt launch: try 1 of 51 ended: failed on worker 1 (worker 1: exit {status}): "
        "the program's own failure, not restarted"
    )
    assert [kind for kind, _, _ in _steps(pod) if kind == "run"] == ["run"] * 3, "one try"


def test_a_program_failing_as_the_tpu_goes_under_maintenance_runs_again(pod):
    """Simulation: worker 1's program fails, as a program does when maintenance takes its TPU
    away, and the TPU says it is under maintenance: that try runs again. The second try fails
    on a healthy TPU: the program's own failure."""
    env = _scenario(pod, describe=[["READY", "HEALTHY"], ["READY", "UNHEALTHY_MAINTENANCE"], ["READY", "HEALTHY"]])
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--", "python3", "t.py"], STAND_IN_EXIT_1="1", **env)
    assert ran.returncode == 1
    said = _said(ran)
    assert said[0] == (
        "xrt2pjrt launch: try 1 of 51 ended: worker 1 failed and TPU pod is under maintenance (state "
        "READY, health UNHEALTHY_MAINTENANCE): stopping every worker, then try 2 once TPU pod is READY "
        "and HEALTHY"
    )
    assert said[-1] == (
        "xrt2pjrt launch: try 2 of 51 ended: failed on worker 1 (worker 1: exit 1): the program's own "
        "failure, not restarted"
    )


@pytest.mark.parametrize(
    "state, health, flags, why",
    [
        (
            "PREEMPTED",
            None,
            [],
            "TPU pod is PREEMPTED, which waiting does not end (start or recreate it, then launch again): giving up",
        ),
        (
            "REPAIRING",
            "UNHEALTHY_MAINTENANCE",
            ["--health-timeout", "1"],
            "TPU pod not READY and HEALTHY after 1 s (state REPAIRING, health UNHEALTHY_MAINTENANCE): giving up",
        ),
    ],
    ids=["gone", "timeout"],
)
def test_a_tpu_that_is_not_ready_in_time_is_not_launched_on(pod, state, health, flags, why):
    """Simulation: a TPU that waiting will not bring back, and one that stays under repair."""
    env = _scenario(pod, describe=[[state, health]])
    ran = pod.run(LAUNCH + ["--tpu", "pod", *FAST, *flags, "--", "python3", "t.py"], **env)
    assert ran.returncode == 1
    assert _said(ran)[-1] == f"xrt2pjrt launch: {why}"
    assert pod.calls() == {} and {c[3] for c in pod.gcloud_calls()} == {"describe"}


def test_a_ready_tpu_whose_health_is_not_reported_is_launched_on(pod):
    """gcloud leaves out a health the TPU's monitor never reported: READY is enough then."""
    env = _scenario(pod, describe=[["READY", None]])
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--", "python3", "t.py"], **env)
    assert ran.returncode == 0, ran.stderr
    assert sorted(pod.calls()) == [0, 1, 2]


# --- the words given are the words run ---------------------------------------------------------


def _argv_of_first_tool(pod: Pod, worker: int = 0) -> list[str]:
    return pod.calls()[worker][-1].argv


def test_every_hostile_word_arrives_as_given_and_runs_nothing(pod, tmp_path):
    canary = tmp_path / "canary"
    canary.mkdir()
    words = hostile_words(canary)
    assert len(words) >= 30
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--num-workers", "2", "--", "python3", "t.py", *words])
    assert ran.returncode == 0, ran.stderr
    for worker in (0, 1):
        assert _argv_of_first_tool(pod, worker) == ["python3", "t.py", *words]
    assert sorted(p.name for p in canary.iterdir()) == [], "a word ran as a command on a worker"


def test_an_empty_argument_reaches_every_worker_as_a_word(pod):
    """`--tag ""`: the worker's shell (the simulated pod's bash) gets '' for it, an empty word."""
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--num-workers", "2", "--", "python3", "t.py", "--tag", "", "--b", ""])
    assert ran.returncode == 0, ran.stderr
    for worker in (0, 1):
        assert _argv_of_first_tool(pod, worker) == ["python3", "t.py", "--tag", "", "--b", ""]


@pytest.mark.parametrize("layer", ["plain", "conda", "docker"])
def test_env_values_conda_env_image_and_container_arrive_as_given(pod, tmp_path, layer):
    canary = tmp_path / "canary"
    canary.mkdir()
    words = [w for w in hostile_words(canary) if w and not w.startswith("-")]
    env = [f"V{i}={w}" for i, w in enumerate(words)]
    extra = {
        "plain": [],
        "conda": ["--conda-env", words[0]],
        "docker": [
            "--docker-image",
            words[1],
            "--docker-container",
            words[2],
            "--docker-run-flag",
            f"--label={words[3]}",
        ],
    }[layer]
    argv = [
        "--tpu",
        "pod",
        "--num-workers",
        "1",
        *[x for kv in env for x in ("--env", kv)],
        *extra,
        "--",
        "python3",
        words[4],
    ]
    ran = pod.run(LAUNCH + argv)
    assert ran.returncode == 0, ran.stderr
    calls = pod.calls()[0]
    if layer == "docker":
        (docker,) = calls
        args = docker.argv
        assert [args[i + 1] for i, a in enumerate(args) if a == "-e"] == [
            "PJRT_DEVICE=TPU",
            "XRT2PJRT_JOB_SECRET",
            *env,
        ]
        assert args[args.index("--name") + 1] == words[2] and f"--label={words[3]}" in args
        assert args[-3:] == [words[1], "python3", words[4]]
    else:
        if layer == "conda":
            conda, *calls = calls
            assert conda.argv == ["conda", "activate", words[0]]
        (python,) = calls
        assert python.argv == ["python3", words[4]]
        assert [python.env[f"V{i}"] for i in range(len(words))] == words
    assert sorted(p.name for p in canary.iterdir()) == []


@pytest.mark.parametrize("docker", [False, True])
def test_shell_string_is_expanded_by_the_workers_shell_only_when_asked(pod, tmp_path, docker):
    string = f"python3 t.py $HOME/out $((6*7)) && touch {tmp_path}/ran-$TPU_WORKER_ID"
    extra = ["--docker-image", "img:1"] if docker else []
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--num-workers", "2", *extra, "--shell", string])
    assert ran.returncode == 0, ran.stderr
    for worker in (0, 1):
        if docker:  # the stand-in docker records its argv: the string reaches the container's bash whole
            (call,) = pod.calls()[worker]
            assert call.argv[-4:] == ["img:1", "bash", "-c", string]
        else:
            (call,) = pod.calls()[worker]
            assert call.argv == ["python3", "t.py", f"/home/worker-{worker}/out", "42"]
            assert call.env["PJRT_DEVICE"] == "TPU"
            assert (tmp_path / f"ran-{worker}").exists()


def test_shell_and_words_together_or_an_option_like_name_are_refused(pod):
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--shell", "echo hi", "--", "python3", "t.py"])
    assert ran.returncode == 2 and "not both" in ran.stderr
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--docker-image=--privileged", "--", "python3", "t.py"])
    assert ran.returncode == 2 and "start with '-'" in ran.stderr
    ran = pod.run(LAUNCH + ["--tpu=-x", "--", "python3", "t.py"])
    assert ran.returncode == 2
    assert pod.gcloud_calls() == []


# --- the carried shim (xrt2pjrt/carry.py): on every worker, beside the script ------------

SHIMMED_SCRIPT = "import xrt2pjrt_shim.xla_model as xm\n\nprint(xm.get_ordinal())\n"


def _carried(folder: Path, script: str = "train.py") -> Path:
    """``script`` in ``folder``, importing the shim, and the copy `migrate --write` carries beside it."""
    (folder / script).write_text(SHIMMED_SCRIPT)
    done = subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "migrate", "--write", str(folder / script)],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and (folder / "xrt2pjrt_shim" / "__init__.py").exists(), done.stderr
    return folder / "xrt2pjrt_shim"


def _worker_command(pod: Pod, script: str = "train.py") -> str:
    """The one worker's command of a dry run, as a person would run it by hand on the worker."""
    printed = pod.run(LAUNCH + ["--tpu", "pod", "--num-workers", "1", "--dry-run", "--", "python3", script])
    assert printed.returncode == 0, printed.stderr
    (command,) = [line for line in printed.stdout.splitlines() if line.startswith(SECRET_PLACEHOLDER)]
    return command


def test_a_script_that_imports_the_carried_shim_runs_where_the_workers_have_the_copy(pod):
    _carried(pod.root)
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--", "python3", "train.py"])
    assert ran.returncode == 0, ran.stderr
    assert [c.argv for c in pod.calls()[2]] == [["python3", "train.py"]]
    assert (
        f"xrt2pjrt launch: train.py imports the carried shim (xrt2pjrt_shim/, xrt2pjrt {xrt2pjrt.__version__}): "
        "each worker checks it has that copy before the program starts (gcloud compute tpus tpu-vm scp --recurse "
        "--worker=all xrt2pjrt_shim pod: copies it)"
    ) in ran.stderr


def test_a_script_that_imports_the_carried_shim_with_no_copy_beside_it_is_not_launched(pod):
    (pod.root / "jobs").mkdir()
    (pod.root / "jobs" / "train.py").write_text(SHIMMED_SCRIPT)
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--", "python3", "-u", "jobs/train.py"])
    assert ran.returncode == 2
    assert (
        "jobs/train.py imports xrt2pjrt_shim, and there is no jobs/xrt2pjrt_shim/ beside it: run "
        "`xrt2pjrt migrate --write --target shim jobs`"
    ) in ran.stderr
    assert pod.gcloud_calls() == []


def test_a_worker_without_the_copy_or_with_another_version_stops_saying_what_to_copy(pod, tmp_path):
    copy = _carried(pod.root)
    command = _worker_command(pod)
    worker_home = tmp_path / "worker-home"  # the worker's working directory, where train.py is and the copy is not
    worker_home.mkdir()
    (worker_home / "train.py").write_text(SHIMMED_SCRIPT)
    secret = {"XRT2PJRT_JOB_SECRET": "s" * 32}
    missing = subprocess.run(
        ["bash", "-c", command], cwd=worker_home, env={**pod.env, **secret}, capture_output=True, text=True, timeout=60
    )
    assert missing.returncode == 1 and pod.calls() == {}, "the program did not start"
    assert (
        f"xrt2pjrt launch: this worker has no xrt2pjrt_shim/ of xrt2pjrt {xrt2pjrt.__version__}, which train.py "
        "imports: copy it from the launching machine (gcloud compute tpus tpu-vm scp"
    ) in missing.stderr
    old = worker_home / "xrt2pjrt_shim"
    old.mkdir()
    (old / "__init__.py").write_text(
        (copy / "__init__.py").read_text().replace(f'__version__ = "{xrt2pjrt.__version__}"', '__version__ = "0.0.9"')
    )
    other = subprocess.run(
        ["bash", "-c", command], cwd=worker_home, env={**pod.env, **secret}, capture_output=True, text=True, timeout=60
    )
    assert other.returncode == 1 and "this worker has no xrt2pjrt_shim/ of xrt2pjrt" in other.stderr
    (old / "__init__.py").write_bytes((copy / "__init__.py").read_bytes())  # the copy, as scp brings it
    same = subprocess.run(
        ["bash", "-c", command], cwd=worker_home, env={**pod.env, **secret}, capture_output=True, text=True, timeout=60
    )
    assert same.returncode == 0, same.stderr
    assert [c.argv for c in pod.calls()[0]] == [["python3", "train.py"]]


def test_in_a_container_the_copy_is_the_images_said_not_checked(pod):
    _carried(pod.root)
    ran = pod.run(
        LAUNCH
        + ["--tpu", "pod", "--num-workers", "1", "--docker-image", "img:1", "--dry-run", "--", "python3", "train.py"]
    )
    assert ran.returncode == 0, ran.stderr
    assert "the image must hold it beside the script (not checked from here)" in ran.stderr
    assert "xrt2pjrt_shim" not in ran.stdout


def test_a_script_that_does_not_import_the_copy_is_launched_as_before(pod):
    (pod.root / "train.py").write_text("import torch_xla.runtime as xr\n")
    assert "xrt2pjrt_shim" not in _worker_command(pod)
