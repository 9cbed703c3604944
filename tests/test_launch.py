"""`xrt2pjrt launch` against the stand-in gcloud and its simulated pod (tests/stand_ins)."""

from __future__ import annotations

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
from xrt2pjrt.launch import READ_SECRET, SECRET_PLACEHOLDER

LAUNCH = [sys.executable, "-m", "xrt2pjrt", "launch"]


@pytest.fixture
def pod(tmp_path):
    return Pod(tmp_path, workers=3)


def test_runs_on_every_worker_with_pjrt_and_prefixes_output(pod):
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--zone", "z1", "--env", "MSG=hello world", "--env=XLA_USE_BF16=1",
                            "--", "python3", "train.py", "--model", "vit b/16", "$HOME/out"])
    assert ran.returncode == 0, ran.stderr
    calls = pod.calls()
    assert sorted(calls) == [0, 1, 2], "the worker count came from `gcloud ... describe`"
    for worker, (call,) in calls.items():
        # each word as given: the worker's shell expands nothing (xla_dist expanded $HOME there)
        assert call.argv == ["python3", "train.py", "--model", "vit b/16", "$HOME/out"]
        assert call.env["PJRT_DEVICE"] == "TPU"
        assert call.env["MSG"] == "hello world" and call.env["XLA_USE_BF16"] == "1"
    assert sorted(ran.stdout.splitlines()) == [f"[worker {i}] python3 ran on worker {i}" for i in range(3)]
    assert sorted(ran.stderr.splitlines()) == [f"[worker {i}] python3 warns on worker {i}" for i in range(3)]
    describe, *ssh = pod.gcloud_calls()
    assert describe == ["compute", "tpus", "tpu-vm", "describe", "pod", "--zone=z1", "--format=json"]
    assert sorted(c[6] for c in ssh) == ["--worker=0", "--worker=1", "--worker=2"]


def test_num_workers_skips_describe(pod):
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--num-workers", "2", "--", "python3", "t.py"])
    assert ran.returncode == 0
    assert sorted(pod.calls()) == [0, 1]
    assert all(c[3] == "ssh" for c in pod.gcloud_calls())


def test_failing_worker_gives_its_status_and_name(pod):
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--", "python3", "t.py"], STAND_IN_EXIT_1="3")
    assert ran.returncode == 3
    assert "failed on worker 1 (worker 1: exit 3)" in ran.stderr


def test_a_failure_stops_the_other_workers(pod):
    start = time.monotonic()
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--", "python3", "t.py"],
                  STAND_IN_EXIT_1="4", STAND_IN_SLEEP_1="2", STAND_IN_SLEEP_0="60", STAND_IN_SLEEP_2="60")
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
    proc = subprocess.Popen(LAUNCH + ["--tpu", "pod", "--", "python3", "t.py"], cwd=pod.root,
                            env={**pod.env, "STAND_IN_SLEEP": "60"}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, inherited))
    _wait_for_sleepers(pod, 3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "interrupted: stopping every worker" in err
    _assert_all_gone(pod)


def test_dry_run_prints_the_commands_and_runs_nothing(pod):
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--project", "p", "--num-workers", "2", "--conda-env", "xla",
                            "--restart-tpuvm-pod-server", "--dry-run", "--", "python3", "train.py", "--lr", "0.1"])
    assert ran.returncode == 0
    assert pod.gcloud_calls() == [] and pod.calls() == {}
    note, *lines = [shlex.split(line, comments=True) for line in ran.stdout.splitlines()]
    assert note == [] and "$XRT2PJRT_JOB_SECRET stands for it" in ran.stdout  # a comment, then the commands
    run_id = re.search(r"XRT2PJRT_LAUNCH=([0-9a-f]+);", ran.stdout).group(1)
    command = (f"--command=export XRT2PJRT_LAUNCH={run_id}; {READ_SECRET.text}. /etc/profile; conda activate xla && "
               "PJRT_DEVICE=TPU python3 train.py --lr 0.1")
    stdin = ["printf", "%s\\n", "$XRT2PJRT_JOB_SECRET", "|"]  # the placeholder, never a secret
    assert lines == [stdin + ["gcloud", "compute", "tpus", "tpu-vm", "ssh", "pod", "--project=p", f"--worker={i}",
                              command] for i in range(2)]
    assert "ignoring --restart-tpuvm-pod-server" in ran.stderr
    assert "--conda-env" not in ran.stderr, "an env not named for a 1.x release is the user's to choose"


