"""``xrt2pjrt doctor``: the real CLI in a subprocess with a controlled environment.

TPU machines are mocked the way torch_xla's own tests mock them (``TPU_SKIP_MDS_QUERY``
plus ``TPU_ACCELERATOR_TYPE``, ``TPU_WORKER_ID``, ...), the PCI bus with a directory tree
and the metadata server with a function. One test runs doctor in an interpreter that
really has no torch_xla: site-packages is off (``python -S``) and only a copy of its
listing without torch_xla is on the path.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from xrt2pjrt import xrt_variables
from xrt2pjrt.runtime import doctor

ROOT = Path(__file__).resolve().parents[2]
_XLA_SPEC = importlib.util.find_spec("torch_xla")
TORCH_XLA_DIR = Path(_XLA_SPEC.origin).parent if _XLA_SPEC else None

# Variables that describe the machine: none of the test runner's own reach the doctor.
_MACHINE = ("XRT_", "TPU", "PJRT_", "CPU_NUM_DEVICES", "CLOUD_TPU", "GCE_", "MASTER_")


def clean_env(**values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_MACHINE)}
    env["PYTHONPATH"] = str(ROOT)
    env.update(values)
    return env


def tpu_env(accelerator: str, worker: int = 0, hostnames: str | None = None, **extra: str) -> dict[str, str]:
    values = {
        "TPU_SKIP_MDS_QUERY": "1",
        "TPU_ACCELERATOR_TYPE": accelerator,
        "TPU_WORKER_ID": str(worker),
        "PJRT_DEVICE": "TPU",
    }
    if hostnames:
        values["TPU_WORKER_HOSTNAMES"] = hostnames
    values.update(extra)
    return clean_env(**values)


def run_doctor(env: dict[str, str], *args: str, python: tuple[str, ...] = (sys.executable,)):
    return subprocess.run(
        [*python, "-m", "xrt2pjrt", "doctor", *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def doctor_json(env: dict[str, str]) -> tuple[dict, int]:
    result = run_doctor(env, "--json")
    assert result.stdout, result.stderr
    return json.loads(result.stdout), result.returncode


# --- the topology of every TPU generation -------------------------------------------------
# accelerator, worker, hostnames, extra env -> hosts, processes/host, devices/process, world, task ids
GENERATIONS = [
    ("v2-8", 0, None, {}, 1, 4, 2, 8, [0, 1, 2, 3]),
    ("v3-8", 0, None, {}, 1, 4, 2, 8, [0, 1, 2, 3]),
    ("v3-32", 2, "h0,h1,h2,h3", {}, 4, 4, 2, 32, [8, 9, 10, 11]),
    ("v4-8", 0, None, {"TPU_HOST_BOUNDS": "1,1,1", "TPU_CHIPS_PER_HOST_BOUNDS": "2,2,1"}, 1, 4, 1, 4, [0, 1, 2, 3]),
    ("v4-16", 1, "a,b", {"TPU_HOST_BOUNDS": "1,1,2", "TPU_CHIPS_PER_HOST_BOUNDS": "2,2,1"}, 2, 4, 1, 8, [4, 5, 6, 7]),
    ("v5litepod-4", 0, None, {}, 1, 4, 1, 4, [0, 1, 2, 3]),
    ("v5litepod-8", 0, None, {}, 1, 8, 1, 8, list(range(8))),
    ("v5litepod-16", 3, "w0,w1,w2,w3", {}, 4, 4, 1, 16, [12, 13, 14, 15]),
    ("v5p-8", 0, None, {}, 1, 4, 1, 4, [0, 1, 2, 3]),
    ("v5p-32", 1, "p0,p1,p2,p3", {}, 4, 4, 1, 16, [4, 5, 6, 7]),
    ("v6e-8", 0, None, {}, 1, 8, 1, 8, list(range(8))),
    ("v6e-16", 2, "e0,e1,e2,e3", {}, 4, 4, 1, 16, [8, 9, 10, 11]),
]


@pytest.mark.parametrize(
    "accelerator,worker,hostnames,extra,hosts,processes,devices,world,tasks",
    GENERATIONS,
    ids=[g[0] + f"-worker{g[1]}" for g in GENERATIONS],
)
def test_json_topology_for_each_tpu_generation(
    accelerator, worker, hostnames, extra, hosts, processes, devices, world, tasks
):
    record, _ = doctor_json(tpu_env(accelerator, worker, hostnames, **extra))
    topology = record["topology"]
    assert topology["accelerator"] == accelerator
    assert (topology["hosts"], topology["worker_id"]) == (hosts, worker)
    assert (topology["processes_per_host"], topology["devices_per_process"]) == (processes, devices)
    assert topology["world_size"] == world
    assert topology["local_process_task_ids"] == tasks
    assert record["topology_source"] == "environment"
    assert record["xrt_env_leftovers"] == []


def test_v4_16_worker_1_example_from_the_issue_in_text_and_json():
    env = clean_env(
        TPU_SKIP_MDS_QUERY="1",
        TPU_ACCELERATOR_TYPE="v4-16",
        TPU_WORKER_ID="1",
        TPU_WORKER_HOSTNAMES="a,b",
        TPU_HOST_BOUNDS="1,1,2",
        TPU_CHIPS_PER_HOST_BOUNDS="2,2,1",
    )
    record, _ = doctor_json(env)
    assert {
        k: record["topology"][k]
        for k in ("hosts", "processes_per_host", "devices_per_process", "world_size", "local_process_task_ids")
    } == {
        "hosts": 2,
        "processes_per_host": 4,
        "devices_per_process": 1,
        "world_size": 8,
        "local_process_task_ids": [4, 5, 6, 7],
    }
    text = run_doctor(env).stdout
    assert "world size           8 = 2 × 4 × 1" in text
    assert "task ids here        4–7" in text
    assert "hosts                2 (a, b)" in text


def test_xrt_leftovers_are_each_listed_with_their_replacement_and_exit_1():
    env = tpu_env(
        "v3-8",
        XRT_TPU_CONFIG="localservice;0;localhost:51011",
        XRT_SHARD_ORDINAL="3",
        XRT_MESH_SERVICE_ADDRESS="localhost:53010",
        TPU_NUM_DEVICES="8",
        TPUVM_MODE="1",
    )
    record, code = doctor_json(env)
    assert code == doctor.EXIT_MUST_FIX
    leftovers = {entry["name"]: entry for entry in record["xrt_env_leftovers"]}
    assert set(leftovers) == {
        "XRT_TPU_CONFIG",
        "XRT_SHARD_ORDINAL",
        "XRT_MESH_SERVICE_ADDRESS",
        "TPU_NUM_DEVICES",
        "TPUVM_MODE",
    }
    assert leftovers["XRT_TPU_CONFIG"]["value"] == "localservice;0;localhost:51011"
    assert "PJRT_DEVICE=TPU" in leftovers["XRT_TPU_CONFIG"]["replacement"]
    assert "global_ordinal" in leftovers["XRT_SHARD_ORDINAL"]["replacement"]
    assert "TPU_PROCESS_BOUNDS" in leftovers["TPU_NUM_DEVICES"]["replacement"]
    text = run_doctor(env).stdout
    for name in leftovers:
        assert f"unset {name}" in text
    assert "ignored since torch_xla 2.1" in text


def test_a_leftover_device_map_is_named_by_its_value():
    assert (
        "PJRT_DEVICE=CUDA"
        in doctor.xrt_env_leftovers({"XRT_DEVICE_MAP": "GPU:0;/job:localservice/replica:0/task:0/device:XLA_GPU:0"})[
            0
        ].replacement
    )
    assert (
        "remote TPU node" in doctor.xrt_env_leftovers({"XRT_TPU_CONFIG": "tpu_worker;0;10.0.0.2:8470"})[0].replacement
    )


def test_xrt_tpu_config_without_pjrt_device_says_the_runtime_will_fall_back_to_cpu():
    record, code = doctor_json(clean_env(XRT_TPU_CONFIG="localservice;0;localhost:51011"))
    assert code == doctor.EXIT_MUST_FIX
    assert record["runtime_device"]["device"] == "CPU"  # no TPU chips on this machine's PCI bus
    assert record["runtime_device"]["explicit"] is False
    assert any(
        "XRT_TPU_CONFIG asks for a TPU" in p["message"] and p["fix"] == "set PJRT_DEVICE=TPU"
        for p in record["problems"]
    )


def test_shell_set_task_id_would_be_shared_by_every_process():
    record, code = doctor_json(tpu_env("v4-8", CLOUD_TPU_TASK_ID="0", TPU_VISIBLE_CHIPS="0"))
    assert code == doctor.EXIT_MUST_FIX
    assert any(
        "CLOUD_TPU_TASK_ID, TPU_VISIBLE_CHIPS" in p["message"] and "4 processes" in p["message"]
        for p in record["problems"]
    )


def test_one_chip_by_process_bounds_is_the_documented_way_and_not_a_problem():
    record, _ = doctor_json(tpu_env("v4-8", TPU_PROCESS_BOUNDS="1,1,1", TPU_VISIBLE_CHIPS="0"))
    assert record["topology"]["processes_per_host"] == 1
    assert not any("TPU_VISIBLE_CHIPS" in p["message"] for p in record["problems"])


def test_unreadable_tpu_description_must_be_fixed():
    record, code = doctor_json(tpu_env("v9-8"))
    assert code == doctor.EXIT_MUST_FIX
    assert record["topology"] is None
    assert any("unknown TPU generation" in p["message"] for p in record["problems"])


@pytest.mark.xla  # healthy needs torch and torch_xla of one release installed
def test_healthy_cpu_environment_exits_0():
    result = run_doctor(clean_env(PJRT_DEVICE="CPU"))
    assert result.returncode == doctor.EXIT_HEALTHY, result.stdout
    assert "Healthy." in result.stdout
    assert "no TPU described" in result.stdout


def test_off_gce_without_skip_flag_never_waits_for_the_metadata_server():
    started = time.monotonic()
    result = run_doctor(clean_env(PJRT_DEVICE="CPU"), "--json")
    assert time.monotonic() - started < 20
    assert json.loads(result.stdout)["topology"] is None


def _site_without_torch_xla(tmp_path: Path) -> Path:
    """A directory listing this interpreter's site-packages minus torch_xla and libtpu."""
    import pathspec

    site = Path(pathspec.__file__).resolve().parent.parent
    mirror = tmp_path / "site"
    mirror.mkdir()
    for entry in site.iterdir():
        if entry.name.lower().startswith(("torch_xla", "torch-xla", "_xlac", "libtpu", "__editable__", "xrt2pjrt")):
            continue
        if entry.suffix == ".pth":
            continue
        (mirror / entry.name).symlink_to(entry)
    return mirror


