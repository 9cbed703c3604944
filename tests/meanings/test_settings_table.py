"""The settings table (xrt2pjrt/meanings/settings.py) against the installed torch_xla 2.9: the
variables it says 2.9 reads nowhere appear in none of its files (its Python and the
``_XLAC`` library, where every variable the C++ side reads is spelled out), GPU_NUM_DEVICES
runs on CPU, and every entry names a rule and a check that exist. The rules give their
advice from this table; a wrong entry is a false alarm or a silent miss."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from installed_names import naming
from xrt2pjrt import meanings
from xrt2pjrt.meanings import settings
from xrt2pjrt.registry import all_rules
from xrt2pjrt.text.installs import XRT_REMOVED, finding

REPO = Path(__file__).resolve().parents[2]
# Names the table says 2.9 reads nowhere: XRT's client settings, GPU_NUM_DEVICES, the TPU node's.
UNREAD_ON_2_9 = (*(name for name, _, _ in settings.XRT_CLIENT_ONLY), "GPU_NUM_DEVICES", "TPU_NAME", "TPU_IP_ADDRESS")
# Names 2.9 does read (torch_xla@v2.9.0 thread_pool.cpp:14, metrics.cpp:231, runtime.cpp:22): the search must find them.
READ_ON_2_9 = ("XLA_THREAD_POOL_SIZE", "XLA_METRICS_SAMPLES", "XLA_DUMP_FATAL_STACK")


@pytest.fixture(scope="module")
def installed():
    return naming([*UNREAD_ON_2_9, *READ_ON_2_9, "TPUVM_MODE"])


@pytest.mark.xla
def test_no_installed_torch_xla_file_names_the_xrt_only_variables(installed):
    assert {name: installed[name] for name in UNREAD_ON_2_9} == dict.fromkeys(UNREAD_ON_2_9, [])
    assert all(installed[name] for name in READ_ON_2_9), "the search finds names 2.9 reads"


@pytest.mark.xla
def test_tpuvm_mode_is_read_only_by_the_build(installed):
    """At run time 2.9 only names it (xla_env_vars.py); its build reads it (build_util.py:18 at v2.9.0)."""
    assert installed["TPUVM_MODE"] == [os.path.join("core", "xla_env_vars.py")]
    tree = ast.parse(
        (Path(importlib.util.find_spec("torch_xla").origin).parent / "core" / "xla_env_vars.py").read_text()
    )
    assert [
        n.targets[0].id
        for n in tree.body
        if isinstance(n, ast.Assign) and getattr(n.value, "value", None) == "TPUVM_MODE"
    ] == ["TPUVM_MODE"]


@pytest.mark.slow
@pytest.mark.xla
def test_gpu_num_devices_runs_on_cpu():
    """XRT took GPU_NUM_DEVICES for XLA:GPU and 2.1-2.8 for CUDA; 2.9 computes on CPU with it set."""
    env = {k: v for k, v in os.environ.items() if k != "PJRT_DEVICE"} | {"GPU_NUM_DEVICES": "4"}
    probe = (
        "import torch, torch_xla, torch_xla.runtime as xr\n"
        "t = torch.ones(2, device=torch_xla.device()) * 3\n"
        "print(xr.device_type(), t.device, t.sum().item())\n"
    )
    ran = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["CPU", "xla:0", "6.0"]


def test_runtime_versions_name_an_xrt_era_release():
    """tpu-vm-pt-1.13 and tpu-vm-v4-pt-1.13 hold torch_xla 1.13, older than the first release without XRT."""
    entry = meanings.of("tpu-vm-pt-1.13")
    version = tuple(int(part) for part in re.search(r"(\d+)\.(\d+)$", entry.name).groups())
    assert version < XRT_REMOVED
    for runtime in (
        "tpu-vm-pt-1.13",
        "tpu-vm-v4-pt-1.13",
        "--version=tpu-vm-pt-1.13",
        "RUNTIME_VERSION=tpu-vm-pt-1.13",
    ):
        assert "XRT-era torch_xla 1.13" in str(finding(runtime, (2, 9))), runtime
    assert finding("tpu-ubuntu2204-base", (2, 9)) is None


@pytest.mark.parametrize("entry", settings.MEANINGS, ids=lambda e: e.name)
def test_every_entry_names_a_rule_and_a_check_that_exist(entry):
    assert entry.action in all_rules(), f"{entry.name}: no rule {entry.action}"
    assert entry.under_xrt and entry.on_target and all(releases and meaning for releases, meaning in entry.on_target)
    for check in re.findall(r"run: ([\w/.]+\.py)(?:::(\w+))?", entry.checked):
        path, test = check
        assert (REPO / path).is_file(), f"{entry.name}: {path} does not exist"
        if test:
            assert re.search(rf"^def {test}\(", (REPO / path).read_text(), re.M), f"{entry.name}: no {path}::{test}"
    cited = re.findall(
        r"torch_xla@v\d+\.\d+\.\d+ [\w/.]+\.(?:py|cc|cpp):\d+",
        entry.under_xrt + entry.checked + " ".join(meaning for _, meaning in entry.on_target),
    )
    assert cited or "run: " in entry.checked, f"{entry.name}: cites neither a source line nor a run"


def test_each_reporting_rule_gives_the_table_s_advice():
    """The advice the rules write is the table's, for names the table has."""
    assert set(settings.ADVICE) <= {entry.name for entry in settings.MEANINGS}
