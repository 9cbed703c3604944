"""xrt2pjrt.shim.job: what the environment says about the job, where its store lives, and
its secret. The environments are those torchrun, torch_xla's spawn and TPU VMs set
(TPU_SKIP_MDS_QUERY: the metadata server is not asked)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from xrt2pjrt.shim import job, settings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
V4_16 = {
    "PJRT_DEVICE": "TPU",
    "TPU_SKIP_MDS_QUERY": "1",
    "TPU_ACCELERATOR_TYPE": "v4-16",
    "TPU_HOST_BOUNDS": "1,1,2",
    "TPU_CHIPS_PER_HOST_BOUNDS": "2,2,1",
    "TPU_WORKER_HOSTNAMES": "10.0.0.5,10.0.0.6",
}


def test_torchrun_names_the_processes_and_rank_0_serves_on_master_addr():
    two_nodes = {
        "RANK": "5",
        "WORLD_SIZE": "8",
        "LOCAL_RANK": "1",
        "LOCAL_WORLD_SIZE": "4",
        "GROUP_RANK": "1",
        "MASTER_ADDR": "10.1.2.3",
        "MASTER_PORT": "29500",
        "TORCHELASTIC_RUN_ID": "none",
    }
    described = job.from_env(two_nodes)
    assert (described.process, described.processes, described.local_process, described.host, described.hosts) == (
        5,
        8,
        1,
        1,
        2,
    )
    assert (described.store_host, described.store_port, described.serves) == ("10.1.2.3", 29501, False)
    assert job.from_env({**two_nodes, "RANK": "0", "LOCAL_RANK": "0", "GROUP_RANK": "0"}).serves
    one_node = job.from_env({"RANK": "2", "WORLD_SIZE": "4", "LOCAL_RANK": "2", "MASTER_ADDR": "10.1.2.3"})
    assert (one_node.hosts, one_node.store_host) == (1, "127.0.0.1")  # every replica local: loopback


def test_on_a_pod_the_store_is_worker_0s_whatever_the_ordinals_and_local_process_0_serves():
    worker_1 = {**V4_16, "TPU_WORKER_ID": "1", "PJRT_LOCAL_PROCESS_COUNT": "4", "PJRT_LOCAL_PROCESS_RANK": "2"}
    described = job.from_env(worker_1)
    assert (described.process, described.processes, described.host, described.hosts) == (6, 8, 1, 2)
    assert (described.store_host, described.store_port, described.serves) == ("10.0.0.5", 12356, False)
    assert job.from_env({**worker_1, "CLOUD_TPU_TASK_ID": "7"}).process == 7  # torch_xla's own count wins
    worker_0 = job.from_env({**worker_1, "TPU_WORKER_ID": "0", "PJRT_LOCAL_PROCESS_RANK": "0"})
    assert worker_0.serves and worker_0.process == 0
    assert not job.from_env({**worker_1, "TPU_WORKER_ID": "0", "PJRT_LOCAL_PROCESS_RANK": "1"}).serves


def test_one_process_per_host_or_the_parent_of_spawn_on_a_pod():
    described = job.from_env({**V4_16, "TPU_WORKER_ID": "1"})
    assert (described.process, described.processes, described.local_processes) == (1, 2, 1)
    assert described.describe() == "process 1 of 2 on host 1 of 2 (TPU slice v4-16)"
    assert job.from_env({**V4_16, "TPU_WORKER_ID": "0"}).serves


def test_alone_on_one_host_nothing_says_there_is_a_job():
    for env in (
        {},
        {"PJRT_DEVICE": "CPU"},
        {**V4_16, "TPU_ACCELERATOR_TYPE": "v4-8", "TPU_HOST_BOUNDS": "1,1,1", "TPU_WORKER_HOSTNAMES": ""},
    ):
        described = job.from_env(env)
        assert (described.processes, described.store_host, described.serves) == (1, "127.0.0.1", True)


def test_a_spawn_parent_that_serves_and_an_explicit_address_override_the_place():
    base = {**V4_16, "TPU_WORKER_ID": "1", "PJRT_LOCAL_PROCESS_COUNT": "4", "PJRT_LOCAL_PROCESS_RANK": "0"}
    served = job.from_env({**base, settings.SERVED_STORE.name: "10.0.0.5:41000"})
    assert (served.store_host, served.store_port, served.serves, served.served_by_parent) == (
        "10.0.0.5",
        41000,
        False,
        True,
    )
    explicit = job.from_env({**base, "TPU_WORKER_ID": "0", settings.RENDEZVOUS_ADDR.name: "[fd00::5]:4000"})
    assert (explicit.store_host, explicit.store_port, explicit.serves) == ("fd00::5", 4000, True)
    with pytest.raises(job.JobError, match="XRT2PJRT_RENDEZVOUS_ADDR='nowhere' is not host:port"):
        job.from_env({settings.RENDEZVOUS_ADDR.name: "nowhere"})
    assert job.from_env({"MASTER_PORT": "29500"}).store_port == 29501
    assert job.from_env({"MASTER_PORT": "29500", settings.RENDEZVOUS_PORT.name: "4100"}).store_port == 4100


def test_a_pod_without_a_secret_is_told_what_to_set():
    pod = job.from_env({**V4_16, "TPU_WORKER_ID": "1"})
    with pytest.raises(job.JobError, match="XRT2PJRT_JOB_SECRET to the same random value on every host"):
        job.secret(pod, env={})
    assert job.secret(pod, env={settings.JOB_SECRET.name: "s" * 20}) == b"s" * 20


DERIVED = "import sys; from xrt2pjrt.shim import job; print(job.secret(job.from_env({'RANK': '1', 'WORLD_SIZE': '2', 'LOCAL_RANK': '1'}), env={}).decode())"


def _children_secrets(parent_code: str, home) -> list[str]:
    env = {**os.environ, "PYTHONPATH": ROOT, "HOME": str(home)}
    env.pop("XDG_RUNTIME_DIR", None)
    done = subprocess.run([sys.executable, "-c", parent_code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_on_one_host_the_children_of_one_parent_share_a_secret_no_one_else_has(tmp_path):
    parent = f"import subprocess, sys\nfor _ in range(2): subprocess.run([sys.executable, '-c', {DERIVED!r}])\n"
    first = _children_secrets(parent, tmp_path)
    second = _children_secrets(parent, tmp_path)
    assert len(first) == 2 and first[0] == first[1]  # one parent: one job, one secret
    assert second[0] == second[1] != first[0]  # another parent: another job
    key = tmp_path / ".cache" / "xrt2pjrt" / "job-key" / "key"
    assert oct(key.stat().st_mode & 0o777) == "0o600" and oct(key.parent.stat().st_mode & 0o777) == "0o700"
    other_user = tmp_path / "other"
    assert _children_secrets(parent, other_user)[0] != first[0]  # another user's key: another secret


def test_the_results_cache_made_first_leaves_the_key_private(tmp_path):
    # a first `migrate` makes ~/.cache/xrt2pjrt for its results cache, readable by others: the
    # shim's key then still goes in a folder only its user may enter, and jobs still meet
    (tmp_path / ".cache" / "xrt2pjrt" / "v1").mkdir(parents=True)
    (tmp_path / ".cache" / "xrt2pjrt").chmod(0o755)
    parent = f"import subprocess, sys\nfor _ in range(2): subprocess.run([sys.executable, '-c', {DERIVED!r}])\n"
    first = _children_secrets(parent, tmp_path)
    assert len(first) == 2 and first[0] == first[1]
    assert oct((tmp_path / ".cache" / "xrt2pjrt" / "job-key").stat().st_mode & 0o777) == "0o700"