def test_works_where_torch_xla_is_not_installed(tmp_path):
    env = tpu_env("v5p-8")
    env["PYTHONPATH"] = os.pathsep.join([str(_site_without_torch_xla(tmp_path)), str(ROOT)])
    python = (sys.executable, "-S")  # no site-packages: only the listing above
    probe = subprocess.run([*python, "-c", "import torch_xla"], env=env, capture_output=True, text=True)
    assert "No module named 'torch_xla'" in probe.stderr  # the isolation is real

    result = run_doctor(env, "--json", python=python)
    record = json.loads(result.stdout)
    assert record["versions"]["torch_xla"] is None
    assert record["topology"]["world_size"] == 4
    assert result.returncode == doctor.EXIT_MUST_FIX
    assert any(p["message"] == "torch_xla is not installed" for p in record["problems"])
    assert "torch_xla   absent" in run_doctor(env, python=python).stdout


def test_doctor_never_imports_torch():
    code = (
        "import sys\nfrom xrt2pjrt.cli import main\n"
        "main(['doctor', '--json'])\n"
        "print('torch' in sys.modules, 'torch_xla' in sys.modules, file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=tpu_env("v4-8"), cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.stderr.strip().splitlines()[-1] == "False False"


# --- in-process: the parts the CLI cannot reach on this machine ---------------------------
def _pci(tmp_path: Path, *devices: tuple[str, str]) -> str:
    for number, (vendor, device) in enumerate(devices):
        slot = tmp_path / "pci" / f"0000:00:0{number}.0"
        slot.mkdir(parents=True)
        (slot / "vendor").write_text(vendor + "\n")
        (slot / "device").write_text(device + "\n")
    return str(tmp_path / "pci")


def test_unset_pjrt_device_with_libtpu_and_chips_picks_tpu(tmp_path):
    bus = _pci(tmp_path, *[("0x1ae0", "0x005e")] * 4, ("0x8086", "0x005e"))
    choice = doctor.runtime_device({"TPU_LIBRARY_PATH": "/lib/libtpu.so"}, {"libtpu": None}, bus)
    assert (choice.device, choice.explicit) == ("TPU", False)
    assert "4 TPU chips" in choice.reason


def test_chips_without_libtpu_fall_back_to_cpu_and_say_why(tmp_path):
    bus = _pci(tmp_path, ("0x1ae0", "0x0063"))
    choice = doctor.runtime_device({}, {"libtpu": None, "torch_xla": None}, bus)
    assert choice.device == "CPU"
    assert "no libtpu" in choice.reason


def test_select_default_device_off_leaves_no_device():
    diagnosis = doctor.diagnose({"PJRT_SELECT_DEFAULT_DEVICE": "0"}, metadata=lambda key: None)
    assert diagnosis.device.device is None
    assert diagnosis.exit_code == doctor.EXIT_MUST_FIX


def test_pjrt_device_tpu_without_libtpu_must_be_fixed(monkeypatch):
    monkeypatch.setattr(doctor, "installed_versions", lambda: {"torch": "2.9.0", "torch_xla": None, "libtpu": None})
    problems = doctor.diagnose(
        {"PJRT_DEVICE": "TPU", "TPU_SKIP_MDS_QUERY": "1", "TPU_ACCELERATOR_TYPE": "v6e-8"}
    ).problems
    assert any("libtpu is not installed" in p.message for p in problems)


@pytest.mark.parametrize(
    "torch,torch_xla,mismatch,must_fix",
    [
        ("2.8.0", "2.9.0", True, True),
        ("2.9.1", "2.9.0+cpu", False, False),
        ("2.0.1", "2.0", False, True),  # one release, but torch_xla 2.0 still runs XRT
    ],
)
def test_torch_and_torch_xla_must_be_one_release(monkeypatch, torch, torch_xla, mismatch, must_fix):
    monkeypatch.setattr(doctor, "installed_versions", lambda: {"torch": torch, "torch_xla": torch_xla, "libtpu": None})
    problems = doctor.diagnose({"PJRT_DEVICE": "CPU"}).problems
    assert any("different releases" in p.message for p in problems) == mismatch
    assert any(p.must_fix for p in problems) == must_fix


# --- install hints: torch and torch_xla of one release, named together ----------------
# (torch_xla does not pull torch in: its wheel lists no torch among its requirements)


def _fixes(monkeypatch, tmp_path, torch, torch_xla, env, chips=0) -> list[str]:
    monkeypatch.setattr(doctor, "installed_versions", lambda: {"torch": torch, "torch_xla": torch_xla, "libtpu": None})
    bus = _pci(tmp_path, *[("0x1ae0", "0x005e")] * chips) if chips else str(tmp_path / "no-pci")
    return [p.fix for p in doctor.diagnose(env, metadata=lambda key: None, pci_devices=bus).problems]


@pytest.mark.parametrize(
    "torch,torch_xla,chips,hint",
    [
        # it said "pip install torch_xla (2.9: pip install 'torch_xla[tpu]==2.9.0' on a TPU VM)": no torch
        ("2.9.0", None, 0, "pip install torch==2.9.0 torch_xla==2.9.0"),
        (None, None, 4, "pip install torch==2.9.0 'torch_xla[tpu]==2.9.0'"),
        ("2.8.0", None, 0, "pip install torch==2.8.0 torch_xla==2.8.0"),  # the torch_xla of the torch there
        (None, "2.8.0", 0, "pip install torch==2.8.0 torch_xla==2.8.0"),  # it said "pip install torch==2.8.0"
        ("2.8.0", "2.9.0+cpu", 0, "pip install torch==2.9.0 torch_xla==2.9.0"),  # different releases: the newer
        ("2.10.0", None, 0, "pip install torch==2.9.0 torch_xla==2.9.0"),  # past the target: the target
        ("1.13.1", "1.13", 4, "pip install torch==2.9.0 'torch_xla[tpu]==2.9.0'"),  # XRT: it said "upgrade to 2.1"
    ],
)
def test_an_install_hint_names_torch_and_torch_xla_of_one_release(monkeypatch, tmp_path, torch, torch_xla, chips, hint):
    assert hint in _fixes(monkeypatch, tmp_path, torch, torch_xla, {"PJRT_DEVICE": "CPU"}, chips)


def test_libtpu_missing_on_a_tpu_is_installed_with_torch_and_torch_xla(monkeypatch, tmp_path):
    """It said pip install 'torch_xla[tpu]': no torch, no version."""
    hint = "pip install torch==2.9.0 'torch_xla[tpu]==2.9.0'"
    assert hint in _fixes(
        monkeypatch,
        tmp_path,
        "2.9.0",
        "2.9.0",
        {"PJRT_DEVICE": "TPU", "TPU_SKIP_MDS_QUERY": "1", "TPU_ACCELERATOR_TYPE": "v6e-8"},
    )
    bus = _pci(tmp_path, ("0x1ae0", "0x0063"))
    choice = doctor.runtime_device({}, {"torch": "2.9.0", "torch_xla": "2.9.0", "libtpu": None}, bus)
    assert f"no libtpu ({hint})" in choice.reason


def test_metadata_fills_the_topology_when_the_environment_is_silent():
    answers = {
        "tpu-env": "ACCELERATOR_TYPE: 'v4-16'\nWORKER_ID: '1'\nHOST_BOUNDS: '1,1,2'\nCHIPS_PER_HOST_BOUNDS: '2,2,1'\n",
        "worker-network-endpoints": "h0:u0:10.0.0.1,h1:u1:10.0.0.2",
    }
    diagnosis = doctor.diagnose({"PJRT_DEVICE": "TPU"}, metadata=answers.get)
    assert diagnosis.topology_source == "GCE metadata"
    assert diagnosis.topology.local_process_task_ids == [4, 5, 6, 7]
    assert diagnosis.topology.hostnames == ("10.0.0.1", "10.0.0.2")


def test_skip_mds_query_and_off_gce_never_ask_the_metadata_server(monkeypatch):
    def refuse(key, timeout=0.5):
        raise AssertionError("metadata server asked")

    monkeypatch.setattr(doctor.topology_module, "gce_metadata", refuse)
    monkeypatch.setattr(doctor, "on_gce", lambda: False)
    assert doctor.diagnose({"PJRT_DEVICE": "CPU"}).topology is None
    monkeypatch.setattr(doctor, "on_gce", lambda: True)
    assert doctor.diagnose(tpu_env("v5p-8")).topology.world_size == 4


def test_on_gce_reads_the_dmi_product_name(tmp_path):
    name = tmp_path / "product_name"
    name.write_text("Google Compute Engine\n")
    assert doctor.on_gce(str(name))
    name.write_text("Standard PC (Q35 + ICH9, 2009)\n")
    assert not doctor.on_gce(str(name))
    assert not doctor.on_gce(str(tmp_path / "absent"))


# --- the tables, against the installed torch_xla ------------------------------------------
@pytest.mark.xla
def test_tpu_pci_ids_are_torch_xla_29s():
    tree = ast.parse((TORCH_XLA_DIR / "_internal" / "tpu.py").read_text())
    values = {
        node.targets[0].id: ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id in ("_TPU_PCI_DEVICE_IDS", "_GOOGLE_PCI_VENDOR_ID")
    }
    assert tuple(values["_TPU_PCI_DEVICE_IDS"]) == doctor.TPU_PCI_DEVICE_IDS
    assert values["_GOOGLE_PCI_VENDOR_ID"] == doctor.GOOGLE_PCI_VENDOR_ID


@pytest.mark.xla
def test_no_leftover_is_read_by_the_installed_torch_xla():
    """What doctor calls ignored is ignored: no Python file of torch_xla reads it (its
    xla_env_vars only defines names) and its C++ library does not contain it."""
    names = [*xrt_variables.DEVICE_SETTINGS, *xrt_variables.RUNTIME_READS, *xrt_variables.UNPREFIXED, "XRT_"]
    for source in TORCH_XLA_DIR.rglob("*.py"):
        if source.name == "xla_env_vars.py":
            continue
        text = source.read_text(errors="replace")
        assert not [n for n in names if n in text], source
    library = next(TORCH_XLA_DIR.parent.glob("_XLAC*.so")).read_bytes()
    assert not [n for n in names if n.encode() in library]
