"""``xrt2pjrt run`` on a migrated script: the items to decide at the spots the run passed
through, confirmed or cleared by what the program itself did there (real CPU replicas,
torch_xla 2.9), and the others said not reached or not checked."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest

from xrt2pjrt.runtime import run_items
from test_run import _env

# A training script as `migrate --write` leaves it: TODO lines above the spots to decide. The
# first argument says which of its values the replicas hand on.
SCRIPT = '''
import sys
import numpy as np
import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import metrics


def _mp_fn(index, kind):
    device = torch_xla.device()
    step_loss = torch.full((3,), 0.25, device=device).mean()
    # TODO(xrt2pjrt): pass a tensor or a Python number [manual-mesh-reduce-objects]
    mean_loss = xm.mesh_reduce('loss', step_loss.item(), np.mean)
    if kind == 'numpy':
        # TODO(xrt2pjrt): pass a tensor or a Python number [manual-mesh-reduce-objects]
        auc = xm.mesh_reduce('auc', metrics.auc(index), np.mean)
    # TODO(xrt2pjrt): take [0] if this is one tensor [manual-send-cpu-data-tensor]
    moved = xm.send_cpu_data_to_device(
        {'tokens': torch.arange(4)} if kind != 'tensor' else torch.arange(4), device)
    print(f'moved {type(moved).__name__}', flush=True)  # one write: replicas share stdout


if __name__ == '__main__':
    # TODO(xrt2pjrt): keep XLA out of the launching process [spawn-runtime-before]
    xmp.spawn(_mp_fn, args=(sys.argv[1],), start_method=sys.argv[2])
'''

METRICS = '''
import numpy as np
import torch_xla.core.xla_model as xm


def auc(rank):
    return np.float64(0.5 + rank / 10)


def gathered(values):
    # TODO(xrt2pjrt): pass a tensor or a Python number [manual-mesh-reduce-objects]
    return xm.mesh_reduce('gathered', values, list)
'''


def test_an_item_is_the_statement_below_its_todo_lines(tmp_path):
    source = tmp_path / "train.py"
    source.write_text(
        "x = 1\n# TODO(xrt2pjrt): a [rule-a]\n# TODO(xrt2pjrt): b [rule-b]\n\n# a comment\n"
        "y = f(\n    x)\n# TODO(xrt2pjrt): c [rule-c]\n"
    )
    assert [(item.rule, item.message, item.first, item.last) for item in run_items.items_in(str(source))] == [
        ("rule-a", "a", 6, 7),
        ("rule-b", "b", 6, 7),
    ]  # a TODO line above nothing is no item


def _ran(tmp_path, *words):
    (tmp_path / "train.py").write_text(textwrap.dedent(SCRIPT))
    (tmp_path / "metrics.py").write_text(textwrap.dedent(METRICS))
    done = subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "run", "--nprocs", "2", "train.py", *words],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    said = done.stderr.partition("the items to decide of the code it ran, as the run saw them:\n")[2]
    return done, [
        list(verdict.groups())
        for line in said.splitlines()
        if (verdict := re.match(r"\s+(confirmed|cleared|not reached|not checked)\s+(\S+)", line))
    ]


@pytest.mark.xla
@pytest.mark.slow
@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_the_run_confirms_the_items_whose_trouble_it_met_and_clears_the_others(tmp_path, start_method):
    done, said = _ran(tmp_path, "numpy", start_method)
    # the numpy value stopped the replicas at mesh_reduce, as it does on a TPU
    assert done.returncode != 0 and "UnpicklingError" in done.stderr
    assert said == [
        ["cleared", "train.py:15"],
        ["confirmed", "train.py:18"],
        ["not reached", "train.py:20"],
        ["cleared", "train.py:27"],
        ["not reached", "metrics.py:12"],
    ], done.stderr[-3000:]
    assert "got a numpy.float64, which torch.load(weights_only=True) refuses (2 of 2 calls)" in done.stderr


@pytest.mark.xla
@pytest.mark.slow
def test_a_bare_tensor_sent_to_the_device_is_confirmed_and_a_dict_cleared(tmp_path):
    tensor, said = _ran(tmp_path, "tensor", "fork")
    assert tensor.returncode == 0, tensor.stderr[-3000:]
    assert ["confirmed", "train.py:20"] in said and "moved list" in tensor.stdout
    a_dict, said = _ran(tmp_path, "dict", "fork")
    assert ["cleared", "train.py:20"] in said and "moved dict" in a_dict.stdout


@pytest.mark.slow
@pytest.mark.xla
def test_a_launching_process_that_starts_the_runtime_first_confirms_the_spawns_item(tmp_path):
    (tmp_path / "early.py").write_text(
        "import torch_xla\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        "def _mp_fn(index):\n    pass\n\nDEVICE = torch_xla.device()\n\n"
        "# TODO(xrt2pjrt): move XLA calls into the spawned fn [spawn-runtime-before]\n"
        "xmp.spawn(_mp_fn, start_method='fork')\n"
        "# TODO(xrt2pjrt): use xr.world_size() at its reads [spawn-nprocs-expression]\nprint(8)\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "run", "--nprocs", "2", "early.py"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (
        "  confirmed    early.py:10 [spawn-runtime-before] the launching process started the XLA runtime before "
        "any spawn, at " in done.stderr
    ), done.stderr[-3000:]
    assert "  not checked  early.py:12 [spawn-nprocs-expression]" in done.stderr