def test_a_conda_env_named_for_torch_xla_1_x_is_reported(pod):
    """xla_dist's --conda-env=torch-xla-1.13 holds XRT's torch_xla: the program would run on 1.13."""
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--num-workers", "1", "--conda-env", "torch-xla-1.13", "--dry-run",
                            "--", "python3", "train.py"])
    assert ran.returncode == 0
    assert "xrt2pjrt launch: --conda-env torch-xla-1.13: holds torch_xla 1.x" in ran.stderr


def test_dry_run_without_worker_count_shows_the_describe_step(pod):
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--dry-run", "--", "python3", "t.py"])
    assert ran.returncode == 0 and pod.gcloud_calls() == []
    first, note, secret_note, template = ran.stdout.splitlines()
    assert shlex.split(first) == ["gcloud", "compute", "tpus", "tpu-vm", "describe", "pod", "--format=json"]
    assert note.startswith("#") and secret_note.startswith("#") and "--worker=<i>" in template


def test_dry_run_matches_what_a_real_run_runs(pod):
    argv = ["--tpu", "pod", "--num-workers", "3", "--docker-image", "img:1", "--docker-run-flag=--shm-size=1G",
            "--", "python3", "t.py", "it's"]
    printed = [line.removeprefix(SECRET_PLACEHOLDER) for line in pod.run(LAUNCH + ["--dry-run"] + argv).stdout
               .splitlines() if not line.startswith("#")]
    assert pod.run(LAUNCH + argv).returncode == 0
    ran = [shlex.join(["gcloud"] + c) for c in pod.gcloud_calls()]
    same_id = re.compile(r"(XRT2PJRT_LAUNCH=|xrt2pjrt-)[0-9a-f]{12}")  # each run has its own id
    assert sorted(same_id.sub(r"\1ID", line) for line in printed) == sorted(same_id.sub(r"\1ID", line) for line in ran)
    (docker,) = pod.calls()[0]
    assert same_id.sub(r"\1ID", shlex.join(docker.argv)) == shlex.join(
        ["docker", "run", "--rm", "--privileged", "--net=host", "-e", "PJRT_DEVICE=TPU", "-e", "XRT2PJRT_JOB_SECRET",
         "--shm-size=1G", "--name", "xrt2pjrt-ID", "img:1", "python3", "t.py", "it's"])


@pytest.mark.parametrize("layer", [[], ["--conda-env", "torch-xla"], ["--docker-image", "img:1"]],
                         ids=["plain", "conda", "docker"])
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
        marker, rest = launched.split("; ", 1)
        assert re.fullmatch(r"export XRT2PJRT_LAUNCH=[0-9a-f]+", marker)
        assert rest.startswith(READ_SECRET.text + ". /etc/profile;"), "before it only the launch's id and secret"
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


