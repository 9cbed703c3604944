"""Settled stays settled: a spot the user decided, by replacing its TODO line with
``# xrt2pjrt: ignore[rule-id]``, or fixed as its TODO advises, is not reported again, and
``migrate --check`` passes. Real runs of the CLI on a tree of files."""

from __future__ import annotations

import json
import re

from test_cli import xrt2pjrt
from xrt2pjrt.registry import all_rules
from xrt2pjrt.settling import LEFT_BY_WRITE
from xrt2pjrt.suppress import Suppressions

SUFFIX = {"python": ".py", "shell": ".sh", "yaml": ".yaml"}
TODO = re.compile(r"^(\s*)# TODO\(xrt2pjrt\): .* \[([\w.-]+)\]$", re.M)


def _check(tree, detail: bool = False) -> tuple[int, list[tuple]]:
    """``migrate --check``'s exit code, and every item and change it reports (file, line, rule,
    and with ``detail`` its long text)."""
    ran = xrt2pjrt("migrate", "--check", "--output-format", "json", ".", cwd=tree)
    found = [
        (f["path"].rsplit("/", 1)[-1], item["range"]["start"]["line"], item["rule"], *[item["detail"]] * detail)
        for f in json.loads(ran.stdout)["files"]
        for item in f["manual"] + f["changes"]
    ]
    return ran.returncode, found


def test_every_todo_line_stays_open_until_settled_by_its_marker_or_deleted(tmp_path):
    """After --write, each TODO line is an item of --check until it is settled: replaced by
    its marker where its rule still reports the spot; deleted, once done, where it is about a
    fix made on its line (its rule no longer sees the spot: a marker there would settle
    nothing, and is itself an item)."""
    written = {}  # every rule's example that writes a TODO line, as a user gets it from --write
    for rule_id, rule in all_rules().items():
        for index, example in enumerate(rule.examples):
            if "TODO(xrt2pjrt)" in example.after and not example.options and rule.kind in SUFFIX:
                name = f"{re.sub(r'[^a-z0-9]', '_', rule_id)}_{index}{SUFFIX[rule.kind]}"
                (tmp_path / name).write_text(example.before)
                written[name] = rule_id
    assert xrt2pjrt("migrate", "--write", ".", cwd=tmp_path).returncode == 0
    todo_lines = {name: len(TODO.findall((tmp_path / name).read_text())) for name in written}
    code, items = _check(tmp_path, detail=True)
    assert code == 1 and len(items) >= sum(todo_lines.values()) > 20  # not one forgotten
    about_fixes = {(name, line) for name, line, _, detail in items if LEFT_BY_WRITE in detail}
    assert about_fixes, "some TODO lines are about a fix made on their line"
    for name in written:
        path = tmp_path / name
        lines = path.read_text().splitlines(keepends=True)
        for k, line in enumerate(lines):
            if TODO.match(line):
                below = next(j for j in range(k + 1, len(lines)) if not lines[j].lstrip().startswith("#")) + 1
                lines[k] = "" if (name, below) in about_fixes else TODO.sub(r"\1# xrt2pjrt: ignore[\2]", line)
        path.write_text("".join(lines))
    # (api-not-in-target and import-gone-module, which speak where no other rule did, keep quiet there too)
    assert _check(tmp_path) == (0, [])


def test_a_marker_above_a_statement_keeps_only_the_rules_it_names_off():
    marks = Suppressions(
        "# xrt2pjrt: ignore[manual-save-barrier]  read at the next run only\n# another comment\n"
        "xm.save(m, p)\n\nxm.save(m, p)\n"
    )
    assert marks.covers("manual-save-barrier", 3) and not marks.covers("api-xla-device", 3)
    assert not marks.covers("manual-save-barrier", 5)


