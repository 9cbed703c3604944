"""The command line stays light: `xrt2pjrt --help` and a migrate run over a folder with
nothing to do never import torch or torch_xla (seconds of start-up and gigabytes of
memory a user would pay for nothing), and a tree with nothing to migrate does not even
import libcst. Checked with Python's own import log; the times are in bench/startup.py."""

import json
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


def test_migrate_on_a_tree_with_nothing_to_do_imports_no_libcst(tmp_path):
    """Every kind of file, none of them XRT-era: the triggers turn each away before its
    rewriter (and libcst with the Python one) is imported, and the selection is checked
    against the generated index of rule ids, not the rules themselves."""
    files = {"train.py": "import torch\nprint(torch.ones(2))\n", "run.sh": "python3 train.py\n",
             "Dockerfile": "FROM python:3.11\n", "job.yaml": "steps: [1]\n", "README.md": "```python\nx = 1\n```\n",
             "nb.ipynb": '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n',
             "requirements.txt": "torch\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    # sys.modules of a real run (the import log misses modules imported by importlib's
    # import_module, as the rewriters are).
    listing = tmp_path / "modules.json"
    code = ("import json, sys\nfrom xrt2pjrt.cli import main\n"
            f"code = main(['migrate', '--check', '--select', 'api,env', {str(tmp_path)!r}])\n"
            f"open({str(listing)!r}, 'w').write(json.dumps(sorted(sys.modules)))\nsys.exit(code)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "7 files seen" in done.stderr
    modules = set(json.loads(listing.read_text()))
    assert {"xrt2pjrt.codemod", "xrt2pjrt.rule_index"} <= modules
    assert not {m for m in modules if m.split(".")[0] == "libcst"}
    # no rewriter, and no rule: the triggers are the generated index's
    assert not {m for m in modules if m.startswith(("xrt2pjrt.python.", "xrt2pjrt.text.", "xrt2pjrt.rules."))}


def test_python_m_in_a_project_that_shadows_the_standard_library(tmp_path):
    """`python -m xrt2pjrt` run at the top of a project with its own logging/ (fairseq's
    layout): the project's folders must not stand in for the standard library inside the
    tool, as they don't for the console script."""
    (tmp_path / "logging").mkdir()
    (tmp_path / "logging" / "__init__.py").write_text("raise ImportError('the project logging package')\n")
    (tmp_path / "train.py").write_text("import torch_xla.core.xla_model as xm\nprint(xm.xrt_world_size())\n")
    done = subprocess.run([sys.executable, "-m", "xrt2pjrt", "migrate", "--check", "."], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr[-2000:]  # changes pending, not a crash
    assert "train.py" in done.stdout + done.stderr
