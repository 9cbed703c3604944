"""Code that half-moved to PJRT on torch_xla 2.0-2.5 carries that era's idioms; migrated to
2.9 every later step applies to it too, as to XRT-era code: experimental.pjrt's names,
xr.using_pjrt(), pjrt://, 2.0's dynamo backend names, experimental.xla_sharding,
PJRT_DEVICE=GPU, the 2.0 pins. The inventory of such a project leaves nothing unknown."""

from __future__ import annotations

import json
import textwrap

from cli_runner import invoke

HALF_MOVED = textwrap.dedent("""\
    import os
    import torch
    import torch.distributed as dist
    import torch_xla.core.xla_model as xm
    import torch_xla.experimental.pjrt as pjrt
    import torch_xla.experimental.pjrt_backend
    import torch_xla.experimental.xla_sharding as xs
    import torch_xla.runtime as xr

    os.environ['PJRT_DEVICE'] = 'GPU'


    def _mp_fn(index):
        if not xr.using_pjrt():
            raise SystemExit('needs PJRT')
        dist.init_process_group('xla', init_method='pjrt://')
        device = xm.xla_device()
        mesh = xs.Mesh(list(range(pjrt.global_device_count())), (4, 2))
        model = torch.compile(Net().to(device), backend='torchxla_trace_once')
        xs.mark_sharding(model.weight, mesh, (0, 1))
        print(pjrt.local_ordinal(), xm.get_ordinal())
    """)


def _migrated(tmp_path):
    (tmp_path / "train.py").write_text(HALF_MOVED)
    (tmp_path / "requirements.txt").write_text("torch==2.0.0\ntorch_xla==2.0\n")
    result = invoke(["migrate", str(tmp_path), "--write", "--unsafe-fixes", "--inventory", "--output-format", "json"])
    assert result.exit_code == 0, result.output
    return (tmp_path / "train.py").read_text(), json.loads(result.stdout)


def test_every_idiom_of_the_2_0_to_2_5_era_is_migrated(tmp_path):
    code, run = _migrated(tmp_path)
    for gone in (
        "experimental.pjrt as pjrt",
        "using_pjrt",
        "pjrt://",
        "torchxla_trace_once",
        "experimental.xla_sharding",
        "'GPU'",
        "xm.get_ordinal",
        "xm.xla_device",
    ):
        assert gone not in code, gone
    for new in (
        "import torch_xla.distributed.spmd as xs",
        "xr.global_device_count()",
        "init_method='xla://'",
        "backend='openxla_eval'",
        "xr.local_ordinal(), xr.global_ordinal()",
        "torch_xla.device()",
    ):
        assert new in code, new
    compile(code, "train.py", "exec")
    rules = {m["rule"] for f in run["files"] for m in f["manual"]}
    assert rules == {"env-pjrt-device-gpu", "install-xrt-era-release"}  # no CUDA on 2.9; torch_xla 2.0 pinned


def test_its_inventory_leaves_nothing_unknown(tmp_path):
    _, run = _migrated(tmp_path)
    assert [e for e in run["inventory"] if e["status"] == "unknown"] == []
    names = {e["name"]: e["status"] for e in run["inventory"] if e["kind"] == "name"}
    assert names["torch_xla.experimental.xla_sharding.mark_sharding"] == "rewritten"  # through its import
    assert names["torch_xla.experimental.pjrt_backend"] == "unchanged"  # torch_xla 2.9 still has it
