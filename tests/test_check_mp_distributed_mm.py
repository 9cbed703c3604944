"""tools/check_mp_distributed_mm.py on a stand-in of upstream's test (upstream code is not
committed here): a body behind the same ``xla_device_hw`` gate, which only runs on CPU replicas
because the tool makes the file's own call answer 'TPU'. It passes when the body's collective
holds on every replica, on both targets, and fails when the body fails."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

STAND_IN = """\
import sys
import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp


def _mp_fn(index):
  device = xm.xla_device()
  if xm.xla_device_hw(device) in ('TPU', 'GPU'):
    total = xm.all_reduce('sum', torch.ones(1, device=device))
    if total.item() != xm.xrt_world_size() + OFF:
      print('all_reduce produced wrong result', file=sys.stderr)
      sys.exit(1)
  else:
    print('Default device {} is not a TPU or GPU device'.format(device), file=sys.stderr)


if __name__ == '__main__':
  xmp.spawn(_mp_fn, nprocs=None)
"""


@pytest.mark.slow
@pytest.mark.xla
@pytest.mark.parametrize("off, verdict", [(0, "pass"), (1, "fail")])
def test_the_body_runs_on_every_replica_and_its_failure_fails_the_check(tmp_path, off, verdict):
    test = tmp_path / "test_mp_distributed_mm.py"
    test.write_text(STAND_IN.replace("OFF", str(off)))
    ran = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "check_mp_distributed_mm.py"), str(test), "--nprocs", "2"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    lines = ran.stdout.splitlines()
    assert [line.split(":")[:2] for line in lines if line.startswith(("native:", "shim:"))] == [
        ["native", f" {verdict}"],
        ["shim", f" {verdict}"],
    ], ran.stdout + ran.stderr
    assert ran.returncode == (0 if verdict == "pass" else 1)
    if verdict == "pass":
        assert lines[0].endswith("2 replicas ran the body, and the run exited 0")