HEAD = "import numpy as np\nimport torch_xla.core.xla_model as xm\n\n"
# Each manual rule's spot, and the same spot fixed as its TODO line advises.
FIXED_AS_ADVISED = {
    "manual-borrowed-alias": (
        "from tpu_utils import xm\n\nn = xm.xrt_world_size()\n",
        "import torch_xla.runtime as xr\n\nn = xr.world_size()\n",
    ),
    "manual-device-probe": (
        HEAD + "def has_tpu():\n    try:\n        _ = xm.xla_device()\n        return True\n"
        "    except RuntimeError:\n        return False\n",
        "import torch_xla.runtime as xr\n\ndef has_tpu():\n    return xr.device_type() == 'TPU'\n",
    ),
    "manual-memory-info": (
        HEAD + "free = xm.get_memory_info(device)['kb_free']\n",
        HEAD + "info = xm.get_memory_info(device)\nfree = (info['bytes_limit'] - info['bytes_used']) // 1024\n",
    ),
    "manual-mesh-reduce-objects": (
        HEAD + "from sklearn import metrics\n\nm = xm.mesh_reduce('m', metrics.confusion_matrix(y, p), np.sum)\n",
        HEAD + "from sklearn import metrics\n\n"
        "m = xm.mesh_reduce('m', metrics.confusion_matrix(y, p).tolist(), np.sum)\n",
    ),
    "manual-mp-model-wrapper": (
        "import torch_xla.distributed.xla_multiprocessing as xmp\n\nWRAPPED = xmp.MpModelWrapper(Net())"
        "\n\ndef _mp_fn(index):\n    model = WRAPPED.to(device)\n\nxmp.spawn(_mp_fn)\n",
        HEAD + "import torch_xla.distributed.xla_multiprocessing as xmp\n\ndef _mp_fn(index):\n"
        "    model = Net().to(device)\n    xm.broadcast_master_param(model)\n\nxmp.spawn(_mp_fn)\n",
    ),
    "manual-shared-model": (
        "import torch_xla.distributed.xla_multiprocessing as xmp\n\nMODEL = AutoModel.from_pretrained('m')\n\n"
        "def _mp_fn(index):\n    model = MODEL.to(device)\n\nxmp.spawn(_mp_fn)\n",
        HEAD + "import torch_xla.distributed.xla_multiprocessing as xmp\n\ndef _mp_fn(index):\n"
        "    model = AutoModel.from_pretrained('m').to(device)\n    xm.broadcast_master_param(model)\n\nxmp.spawn(_mp_fn)\n",
    ),
    "manual-import-stand-in": (
        "try:\n    import torch_xla.core.xla_model as xm\nexcept ImportError:\n    xm = Fake()\n\nxm.xla_device()\n",
        "try:\n    import torch_xla\nexcept ImportError:\n    torch_xla = Fake()\n\ntorch_xla.device()\n",
    ),
    "manual-module-as-value": (
        HEAD + "class Trainer:\n    def __init__(self):\n        self.tpu = xm\n",
        HEAD + "class Trainer:\n    def step(self, opt):\n        xm.optimizer_step(opt)\n",
    ),
    "manual-pjrt-other": (
        "from torch_xla.experimental import pjrt\n\npjrt.spawn_threads(fn)\n",
        "import torch_xla.distributed.xla_multiprocessing as xmp\n\nxmp.spawn(fn)\n",
    ),
    "manual-pre-1.0": (
        "import torch_xla_py.xla_model as xm\n\nn = xm.xrt_world_size()\n",
        "import torch_xla.runtime as xr\n\nn = xr.world_size()\n",
    ),
    "manual-rendezvous-subset": (
        HEAD + "xm.rendezvous('sync', b'', replicas=[0, 1])\n",
        HEAD + "xm.rendezvous('sync')\n",
    ),
    "manual-save-barrier": (
        HEAD + "xm.save(model.state_dict(), path)\nmodel.load_state_dict(torch.load(path))\n",
        HEAD + "xm.save(model.state_dict(), path)\nxm.rendezvous('saved')\nmodel.load_state_dict(torch.load(path))\n",
    ),
    "manual-saved-numpy": (
        HEAD + "auc = xm.mesh_reduce('auc', auc, np.mean)\nxm.save({'auc': auc}, path)\n",
        HEAD + "auc = xm.mesh_reduce('auc', auc, np.mean)\nxm.save({'auc': float(auc)}, path)\n",
    ),
    "manual-seeded-replicas": (
        "import torch\n" + HEAD + "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        "def _mp_fn(index):\n    torch.manual_seed(1)\n    model = Net().to(device)\n\n"
        "xmp.spawn(_mp_fn)\n",
        "import torch\n" + HEAD + "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        "def _mp_fn(index):\n    torch.manual_seed(1)\n    model = Net().to(device)\n"
        "    xm.broadcast_master_param(model)\n\nxmp.spawn(_mp_fn)\n",
    ),
    "manual-replica-global": (
        "import torch_xla\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        "def _mp_fn(index):\n    global device\n    device = torch_xla.device()\n\nxmp.spawn(_mp_fn)\n",
        "import torch_xla\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        "def _mp_fn(index):\n    device = torch_xla.device()\n\nxmp.spawn(_mp_fn)\n",
    ),
    "manual-shared-spawn-args": (
        "import copy\nimport torch_xla.runtime as xr\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        "def _mp_fn(index, args):\n    args.lr *= xr.world_size()\n\nxmp.spawn(_mp_fn, args=(args,))\n",
        "import copy\nimport torch_xla.runtime as xr\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        "def _mp_fn(index, args):\n    args = copy.copy(args)\n    args.lr *= xr.world_size()\n\n"
        "xmp.spawn(_mp_fn, args=(args,))\n",
    ),
    "manual-replica-model": (
        "import torch\n" + HEAD + "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        "def _mp_fn(index):\n    model = Net().to(device)\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n\n"
        "xmp.spawn(_mp_fn, start_method='fork')\n",
        "import torch\n" + HEAD + "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        "def _mp_fn(index):\n    model = Net().to(device)\n    xm.broadcast_master_param(model)\n"
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n\nxmp.spawn(_mp_fn, start_method='fork')\n",
    ),
    "manual-send-cpu-data-tensor": (
        HEAD + "c = xm.send_cpu_data_to_device(c, device)\nprint(c.shape)\n",
        HEAD + "c = xm.send_cpu_data_to_device(c, device)[0]\nprint(c.shape)\n",
    ),
    "manual-star-import": (
        "from torch_xla.core.xla_model import *\n\nn = xrt_world_size()\n",
        "import torch_xla.runtime as xr\n\nn = xr.world_size()\n",
    ),
    "manual-unused-marker": (HEAD + "n = 1  # xrt2pjrt: ignore[api-ordinal]\n", HEAD + "n = 1\n"),
    "manual-xla-dist": (
        "import subprocess\nimport torch_xla\n\nsubprocess.run(['python3', '-m', "
        "'torch_xla.distributed.xla_dist', '--tpu=p', '--', 'python3', 't.py'])\n",
        "import subprocess\nimport torch_xla\n\nsubprocess.run(['gcloud', 'compute', 'tpus', 'tpu-vm', "
        "'ssh', 'p', '--worker=all', '--command=python3 t.py'])\n",
    ),
}


def test_every_manual_rule_that_advises_a_fix_is_in_the_table():
    # manual-import-module's advice (migrate the uses of a module imported by string) leaves
    # the spot as it is: the user settles it with the marker
    manual = {rule_id for rule_id in all_rules() if rule_id.startswith("manual-")}
    assert manual - set(FIXED_AS_ADVISED) == {"manual-import-module"}


def test_a_spot_fixed_as_its_todo_advises_is_no_longer_reported(tmp_path):
    names = {rule_id: f"{re.sub(r'[^a-z0-9]', '_', rule_id)}.py" for rule_id in FIXED_AS_ADVISED}
    for rule_id, (spot, _) in FIXED_AS_ADVISED.items():
        (tmp_path / names[rule_id]).write_text(spot)
    code, found = _check(tmp_path)
    assert {rule for _, _, rule in found} >= set(FIXED_AS_ADVISED)  # each spot is reported as it stands
    for rule_id, (_, fixed) in FIXED_AS_ADVISED.items():
        (tmp_path / names[rule_id]).write_text(fixed)
    assert _check(tmp_path) == (0, [])
