"""xrt2pjrt.shim.topology with mocked TPU environments, one per TPU generation.

Expected values follow torch_xla's own tests (test/pjrt/test_internal_tpu.py: v4-8,
v4-16 worker 1 -> task ids 4..7, v3-8) and the public slice shapes of each generation.
"""

import sys
import textwrap

import pytest

from xrt2pjrt.shim import topology
from xrt2pjrt.shim.topology import TopologyError


def env(accelerator, worker=0, hostnames=None, **extra):
    values = {"TPU_SKIP_MDS_QUERY": "1", "TPU_ACCELERATOR_TYPE": accelerator, "TPU_WORKER_ID": str(worker)}
    if hostnames:
        values["TPU_WORKER_HOSTNAMES"] = ",".join(hostnames)
    values.update(extra)
    return values


# accelerator, env extras -> hosts, processes per host, devices per process, world size
GENERATIONS = [
    ("v2-8", {}, 1, 4, 2, 8),
    ("v2-32", {}, 4, 4, 2, 32),
    ("v3-8", {}, 1, 4, 2, 8),
    ("v3-32", {}, 4, 4, 2, 32),
    ("v3-2048", {}, 256, 4, 2, 2048),
    ("v4-8", {"TPU_HOST_BOUNDS": "1,1,1", "TPU_CHIPS_PER_HOST_BOUNDS": "2,2,1"}, 1, 4, 1, 4),
    ("v4-16", {"TPU_HOST_BOUNDS": "1,1,2", "TPU_CHIPS_PER_HOST_BOUNDS": "2,2,1"}, 2, 4, 1, 8),
    ("v4-32", {}, 4, 4, 1, 16),
    ("v5litepod-1", {}, 1, 1, 1, 1),
    ("v5litepod-4", {}, 1, 4, 1, 4),
    ("v5litepod-8", {}, 1, 8, 1, 8),
    ("v5litepod-16", {}, 4, 4, 1, 16),
    ("v5e-256", {}, 64, 4, 1, 256),
    ("v5p-8", {}, 1, 4, 1, 4),
    ("v5p-128", {}, 16, 4, 1, 64),
    ("v6e-8", {}, 1, 8, 1, 8),
    ("v6e-16", {}, 4, 4, 1, 16),
    ("v6e-256", {"TPU_HOST_BOUNDS": "8,8,1", "TPU_CHIPS_PER_HOST_BOUNDS": "2,2,1"}, 64, 4, 1, 256),
]


@pytest.mark.parametrize("accelerator,extra,hosts,processes,devices,world", GENERATIONS)
def test_every_generation_lays_out_hosts_processes_and_devices(accelerator, extra, hosts, processes, devices, world):
    topo = topology.from_env(env(accelerator, **extra))
    assert (topo.hosts, topo.processes_per_host, topo.devices_per_process) == (hosts, processes, devices)
    assert topo.world_size == world
    assert len(topo.placements()) == world


def test_v4_16_worker_1_runs_task_ids_4_to_7_like_torch_xla():
    topo = topology.from_env(
        env(
            "v4-16",
            worker=1,
            hostnames=["10.130.0.31", "10.130.0.30"],
            TPU_HOST_BOUNDS="1,1,2",
            TPU_CHIPS_PER_HOST_BOUNDS="2,2,1",
        )
    )
    assert topo.local_process_task_ids == [4, 5, 6, 7]
    assert topo.hostnames == ("10.130.0.31", "10.130.0.30")
    where = topo.placement(5)
    assert (where.host, where.hostname, where.process, where.local_process, where.thread) == (1, "10.130.0.30", 5, 1, 0)


def test_v4_8_one_host_four_processes_one_device_each():
    topo = topology.from_env(env("v4-8"))
    assert topo.local_process_task_ids == [0, 1, 2, 3]
    assert [(p.process, p.thread, p.device, p.local_ordinal) for p in topo.placements()] == [
        (0, 0, "xla:0", 0),
        (1, 0, "xla:0", 1),
        (2, 0, "xla:0", 2),
        (3, 0, "xla:0", 3),
    ]


