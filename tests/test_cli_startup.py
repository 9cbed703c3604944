"""The command line stays light: `xrt2pjrt --help` and a migrate run over a folder with
nothing to do never import torch or torch_xla (seconds of start-up and gigabytes of
memory a user would pay for nothing). Checked with Python's own import log."""

import subprocess
import sys

import pytest

HEAVY = ("torch", "torch_xla")


def imported_modules(*args: str) -> set[str]:
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "xrt2pjrt", *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    # lines look like "import time:  self [us] | cumulative | module" with the module indented by depth
    return {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


def heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in HEAVY}


@pytest.mark.parametrize("args", [("--help",), ("migrate", "--help"), ("rules",)], ids=" ".join)
def test_help_and_rule_listing_do_not_import_torch(args):
    modules = imported_modules(*args)
    assert "xrt2pjrt.cli" in modules  # the log is read correctly
    assert not heavy(modules)


def test_migrate_on_an_empty_folder_does_not_import_torch(tmp_path):
    modules = imported_modules("migrate", str(tmp_path))
    assert "xrt2pjrt.codemod" in modules
    assert not heavy(modules)