def test_each_run_hands_every_worker_a_new_secret_on_no_command_line(pod, tmp_path):
    """Two workers meet in the shim's store with the secret the launch made; no process of
    the machine (the launch, its gcloud, the workers' shells and programs) has it in its argv."""
    root = Path(__file__).resolve().parents[1]
    seen = []
    for run in range(2):
        shared = tmp_path / f"run-{run}"
        shared.mkdir()
        ran = pod.run(LAUNCH + ["--tpu", "pod", "--num-workers", "2", "--env", f"PYTHONPATH={root}", "--",
                                sys.executable, "-c", HANDSHAKE, str(shared)], timeout=180)
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
        assert docker.argv[:8] == ["docker", "run", "--rm", "--privileged", "--net=host", "-e", "PJRT_DEVICE=TPU",
                                   "-e"] and docker.argv[8] == "XRT2PJRT_JOB_SECRET"  # `-e NAME`: from docker's env
        values.add(docker.env["XRT2PJRT_JOB_SECRET"])  # kept through sudo, which resets the environment
        assert not any(value in " ".join(docker.argv) for value in values)
    (secret,) = values
    assert len(secret) >= 32
    assert not any(secret in " ".join(call) for call in pod.gcloud_calls())


def test_a_worker_command_run_without_the_secret_on_stdin_says_so(pod):
    """The dry run's command, run by hand without its pipe or with the variable unset: the
    worker stops at once, saying why."""
    printed = pod.run(LAUNCH + ["--tpu", "pod", "--num-workers", "1", "--dry-run", "--", "python3", "t.py"]).stdout
    (command,) = [line for line in printed.splitlines() if not line.startswith("#")]
    for without in (command.removeprefix(SECRET_PLACEHOLDER) + " < /dev/null", command):  # no pipe; no value
        ran = pod.run(["bash", "-c", without], XRT2PJRT_JOB_SECRET="")
        assert ran.returncode == 1 and "xrt2pjrt launch: no job secret on stdin" in ran.stderr
        assert pod.calls() == {}, "nothing ran"
    ran = pod.run(["bash", "-c", command], XRT2PJRT_JOB_SECRET="s" * 32)  # with its pipe, as printed
    assert ran.returncode == 0 and pod.calls()[0][0].env["XRT2PJRT_JOB_SECRET"] == "s" * 32


