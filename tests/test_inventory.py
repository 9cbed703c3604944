"""migrate --inventory: every torch_xla name, setting, launcher and install line a project
holds, each with what became of it (rewritten, reported, unchanged on the target, or
unknown with why), in the text output, the JSON and the --report."""

from __future__ import annotations

import json

from cli_runner import invoke
from xrt2pjrt.inventory import STATUSES, prose_lines, seen_in

TRAIN = """\
# launched with xla_dist on a TPU node (XRT_TPU_CONFIG)
import os
import torch_xla.core.xla_model as xm

os.environ['XLA_USE_FP16'] = '1'
os.environ['XLA_IR_DEBUG'] = '1'
os.environ['TPU_STDERR_LOG_LEVEL'] = '0'


def main():
    device = xm.xla_device()
    print(xm.get_ordinal())
    xm.optimizer_step(opt)
"""
RUN = """\
#!/bin/bash
pip install torch==1.12.0 torch_xla==2.9.0
python3 -m torch_xla.distributed.xla_dist --tpu=pod -- python3 train.py
gcloud compute tpus tpu-vm ssh pod --worker=all --command="python3 train.py"
"""


def _inventory(tmp_path, *options):
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "run.sh").write_text(RUN)
    result = invoke(["migrate", str(tmp_path), "--inventory", "--output-format", "json", *options])
    assert result.exit_code == 0, result.output
    return {(e["kind"], e["name"], e["status"]): e for e in json.loads(result.stdout)["inventory"]}


def test_every_kind_is_listed_with_its_status(tmp_path):
    found = _inventory(tmp_path)
    assert ("name", "torch_xla.core.xla_model.get_ordinal", "rewritten") in found
    assert ("name", "torch_xla.core.xla_model.optimizer_step", "unchanged") in found
    assert ("setting", "XLA_USE_FP16", "reported") in found
    assert ("setting", "XLA_IR_DEBUG", "unchanged") in found
    assert ("launcher", "xla_dist", "rewritten") in found  # the launch rewrite is a safe fix: xla_dist is gone
    assert ("launcher", "gcloud compute tpus tpu-vm ssh", "unchanged") in found
    assert ("install", "torch_xla==2.9.0", "unchanged") in found
    assert found[("name", "torch_xla.core.xla_model.get_ordinal", "rewritten")]["places"] == [
        f"{tmp_path / 'train.py'}:12"
    ]


def test_an_unknown_says_why(tmp_path):
    found = _inventory(tmp_path)
    unknown = {key: e for key, e in found.items() if key[2] == "unknown"}
    assert unknown and all(e["why"] for e in unknown.values())
    # libtpu's own variable: no torch_xla release reads it
    assert "no torch_xla release 1.13-2.9 reads it" in found[("setting", "TPU_STDERR_LOG_LEVEL", "unknown")]["why"]
    # a comment naming a retired variable is prose, which the rules leave as it is
    assert found[("setting", "XRT_TPU_CONFIG", "unknown")]["why"].startswith("in prose")
    assert ("install", "torch==1.12.0", "reported") in found  # beside torch_xla 2.9: install-xrt-era-release


def test_the_text_output_and_the_markdown_report(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    report = tmp_path / "report.md"
    result = invoke(["migrate", str(tmp_path / "train.py"), "--inventory", "--report", str(report)])
    assert result.exit_code == 0, result.output
    counts = next(line for line in result.stdout.splitlines() if line.startswith("inventory: "))
    assert all(status in counts for status in STATUSES)
    assert "## Inventory" in report.read_text() and "| rewritten | name | `torch_xla.core.xla_model.get_ordinal` |" in (
        report.read_text()
    )


def test_without_the_option_there_is_no_inventory(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    result = invoke(["migrate", str(tmp_path), "--output-format", "json"])
    assert "inventory" not in json.loads(result.stdout)


def test_names_through_every_import_form_and_prose_lines():
    text = (
        "from torch_xla.distributed import parallel_loader as pl\nimport torch_xla.runtime as xr\n"
        "loader = pl.MpDeviceLoader(data, dev)\nn = xr.world_size()\n"
    )
    names = {s.name for s in seen_in("t.py", text, "python") if s.kind == "name"}
    assert {
        "torch_xla.distributed.parallel_loader",
        "torch_xla.distributed.parallel_loader.MpDeviceLoader",
        "torch_xla.runtime",
        "torch_xla.runtime.world_size",
    } <= names
    assert prose_lines("markdown", "Set XLA_USE_BF16.\n```bash\nexport XLA_USE_BF16=1\n```\n") == {1}
    assert prose_lines("python", '"""Uses XLA_USE_BF16."""\nimport os  # XLA_USE_BF16\n# all\n') == {1, 3}
