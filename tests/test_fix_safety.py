"""Fix safety, judged by XRT's own law: a fix is unsafe only where the code it changes still
runs on the target and the fix may change what it does. Code that cannot run on the target
(a removed module, a ValueError) is rewritten by the default --write wherever the rewrite
does what the old code did for every input it accepted.

The gate stays for what is truly unsafe, as in ruff: an unsafe fix is made only with
--unsafe-fixes (or ``unsafe-fixes = true``); without, it is reported as pending, leaves the
text and writes no TODO line, and counts as pending for --check; for every kind of file, by
one mechanism (the Python engine discards the hook's node, the text Recorder its edits).
No rule is unsafe today, so the gate's tests run a real rule made unsafe for the test
(``unsafe``, a simulation of a future rule)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_runner import invoke
from xrt2pjrt import codemod, rule_index
from xrt2pjrt.registry import Options, all_rules

LAUNCH = "python3 -m torch_xla.distributed.xla_dist --tpu=pod -- python3 train.py\n"
SPAWN = "import torch_xla.distributed.xla_multiprocessing as xmp\n\nxmp.spawn(_mp_fn, nprocs=flags.num_cores)\n"
RUN_MULTIPROCESS = "from torch_xla.experimental import pjrt\n\nresults = pjrt.run_multiprocess(fn, 1)\n"
NOTEBOOK = (
    json.dumps(
        {
            "cells": [
                {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": [f"!{LAUNCH}"]}
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )
    + "\n"
)

# kind, text, the rule whose fix was once unsafe, and a word its fix takes out of the text
CASES = [
    ("python", SPAWN, "spawn-nprocs-expression", "nprocs=flags.num_cores"),
    ("python", RUN_MULTIPROCESS, "pjrt-run-multiprocess", "pjrt.run_multiprocess"),
    ("shell", f"export XRT_TPU_CONFIG='localservice;0;localhost:51011'\n{LAUNCH}", "launch-xla-dist", "xla_dist"),
    ("dockerfile", f"FROM python:3.11\nRUN {LAUNCH}", "launch-xla-dist", "xla_dist"),
    ("yaml", f"steps:\n  - run: {LAUNCH}", "launch-xla-dist", "xla_dist"),
    ("markdown", f"```bash\n{LAUNCH}```\n", "launch-xla-dist", "xla_dist"),
    ("notebook", NOTEBOOK, "launch-xla-dist", "xla_dist"),
]
IDS = [f"{c[0]}-{c[2]}" for c in CASES]


def _rewrite(kind: str, text: str, unsafe_fixes: bool = False):
    return codemod.rewrite(kind, text, Options(rules=frozenset(all_rules()), unsafe_fixes=unsafe_fixes))


@pytest.mark.parametrize("kind, text, rule, word", CASES, ids=IDS)
def test_a_fix_of_code_the_target_cannot_run_is_made_by_default(kind, text, rule, word):
    done = _rewrite(kind, text)
    assert all_rules()[rule].fix == "safe"
    assert word not in done.text
    assert rule in {f.rule for f in done.changes} and all(f.fix.applied for f in done.changes)
    assert _rewrite(kind, text, unsafe_fixes=True).text == done.text  # --unsafe-fixes adds nothing


@pytest.fixture
def unsafe(monkeypatch):
    """Make ``rule`` unsafe for one test (a simulation: no rule is unsafe today)."""

    def make(rule: str) -> None:
        monkeypatch.setattr(all_rules()[rule], "fix", "unsafe")
        kind, _, summary = rule_index.RULES[rule]
        monkeypatch.setitem(rule_index.RULES, rule, (kind, "unsafe", summary))

    return make


@pytest.mark.parametrize("kind, text, rule, word", CASES, ids=IDS)
def test_an_unsafe_fix_is_pending_without_unsafe_fixes_and_made_with_it(unsafe, kind, text, rule, word):
    unsafe(rule)
    gated = _rewrite(kind, text, unsafe_fixes=False)
    made = _rewrite(kind, text, unsafe_fixes=True)
    assert word in gated.text and word not in made.text
    assert [(f.rule, f.fix.safety) for f in gated.changes if not f.fix.applied] == [(rule, "unsafe")]
    assert all(f.fix.applied for f in made.changes) and rule in {f.rule for f in made.changes}
    # nothing of the withheld fix is left in the text: no TODO line, no import it planned
    assert f"[{rule}]" not in gated.text
    assert "xrt2pjrt_shim" not in gated.text
    # the safe fixes are made either way (the shell's XRT_TPU_CONFIG; not the removal of an
    # import that only the unsafe fix leaves unused)
    assert {f.rule for f in gated.changes if f.fix.applied} <= {f.rule for f in made.changes if f.fix.safety == "safe"}
    if "XRT_TPU_CONFIG" in text:
        assert "export PJRT_DEVICE=TPU" in gated.text
    # and the gated text is stable: a second pass withholds the same fix again
    again = _rewrite(kind, gated.text, unsafe_fixes=False)
    assert again.text == gated.text and [f.rule for f in again.changes if not f.fix.applied] == [rule]


def test_check_and_write_without_unsafe_fixes_report_the_fix_as_pending(unsafe, tmp_path, monkeypatch):
    unsafe("launch-xla-dist")
    monkeypatch.chdir(tmp_path)
    script = Path("run.sh")
    script.write_text(LAUNCH)
    check = invoke(["migrate", "--check", "--jobs", "1", "--report", "report.json", script])
    assert check.exit_code == 1, check.stderr  # pending, though no file would change
    assert "pending [launch-xla-dist] xla_dist → gcloud" in check.stderr and "--unsafe-fixes" in check.stderr
    assert "0 would change (0 changes), 1 unsafe fix pending" in check.stderr
    record = json.loads(Path("report.json").read_text())
    assert [i["rule"] for i in record["files"][0]["pending"]] == ["launch-xla-dist"]
    assert record["files"][0]["changes"] == [] and record["summary"]["pending"] == 1
    written = invoke(["migrate", "--write", "--jobs", "1", script])
    assert written.exit_code == 0, written.stderr
    assert script.read_text() == LAUNCH  # nothing written, not even a TODO line
    made = invoke(["migrate", "--write", "--unsafe-fixes", "--jobs", "1", script])
    assert made.exit_code == 0 and "gcloud compute tpus tpu-vm ssh pod --worker=all" in script.read_text()
    assert invoke(["migrate", "--check", "--jobs", "1", script]).exit_code == 0


def test_the_configuration_can_make_unsafe_fixes(unsafe, tmp_path, monkeypatch):
    unsafe("launch-xla-dist")
    monkeypatch.chdir(tmp_path)
    Path("pyproject.toml").write_text("[tool.xrt2pjrt]\nunsafe-fixes = true\n")
    Path("run.sh").write_text(LAUNCH)
    assert invoke(["migrate", "--write", "--jobs", "1", "run.sh"]).exit_code == 0
    assert "gcloud compute tpus tpu-vm ssh pod" in Path("run.sh").read_text()
    Path("pyproject.toml").write_text("[tool.xrt2pjrt]\nunsafe-fixes = 'yes'\n")
    bad = invoke(["migrate", "--check", "run.sh"])
    assert bad.exit_code == 2 and "unsafe-fixes: must be true or false" in bad.stderr