def test_ctrl_c_removes_the_container_on_every_worker(pod):
    proc = subprocess.Popen(LAUNCH + ["--tpu", "pod", "--docker-image", "img:1", "--", "python3", "t.py"],
                            cwd=pod.root, env={**pod.env, "STAND_IN_SLEEP": "60"}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
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


@pytest.mark.parametrize("layer", ["plain", "conda", "docker"])
def test_env_values_conda_env_image_and_container_arrive_as_given(pod, tmp_path, layer):
    canary = tmp_path / "canary"
    canary.mkdir()
    words = [w for w in hostile_words(canary) if w and not w.startswith("-")]
    env = [f"V{i}={w}" for i, w in enumerate(words)]
    extra = {"plain": [], "conda": ["--conda-env", words[0]],
             "docker": ["--docker-image", words[1], "--docker-container", words[2],
                        "--docker-run-flag", f"--label={words[3]}"]}[layer]
    argv = ["--tpu", "pod", "--num-workers", "1", *[x for kv in env for x in ("--env", kv)], *extra,
            "--", "python3", words[4]]
    ran = pod.run(LAUNCH + argv)
    assert ran.returncode == 0, ran.stderr
    calls = pod.calls()[0]
    if layer == "docker":
        (docker,) = calls
        args = docker.argv
        assert [args[i + 1] for i, a in enumerate(args) if a == "-e"] == [
            "PJRT_DEVICE=TPU", "XRT2PJRT_JOB_SECRET", *env]
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
    done = subprocess.run([sys.executable, "-m", "xrt2pjrt", "migrate", "--write", str(folder / script)],
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and (folder / "xrt2pjrt_shim" / "__init__.py").exists(), done.stderr
    return folder / "xrt2pjrt_shim"


def _worker_command(pod: Pod, script: str = "train.py") -> str:
    """The one worker's command of a dry run, as a person would run it by hand on the worker."""
    printed = pod.run(LAUNCH + ["--tpu", "pod", "--num-workers", "1", "--dry-run", "--", "python3", script])
    assert printed.returncode == 0, printed.stderr
    (command,) = [line for line in printed.stdout.splitlines() if not line.startswith("#")]
    return command


def test_a_script_that_imports_the_carried_shim_runs_where_the_workers_have_the_copy(pod):
    _carried(pod.root)
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--", "python3", "train.py"])
    assert ran.returncode == 0, ran.stderr
    assert [c.argv for c in pod.calls()[2]] == [["python3", "train.py"]]
    assert (f"xrt2pjrt launch: train.py imports the carried shim (xrt2pjrt_shim/, xrt2pjrt {xrt2pjrt.__version__}): "
            "each worker checks it has that copy before the program starts (gcloud compute tpus tpu-vm scp --recurse "
            "--worker=all xrt2pjrt_shim pod: copies it)") in ran.stderr


def test_a_script_that_imports_the_carried_shim_with_no_copy_beside_it_is_not_launched(pod):
    (pod.root / "jobs").mkdir()
    (pod.root / "jobs" / "train.py").write_text(SHIMMED_SCRIPT)
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--", "python3", "-u", "jobs/train.py"])
    assert ran.returncode == 2
    assert ("jobs/train.py imports xrt2pjrt_shim, and there is no jobs/xrt2pjrt_shim/ beside it: run "
            "`xrt2pjrt migrate --write --target shim jobs`") in ran.stderr
    assert pod.gcloud_calls() == []


def test_a_worker_without_the_copy_or_with_another_version_stops_saying_what_to_copy(pod, tmp_path):
    copy = _carried(pod.root)
    command = _worker_command(pod)
    worker_home = tmp_path / "worker-home"  # the worker's working directory, where train.py is and the copy is not
    worker_home.mkdir()
    (worker_home / "train.py").write_text(SHIMMED_SCRIPT)
    secret = {"XRT2PJRT_JOB_SECRET": "s" * 32}
    missing = subprocess.run(["bash", "-c", command], cwd=worker_home, env={**pod.env, **secret},
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 1 and pod.calls() == {}, "the program did not start"
    assert (f"xrt2pjrt launch: this worker has no xrt2pjrt_shim/ of xrt2pjrt {xrt2pjrt.__version__}, which train.py "
            "imports: copy it from the launching machine (gcloud compute tpus tpu-vm scp") in missing.stderr
    old = worker_home / "xrt2pjrt_shim"
    old.mkdir()
    (old / "__init__.py").write_text((copy / "__init__.py").read_text().replace(
        f'__version__ = "{xrt2pjrt.__version__}"', '__version__ = "0.0.9"'))
    other = subprocess.run(["bash", "-c", command], cwd=worker_home, env={**pod.env, **secret},
                           capture_output=True, text=True, timeout=60)
    assert other.returncode == 1 and "this worker has no xrt2pjrt_shim/ of xrt2pjrt" in other.stderr
    (old / "__init__.py").write_bytes((copy / "__init__.py").read_bytes())  # the copy, as scp brings it
    same = subprocess.run(["bash", "-c", command], cwd=worker_home, env={**pod.env, **secret},
                          capture_output=True, text=True, timeout=60)
    assert same.returncode == 0, same.stderr
    assert [c.argv for c in pod.calls()[0]] == [["python3", "train.py"]]


def test_in_a_container_the_copy_is_the_images_said_not_checked(pod):
    _carried(pod.root)
    ran = pod.run(LAUNCH + ["--tpu", "pod", "--num-workers", "1", "--docker-image", "img:1", "--dry-run", "--",
                            "python3", "train.py"])
    assert ran.returncode == 0, ran.stderr
    assert "the image must hold it beside the script (not checked from here)" in ran.stderr
    assert "xrt2pjrt_shim" not in ran.stdout


def test_a_script_that_does_not_import_the_copy_is_launched_as_before(pod):
    (pod.root / "train.py").write_text("import torch_xla.runtime as xr\n")
    assert "xrt2pjrt_shim" not in _worker_command(pod)
