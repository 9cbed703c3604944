"""Rule ids come in families across file kinds: `--select env` migrates the XRT-era variables
of Python, shell, Dockerfiles and YAML alike; old ids still work, with a note."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from xrt2pjrt.registry import CHECKLIST, RENAMED, Example, Rule, all_rules, families, family, register

TREE = {
    "train.py": "import os\nos.environ['XRT_TPU_CONFIG'] = 'localservice;0;localhost:51011'\n",
    "run.sh": 'export XRT_TPU_CONFIG="localservice;0;localhost:51011"\n'
    "python3 -m torch_xla.distributed.xla_dist --tpu=$TPU -- python3 train.py\n",
    "Dockerfile": "FROM python:3.11\nENV XRT_TPU_CONFIG=localservice;0;localhost:51011\n",
    "job.yaml": "env:\n  - name: XRT_TPU_CONFIG\n    value: localservice;0;localhost:51011\n",
}


def xrt2pjrt(*args, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XRT_", "PJRT_", "NO_COLOR", "FORCE_COLOR"))}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)  # this checkout's code, wherever installed from
    return subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


@pytest.fixture
def tree(tmp_path):
    for name, text in TREE.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_every_rule_belongs_to_a_family_and_every_family_has_rules():
    assert {family(rid) for rid in all_rules()} == set(families()) == set(CHECKLIST)


def test_a_rule_outside_the_families_does_not_register():
    class Stray(Rule):
        id = "shell-something"
        kind = "shell"
        summary = "x"
        examples = (Example("a", "b"),)

    with pytest.raises(ValueError, match="must start with a family"):
        register(Stray)


def test_renamed_ids_point_at_rules_that_exist():
    assert set(RENAMED.values()) <= set(all_rules())
    assert not set(RENAMED) & set(all_rules())


def test_select_env_migrates_the_variables_of_every_file_kind(tree):
    ran = xrt2pjrt("migrate", "--write", "--select", "env", ".", cwd=tree)
    assert ran.returncode == 0, ran.stderr
    for name in TREE:
        text = (tree / name).read_text()
        assert "XRT_TPU_CONFIG" not in text and "PJRT_DEVICE" in text, (name, text)
    assert "xla_dist" in (tree / "run.sh").read_text()  # the launch family was not selected
    assert xrt2pjrt("migrate", "--check", "--select", "env", ".", cwd=tree).returncode == 0
    assert xrt2pjrt("migrate", "--check", ".", cwd=tree).returncode == 1


def test_select_and_ignore_take_comma_lists(tree):
    ran = xrt2pjrt(
        "migrate",
        "--write",
        "--unsafe-fixes",
        "--select",
        "env,launch",
        "--ignore",
        "env-xrt,env-shell-xrt-unused",
        ".",
        cwd=tree,
    )
    assert ran.returncode == 0, ran.stderr
    assert "XRT_TPU_CONFIG" in (tree / "train.py").read_text()  # env-xrt-* (Python) ignored
    run_sh = (tree / "run.sh").read_text()
    assert "xla_dist" not in run_sh and "PJRT_DEVICE=TPU" in run_sh


def test_an_old_id_is_accepted_with_a_note(tree):
    ran = xrt2pjrt("migrate", "--write", "--select", "shell-env-xrt-tpu-config", ".", cwd=tree)
    assert ran.returncode == 0, ran.stderr
    assert "'shell-env-xrt-tpu-config' is an old rule id: use env-shell-xrt-tpu-config" in ran.stderr
    assert "PJRT_DEVICE" in (tree / "run.sh").read_text()
    assert "XRT_TPU_CONFIG" in (tree / "train.py").read_text()


def test_rules_id_shows_that_rule_with_every_example(tmp_path):
    ran = xrt2pjrt("rules", "env-shell-xrt-tpu-config", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    rule = all_rules()["env-shell-xrt-tpu-config"]
    assert ran.stdout.startswith("env-shell-xrt-tpu-config  [shell, safe]")
    assert ran.stdout.count("\n    - ") >= len(rule.examples) and "unset PJRT_DEVICE" in ran.stdout
    family_rows = json.loads(xrt2pjrt("rules", "spawn", "--json", cwd=tmp_path).stdout)
    assert [r["id"] for r in family_rows] == sorted(rid for rid in all_rules() if rid.startswith("spawn-"))
    unknown = xrt2pjrt("rules", "no-such-rule", cwd=tmp_path)
    assert unknown.returncode == 2 and "no rule id starts with 'no-such-rule'" in unknown.stderr
