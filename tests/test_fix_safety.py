"""Fix safety is a gate, as in ruff: an unsafe fix is made only with --unsafe-fixes (or
``unsafe-fixes = true``). Without, it is reported as pending, leaves the text and writes no
TODO line, and counts as pending for --check; for every kind of file, by one mechanism
(the Python engine discards the hook's node, the text Recorder its edits)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from xrt2pjrt import rewriters
from xrt2pjrt.registry import Options, all_rules

LAUNCH = "python3 -m torch_xla.distributed.xla_dist --tpu=pod -- python3 train.py\n"
SPAWN = ("import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
         "xmp.spawn(_mp_fn, nprocs=flags.num_cores)\n")
RUN_MULTIPROCESS = "from torch_xla.experimental import pjrt\n\nresults = pjrt.run_multiprocess(fn, 1)\n"
NOTEBOOK = json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                                  "source": [f"!{LAUNCH}"]}],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5}) + "\n"

# kind, text, the unsafe rule, and a word its fix takes out of the text
CASES = [
    ("python", SPAWN, "spawn-nprocs-expression", "nprocs=flags.num_cores"),
    ("python", RUN_MULTIPROCESS, "pjrt-run-multiprocess", "pjrt.run_multiprocess"),
    ("shell", f"export XRT_TPU_CONFIG='localservice;0;localhost:51011'\n{LAUNCH}", "launch-xla-dist", "xla_dist"),
    ("dockerfile", f"FROM python:3.11\nRUN {LAUNCH}", "launch-xla-dist", "xla_dist"),
    ("yaml", f"steps:\n  - run: {LAUNCH}", "launch-xla-dist", "xla_dist"),
    ("markdown", f"```bash\n{LAUNCH}```\n", "launch-xla-dist", "xla_dist"),
    ("notebook", NOTEBOOK, "launch-xla-dist", "xla_dist"),
]


def _rewrite(kind: str, text: str, unsafe_fixes: bool):
    return rewriters.module_for(kind).rewrite(text, Options(rules=frozenset(all_rules()), unsafe_fixes=unsafe_fixes))


@pytest.mark.parametrize("kind, text, rule, word", CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_an_unsafe_fix_is_pending_without_unsafe_fixes_and_made_with_it(kind, text, rule, word):
    gated = _rewrite(kind, text, unsafe_fixes=False)
    made = _rewrite(kind, text, unsafe_fixes=True)
    assert all_rules()[rule].fix == "unsafe"
    assert word in gated.text and word not in made.text
    assert [(f.rule, f.fix.safety) for f in gated.changes if not f.fix.applied] == [(rule, "unsafe")]
    assert all(f.fix.applied for f in made.changes) and rule in {f.rule for f in made.changes}
    # nothing of the withheld fix is left in the text: no TODO line, no import it planned
    assert f"[{rule}]" not in gated.text
    assert "xrt2pjrt.shim" not in gated.text
    # the safe fixes are made either way (the shell's XRT_TPU_CONFIG; not the removal of an
    # import that only the unsafe fix leaves unused)
    assert {f.rule for f in gated.changes if f.fix.applied} <= {f.rule for f in made.changes if f.fix.safety == "safe"}
    if "XRT_TPU_CONFIG" in text:
        assert "export PJRT_DEVICE=TPU" in gated.text
    # and the gated text is stable: a second pass withholds the same fix again
    again = _rewrite(kind, gated.text, unsafe_fixes=False)
    assert again.text == gated.text and [f.rule for f in again.changes if not f.fix.applied] == [rule]


ROOT = Path(__file__).resolve().parent.parent


def _migrate(*args, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XRT_", "PJRT_", "NO_COLOR", "FORCE_COLOR"))}
    env["PYTHONPATH"] = str(ROOT)  # this checkout's code, wherever the tool is installed from
    return subprocess.run([sys.executable, "-m", "xrt2pjrt", "migrate", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=300)


def test_check_and_write_without_unsafe_fixes_report_the_fix_as_pending(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text(LAUNCH)
    check = _migrate("--check", "--report", tmp_path / "report.json", script, cwd=tmp_path)
    assert check.returncode == 1, check.stderr  # pending, though no file would change
    assert "pending [launch-xla-dist] xla_dist → gcloud" in check.stderr and "--unsafe-fixes" in check.stderr
    assert "0 would change (0 changes), 1 unsafe fix pending" in check.stderr
    record = json.loads((tmp_path / "report.json").read_text())
    assert [i["rule"] for i in record["files"][0]["pending"]] == ["launch-xla-dist"]
    assert record["files"][0]["changes"] == [] and record["summary"]["pending"] == 1
    written = _migrate("--write", script, cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    assert script.read_text() == LAUNCH  # nothing written, not even a TODO line
    made = _migrate("--write", "--unsafe-fixes", script, cwd=tmp_path)
    assert made.returncode == 0 and "gcloud compute tpus tpu-vm ssh pod --worker=all" in script.read_text()
    assert _migrate("--check", script, cwd=tmp_path).returncode == 0


def test_the_configuration_can_make_unsafe_fixes(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.xrt2pjrt]\nunsafe-fixes = true\n")
    (tmp_path / "run.sh").write_text(LAUNCH)
    assert _migrate("--write", "run.sh", cwd=tmp_path).returncode == 0
    assert "gcloud compute tpus tpu-vm ssh pod" in (tmp_path / "run.sh").read_text()
    (tmp_path / "pyproject.toml").write_text("[tool.xrt2pjrt]\nunsafe-fixes = 'yes'\n")
    bad = _migrate("--check", "run.sh", cwd=tmp_path)
    assert bad.returncode == 2 and "unsafe-fixes: must be true or false" in bad.stderr