def test_v3_8_two_threads_per_process():
    topo = topology.from_env(env("v3-8"))
    assert topo.local_process_task_ids == [0, 1, 2, 3]
    placed = [(p.ordinal, p.process, p.thread, p.device, p.local_ordinal) for p in topo.placements()]
    assert placed[:4] == [(0, 0, 0, "xla:0", 0), (1, 0, 1, "xla:1", 1), (2, 1, 0, "xla:0", 2), (3, 1, 1, "xla:1", 3)]
    assert placed[-1] == (7, 3, 1, "xla:1", 7)


def test_v3_32_worker_2_owns_ordinals_16_to_23():
    topo = topology.from_env(env("v3-32", worker=2, hostnames=["a", "b", "c", "d"]))
    assert topo.local_process_task_ids == [8, 9, 10, 11]
    mine = [p.ordinal for p in topo.placements() if p.host == 2]
    assert mine == list(range(16, 24))
    assert {p.hostname for p in topo.placements() if p.host == 2} == {"c"}


def test_process_bounds_limit_processes_like_num_local_processes():
    # upstream docs: TPU_PROCESS_BOUNDS=1,1,1 TPU_VISIBLE_CHIPS=0 runs on one chip
    assert topology.from_env(env("v4-8", TPU_PROCESS_BOUNDS="1,1,1")).processes_per_host == 1
    assert topology.from_env(env("v4-8", TPU_PROCESS_BOUNDS="2,2,2")).processes_per_host == 4


def test_unknown_generation_needs_bounds():
    with pytest.raises(TopologyError, match="TPU_HOST_BOUNDS"):
        topology.from_env(env("v5abcdefg-16"))
    topo = topology.from_env(env("v5abcdefg-16", TPU_HOST_BOUNDS="1,1,2", TPU_CHIPS_PER_HOST_BOUNDS="2,2,1"))
    assert (topo.hosts, topo.processes_per_host, topo.devices_per_process) == (2, 4, 1)


@pytest.mark.parametrize(
    "bad,message",
    [
        (env("v4-8x"), "cannot parse"),
        (env("v4-16", worker=2, TPU_HOST_BOUNDS="1,1,2"), "worker id 2"),
        (env("v4-16", hostnames=["a", "b", "c"]), "3 worker hostnames"),
        (env("v4-8", TPU_HOST_BOUNDS="1,x,1"), "TPU_HOST_BOUNDS"),
        ({"TPU_SKIP_MDS_QUERY": "1"}, "no TPU here"),
    ],
)
def test_bad_environments_say_what_is_wrong(bad, message):
    with pytest.raises(TopologyError, match=message):
        topology.from_env(bad)


def test_metadata_fills_what_the_environment_leaves_out():
    answers = {
        "tpu-env": textwrap.dedent("""
            ACCELERATOR_TYPE: 'v4-16'
            CHIPS_PER_HOST_BOUNDS: '2,2,1'
            HOST_BOUNDS: '1,1,2'
            TPU_CHIPS_PER_PROCESS_BOUNDS: '2,2,1'
            TPU_PROCESS_BOUNDS: '1,1,2'
            WORKER_ID: '1'
        """),
        "worker-network-endpoints": "t1v-w-0:12345:10.130.0.31,t1v-w-1:12346:10.130.0.30",
    }
    asked = []

    def metadata(key):
        asked.append(key)
        return answers[key]

    topo = topology.from_env({}, metadata=metadata)
    assert asked == ["tpu-env", "worker-network-endpoints"]
    assert (topo.accelerator, topo.hosts, topo.worker_id) == ("v4-16", 2, 1)
    assert topo.hostnames == ("10.130.0.31", "10.130.0.30")
    # the metadata's TPU_PROCESS_BOUNDS counts hosts, not chips: it must not limit processes
    assert topo.processes_per_host == 4
    assert topo.local_process_task_ids == [4, 5, 6, 7]


def test_skip_mds_query_never_asks_the_metadata_server():
    def metadata(key):
        raise AssertionError("metadata server asked despite TPU_SKIP_MDS_QUERY")

    assert topology.from_env(env("v5p-8"), metadata=metadata).world_size == 4


def test_unreachable_metadata_server_answers_none_quickly(monkeypatch):
    import time

    monkeypatch.setattr(topology, "_METADATA_URL", "http://127.0.0.1:9/computeMetadata/")
    start = time.monotonic()
    assert topology.gce_metadata("tpu-env", timeout=0.2) is None
    assert time.monotonic() - start < 5


def test_importing_topology_does_not_import_torch():
    import subprocess

    code = "import xrt2pjrt.shim.topology, sys; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
