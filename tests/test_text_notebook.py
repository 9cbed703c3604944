"""The notebook rewriter: cells by kind, the JSON around them kept byte for byte."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from stand_ins.pod import Pod
from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt.text import notebook

FIXTURES = Path(__file__).parent / "fixtures" / "text" / "notebook"
ALL = Options(rules=frozenset(all_rules()))
BEFORE = (FIXTURES / "pod_training.ipynb").read_text()


def rewrite(text: str):
    return notebook.rewrite(text, ALL)


def _source(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def test_only_sources_change_and_the_layout_is_nbformats():
    after = rewrite(BEFORE).text
    old, new = json.loads(BEFORE), json.loads(after)
    assert old["metadata"] == new["metadata"] and old["nbformat_minor"] == new["nbformat_minor"]
    for a, b in zip(old["cells"], new["cells"], strict=True):
        assert {k: v for k, v in a.items() if k != "source"} == {k: v for k, v in b.items() if k != "source"}
    # the file is laid out exactly as nbformat (and Jupyter) writes it
    assert after == json.dumps(new, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def test_cells_by_kind():
    cells = json.loads(rewrite(BEFORE).text)["cells"]
    assert "export PJRT_DEVICE=TPU" in _source(cells[0])  # a code block in a Markdown cell
    assert _source(cells[1]).splitlines()[:2] == ["%env PJRT_DEVICE=TPU", "import os"]
    assert _source(cells[2]).splitlines()[2:4] == ["world = xr.world_size(", ")"]  # split across strings
    assert _source(cells[3]).startswith("TPU_NAME = 'my-pod'\n!gcloud compute tpus tpu-vm ssh $TPU_NAME")
    assert _source(cells[4]).startswith("%%bash\nexport PJRT_DEVICE=TPU\ngcloud ")
    assert cells[5] == json.loads(BEFORE)["cells"][5]


def test_findings_point_at_the_notebook_lines():
    outcome = rewrite(BEFORE)
    lines = BEFORE.splitlines()
    for finding in outcome.changes:
        source_line = lines[finding.line - 1]
        assert any(word in source_line for word in ("XRT_", "xla_dist", "xrt_world_size")), finding


def test_unchanged_notebook_is_byte_identical():
    nb = json.loads(BEFORE)
    nb["cells"] = [
        {**nb["cells"][0], "source": ["We no longer set XRT_TPU_CONFIG or call xla_dist.\n"]},
        {**nb["cells"][5], "source": ["import torch_xla\n", "print('XRT_TPU_CONFIG is gone')"]},
    ]
    text = json.dumps(nb, indent=3, separators=(",", " : "))  # an unusual layout, kept as it is
    outcome = rewrite(text)
    assert outcome.text == text and outcome.changes == []


def test_ascii_escapes_and_string_sources_are_kept():
    nb = json.loads(BEFORE)
    nb["cells"][2]["source"] = "".join(nb["cells"][2]["source"])  # some tools write one string
    text = json.dumps(nb, indent=2, ensure_ascii=True)
    after = rewrite(text).text
    assert after.isascii() and "\\u2013" in after
    assert json.loads(after)["cells"][2]["source"].startswith("import torch_xla.runtime as xr\n")
    assert after == json.dumps(json.loads(after), indent=2, ensure_ascii=True)


def test_cell_that_does_not_parse_is_reported_and_kept():
    nb = json.loads(BEFORE)
    nb["cells"][2]["source"] = ["import torch_xla.core.xla_model as xm\n", "xm.xrt_world_size(\n"]
    text = json.dumps(nb, indent=1)
    outcome = rewrite(text)
    assert json.loads(outcome.text)["cells"][2] == nb["cells"][2]
    assert any(f.rule == "notebook-cell" for f in outcome.manual)


def test_shell_lines_run_on_every_worker(tmp_path):
    cells = json.loads(rewrite(BEFORE).text)["cells"]
    bang = _source(cells[3]).split("!", 1)[1]
    pod = Pod(tmp_path)
    assert pod.run(["bash", "-c", bang], TPU_NAME="my-pod").returncode == 0  # IPython fills in $TPU_NAME
    assert [c.argv for (c,) in pod.calls().values()] == [["python3", "train.py", "--model", "vit b/16"]] * 4
    pod.clear()
    script = _source(cells[4]).split("\n", 1)[1]
    assert pod.run(["bash", "-c", script]).returncode == 0
    for (call,) in pod.calls().values():
        assert call.env["PJRT_DEVICE"] == "TPU" and call.env["XLA_USE_BF16"] == "1"
    assert "python3 ran on worker 0" in (pod.root / "log.txt").read_text()


@pytest.mark.xla
def test_rewritten_python_cell_runs_on_torch_xla_2_9(tmp_path):
    """The call that spanned two source strings now runs on PJRT (CPU, one replica)."""
    cell = _source(json.loads(rewrite(BEFORE).text)["cells"][2])
    ran = subprocess.run([sys.executable, "-c", cell], capture_output=True, text=True, timeout=300,
                         env={"PJRT_DEVICE": "CPU", "PATH": "/usr/bin:/bin"})
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.strip() == "world size: 1 – ✓"


def test_broken_json_is_a_source_error():
    with pytest.raises(notebook.SourceError):
        rewrite('{"cells": [ {"source": "XRT_TPU_CONFIG"')
    assert notebook.check("{not json") is not None


def test_writefile_cells_are_rewritten_as_the_file_they_write():
    nb = json.loads(BEFORE)
    nb["cells"] = [
        {**nb["cells"][4], "source": ["%%writefile run_pod.sh\n", "python3 -m torch_xla.distributed.xla_dist "
                                      "--tpu=pod -- python3 train.py\n"]},
        {**nb["cells"][4], "source": ["%%writefile -a job.yaml\n", "env:\n", "  - name: XRT_TPU_CONFIG\n",
                                      "    value: localservice\n"]},
        {**nb["cells"][4], "source": ["%%writefile notes.txt\n", "export XRT_TPU_CONFIG=x\n"]},
    ]
    text = json.dumps(nb, indent=1)
    outcome = rewrite(text)
    assert outcome.manual == []
    cells = json.loads(outcome.text)["cells"]
    assert _source(cells[0]) == ('%%writefile run_pod.sh\ngcloud compute tpus tpu-vm ssh pod --worker=all '
                                 '--command="PJRT_DEVICE=TPU python3 train.py"\n')
    assert _source(cells[1]) == "%%writefile -a job.yaml\nenv:\n  - name: PJRT_DEVICE\n    value: TPU\n"
    assert cells[2] == nb["cells"][2], "a file of no known kind is left alone"
