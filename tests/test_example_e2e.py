"""End to end on real torch_xla 2.9 with PJRT_DEVICE=CPU: the bundled XRT-era example
(examples/legacy_mnist/train.py) fails as written, and trains - its loss falls - after
`xrt2pjrt migrate --write`, for both targets. Every run is a real subprocess on a copy."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.xla, pytest.mark.slow]

EXAMPLE = Path(__file__).parents[1] / "examples" / "legacy_mnist"
LOSS = re.compile(r"^epoch (\d+) loss ([0-9.]+)$", re.MULTILINE)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XRT_", "PJRT_", "TPU_", "CPU_NUM"))}
    env["PJRT_DEVICE"] = "CPU"
    return env


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "legacy_mnist"
    shutil.copytree(EXAMPLE, target)
    return target


def _train(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "train.py", "--epochs", "3"],
        cwd=folder,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )


def _migrate(folder: Path, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "migrate", "--write", *options, str(folder)],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _losses(stdout: str) -> list[float]:
    return [float(loss) for _, loss in LOSS.findall(stdout)]


def test_example_fails_on_torch_xla_2_9_before_migration(tmp_path):
    run = _train(_copy(tmp_path))
    assert run.returncode != 0
    assert "Unsupported nprocs (8)" in run.stderr or "has no attribute 'get_ordinal'" in run.stderr, run.stderr[-2000:]


@pytest.mark.parametrize("target", ["native", "shim"])
def test_example_trains_after_migration(tmp_path, target):
    folder = _copy(tmp_path)
    migrated = _migrate(folder, "--target", target)
    assert migrated.returncode == 0, migrated.stderr
    code = (folder / "train.py").read_text()
    if target == "native":
        assert "xr.global_ordinal()" in code and "xm.get_ordinal()" not in code
        assert "xmp.spawn(_mp_fn, args=(parse_flags(),), start_method='fork')" in code
        assert "os.environ.setdefault('PJRT_DEVICE', 'TPU')" in code
    else:
        assert "import xrt2pjrt_shim.xla_model as xm" in code and "xm.get_ordinal()" in code
    run = _train(folder)
    assert run.returncode == 0, run.stderr[-3000:]
    losses = _losses(run.stdout)
    assert len(losses) == 3, run.stdout
    assert losses[-1] < losses[0] * 0.95, losses


def test_example_migrated_to_the_native_target_trains_on_4_cpu_replicas(tmp_path):
    """`xrt2pjrt run --nprocs 4`: torch_xla's own xmp.spawn starts 4 replicas, and torch_xla's
    own ordinals, optimizer_step, rendezvous, mesh_reduce and master_print see one world."""
    folder = _copy(tmp_path)
    assert _migrate(folder, "--target", "native").returncode == 0
    checkpoint = folder / "model.pt"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "xrt2pjrt",
            "run",
            "--nprocs",
            "4",
            "train.py",
            "--epochs",
            "3",
            "--checkpoint",
            str(checkpoint),
        ],
        cwd=folder,
        env={**_env(), "PYTHONPATH": str(EXAMPLE.parents[1])},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    losses = _losses(run.stdout)
    # one line per epoch: only ordinal 0 is the master (in a world of one, every replica would print)
    assert len(losses) == 3, run.stdout
    assert losses[-1] < losses[0] * 0.95, losses
    assert checkpoint.is_file()
