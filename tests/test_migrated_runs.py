"""Done means it runs: an XRT-era program migrated by the default `migrate --write` (no other
option) runs on CPU replicas (`xrt2pjrt run`, real torch_xla 2.9 processes), and where it
crashes at a spot the migration marked, the run names that spot's item."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.xla, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent

# The shape of a 2021 Colab/Kaggle TPU kernel: its settings in a dict, the core count one of
# them, handed to the spawn as nprocs; a sampler sized by the world size; a mesh_reduce per epoch.
KERNEL = '''
import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp

FLAGS = {'num_cores': 8, 'batch_size': 4, 'epochs': 2, 'lr': 0.01, 'seed': 1234}


def _mp_fn(rank, flags):
    device = xm.xla_device()
    torch.manual_seed(flags['seed'])
    data = torch.utils.data.TensorDataset(torch.randn(64, 10), torch.randint(0, 2, (64,)))
    sampler = torch.utils.data.distributed.DistributedSampler(
        data, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal(), shuffle=True)
    loader = torch.utils.data.DataLoader(data, batch_size=flags['batch_size'], sampler=sampler, drop_last=True)
    model = nn.Linear(10, 2).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=flags['lr'] * xm.xrt_world_size())
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(flags['epochs']):
        para = pl.ParallelLoader(loader, [device])
        for x, y in para.per_device_loader(device):
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            xm.optimizer_step(optimizer)
        reduced = xm.mesh_reduce('loss', REDUCED, np.mean)
        xm.master_print(f'epoch {epoch} loss {reduced:.4f}')
    print(f'REPLICA {xm.get_ordinal()} OF {xm.xrt_world_size()}')


if __name__ == '__main__':
    xmp.spawn(_mp_fn, args=(FLAGS,), nprocs=FLAGS['num_cores'], start_method='fork')
'''


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XRT_", "XRT2PJRT_", "PJRT_", "CPU_NUM", "TPU_"))}
    env.update(PYTHONPATH=str(ROOT), XRT2PJRT_RENDEZVOUS_TIMEOUT="120")
    return env


def _xrt2pjrt(*words: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", *words], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600
    )


def _kernel(tmp_path: Path, reduced: str) -> Path:
    (tmp_path / "train.py").write_text(KERNEL.replace("REDUCED", reduced))
    return tmp_path / "train.py"


def test_a_2021_kernel_whose_core_count_is_a_flag_runs_on_4_replicas_after_the_default_write(tmp_path):
    _kernel(tmp_path, "loss.item()")
    before = _xrt2pjrt("run", "--nprocs", "4", "train.py", cwd=tmp_path)
    assert before.returncode != 0 and "Unsupported nprocs (8)" in before.stderr  # as on a TPU with 2.9
    migrated = _xrt2pjrt("migrate", "--write", ".", cwd=tmp_path)
    assert migrated.returncode == 0, migrated.stderr
    assert "nprocs=1 if FLAGS['num_cores'] == 1 else None" in (tmp_path / "train.py").read_text()
    ran = _xrt2pjrt("run", "--nprocs", "4", "train.py", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert sorted(re.findall(r"REPLICA (\d) OF (\d)", ran.stdout)) == [(str(k), "4") for k in range(4)]
    assert ran.stdout.count("epoch 1 loss") == 1  # the master's line, once


def test_a_crash_at_a_spot_the_migration_marked_names_its_item(tmp_path):
    """mesh_reduce of a numpy value: torch 2.6+ loads what it gathers with weights_only, and
    refuses numpy's scalar. The migration marked the spot; the run that crashes there says so."""
    train = _kernel(tmp_path, "np.mean([loss.item()])")
    assert _xrt2pjrt("migrate", "--write", ".", cwd=tmp_path).returncode == 0
    lines = train.read_text().splitlines()
    (spot,) = [k + 1 for k, line in enumerate(lines) if "xm.mesh_reduce(" in line]
    assert "[manual-mesh-reduce-objects]" in lines[spot - 2]
    ran = _xrt2pjrt("run", "--nprocs", "2", "train.py", cwd=tmp_path)
    assert ran.returncode == 1 and "UnpicklingError" in ran.stderr
    said = ran.stderr.strip().splitlines()
    assert (
        f"xrt2pjrt run: it stopped at a spot the migration marked to decide: train.py:{spot}: "
        "[manual-mesh-reduce-objects] pass a tensor or a Python number "
        "(xrt2pjrt rules manual-mesh-reduce-objects says why)"
    ) in said, said[-8:]
    # and, at the end, the run's word on that item: it saw the value that breaks
    assert said[-1].split()[:5] == ["confirmed", f"train.py:{spot}", "[manual-mesh-reduce-objects]", "got", "a"]
    assert "numpy.float64, which torch.load(weights_only=True) refuses" in said[-1], said[-8:]
