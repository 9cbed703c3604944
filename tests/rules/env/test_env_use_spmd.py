"""env-use-spmd beyond its examples: the rewritten program turns SPMD on as the variable did,
on the installed torch_xla."""

import os
import subprocess
import sys

import pytest

from python_migrate import migrate, text

PROGRAM = """\
import os
import torch
import torch_xla
import torch_xla.runtime as xr

def main():
    os.environ['XLA_USE_SPMD'] = '1'
    t = torch.ones(4, device=torch_xla.device())
    print(xr.is_spmd(), (t * 2).sum().item())

main()
"""


def _run(source: str, folder) -> str:
    (folder / "program.py").write_text(source)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XLA_", "PJRT_"))} | {"PJRT_DEVICE": "CPU"}
    ran = subprocess.run(
        [sys.executable, "-W", "ignore", "program.py"], cwd=folder, env=env, capture_output=True, text=True, timeout=300
    )
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.split()


@pytest.mark.slow
@pytest.mark.xla
def test_the_call_turns_spmd_on_as_the_variable_did(tmp_path):
    migrated = text(PROGRAM)
    assert "    xr.use_spmd()\n" in migrated and "XLA_USE_SPMD" not in migrated
    assert _run(PROGRAM, tmp_path) == _run(migrated, tmp_path) == ["True", "8.0"]


def test_a_value_that_turns_it_off_is_reported_not_rewritten():
    outcome = migrate("import os\nimport torch_xla\n\nos.environ['XLA_USE_SPMD'] = '0'\n")
    assert "os.environ['XLA_USE_SPMD'] = '0'" in outcome.text
    assert [(f.rule, f.message) for f in outcome.manual] == [("env-use-spmd", "deprecated: call xr.use_spmd() first")]


def test_left_alone_for_a_target_that_reads_it_without_a_word():
    # torch_xla 2.0 read it silently; the oldest target, 2.1, already warns: nothing is left alone there
    outcome = migrate("import os\nimport torch_xla\n\nos.environ['XLA_USE_SPMD'] = '1'\n", target_version=(2, 1))
    assert "xr.use_spmd()" in outcome.text
