"""The supported range, proven on the release GPU users stay on: torch_xla 2.8 (the last
with CUDA). The bundled example migrated with ``--target-version 2.8`` trains on a real
torch 2.8.0 + torch_xla 2.8.1 (PJRT_DEVICE=CPU), for both targets, and the shim's own
tests pass there.

That torch_xla lives in a venv of its own, named by XRT2PJRT_TORCH_XLA_28 (the path of its
python); .ci/run makes it (.venv28, ``pip install -e '.[xla28,dev]'``). Without it these
tests are skipped, saying so."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYTHON_28 = os.environ.get("XRT2PJRT_TORCH_XLA_28")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not PYTHON_28,
        reason="needs torch_xla 2.8 to run on: set XRT2PJRT_TORCH_XLA_28 to the python of "
        "a venv with torch 2.8.0 + torch_xla 2.8.1 (.ci/run makes .venv28)",
    ),
]
LOSS = re.compile(r"^epoch (\d+) loss ([0-9.]+)$", re.MULTILINE)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XRT_", "PJRT_", "TPU_", "CPU_NUM"))}
    env.update(PJRT_DEVICE="CPU", PYTHONPATH=str(ROOT))
    return env


def test_the_venv_named_runs_torch_2_8_and_torch_xla_2_8():
    ran = subprocess.run(
        [PYTHON_28, "-c", "import torch, torch_xla; print(torch.__version__, torch_xla.__version__)"],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr
    torch, torch_xla = ran.stdout.split()
    assert torch.startswith("2.8.") and torch_xla.startswith("2.8."), ran.stdout


@pytest.mark.parametrize("target", ["native", "shim"])
def test_the_example_migrated_for_2_8_trains_on_torch_xla_2_8(tmp_path, target):
    folder = tmp_path / "legacy_mnist"
    shutil.copytree(ROOT / "examples" / "legacy_mnist", folder)
    migrated = subprocess.run(
        [
            sys.executable,
            "-m",
            "xrt2pjrt",
            "migrate",
            "--write",
            "--target-version",
            "2.8",
            "--target",
            target,
            str(folder),
        ],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert migrated.returncode == 0, migrated.stderr
    run = subprocess.run(
        [PYTHON_28, "train.py", "--epochs", "3"], cwd=folder, env=_env(), capture_output=True, text=True, timeout=900
    )
    assert run.returncode == 0, run.stderr[-3000:]
    losses = [float(loss) for _, loss in LOSS.findall(run.stdout)]
    assert len(losses) == 3 and losses[-1] < losses[0] * 0.95, run.stdout


def test_the_shims_tests_pass_on_torch_xla_2_8():
    # the XRT-era xm surface: ordinals, collectives, rendezvous, mesh_reduce, save, spawn; and
    # the one world: every torch_xla name the CPU mode's tables replace is there with its signature,
    # and torch_xla's own API answers as on a pod in a run of 4 CPU replicas
    ran = subprocess.run(
        [
            PYTHON_28,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/shim/test_shim_xla_model.py",
            "tests/shim/test_shim_collective_args.py",
            "tests/shim/cpu/test_cpu_world.py",
        ],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=2400,
    )
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    assert " passed" in ran.stdout and "skipped" not in ran.stdout.splitlines()[-1], ran.stdout[-500:]
