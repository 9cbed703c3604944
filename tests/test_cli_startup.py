"""The command line stays light: `xrt2pjrt --help` and a migrate run over a folder with
nothing to do never import torch or torch_xla (seconds of start-up and gigabytes of
memory a user would pay for nothing), a tree with nothing to migrate does not even
import libcst, and `--version` and `--help` do not import typer (cli.py answers them as
typer would). Checked with Python's own import log; the times are in bench/startup.py."""

import json
import subprocess
import sys

import pytest

HEAVY = ("torch", "torch_xla")
TYPER = ("typer", "click", "rich")


def imported_modules(*args: str, exit_code: int = 0) -> set[str]:
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "xrt2pjrt", *args], capture_output=True, text=True)
    assert done.returncode == exit_code, done.stderr[-2000:]
    # lines look like "import time:  self [us] | cumulative | module" with the module indented by depth
    return {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


def heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in HEAVY}


@pytest.mark.parametrize("args", [("--help",), ("migrate", "--help"), ("rules",)], ids=" ".join)
def test_help_and_rule_listing_do_not_import_torch(args):
    modules = imported_modules(*args)
    assert "xrt2pjrt.cli" in modules  # the log is read correctly
    assert not heavy(modules)


@pytest.mark.parametrize("args", [("--version",), ("--help",), ("-h",)], ids=" ".join)
def test_version_and_help_do_not_import_typer(args):
    modules = imported_modules(*args)
    assert "xrt2pjrt.cli" in modules
    assert not {m for m in modules if m.split(".")[0] in TYPER}


@pytest.mark.parametrize("columns", ["200", "80", "64", "40"])
@pytest.mark.parametrize("args", [["--help"], ["--version"]], ids=" ".join)
def test_what_cli_answers_without_typer_is_what_typer_answers(monkeypatch, capsys, args, columns):
    """At any width of the terminal (click's help is as wide as it, 78 columns at most)."""
    from xrt2pjrt import cli, commands

    monkeypatch.setenv("COLUMNS", columns)
    assert cli.main(args) == 0
    answer = capsys.readouterr()
    assert commands.main(args) == 0
    assert capsys.readouterr() == answer


def test_no_command_is_the_help_and_exit_2(capsys):
    from xrt2pjrt import cli

    assert cli.main(["--help"]) == 0
    help_text = capsys.readouterr().out
    assert cli.main([]) == 2
    assert capsys.readouterr().out == help_text


@pytest.mark.parametrize(
    "args, exit_code",
    [(("migrate", "--help"), 0), (("migrate", "--target", "jax", "."), 2), (("rules", "no-such-rule"), 2)],
    ids=["help", "usage error", "failure"],
)
def test_typer_never_imports_rich(args, exit_code):
    """rich would draw help and errors in boxes as wide as the terminal, and its import
    costs more than typer's."""
    modules = imported_modules(*args, exit_code=exit_code)
    assert "typer" in modules and not {m for m in modules if m.split(".")[0] == "rich"}


def test_migrate_on_an_empty_folder_does_not_import_torch(tmp_path):
    modules = imported_modules("migrate", str(tmp_path))
    assert "xrt2pjrt.codemod" in modules
    assert not heavy(modules)


def test_migrate_on_a_tree_with_nothing_to_do_imports_no_libcst(tmp_path):
    """Every kind of file, none of them XRT-era: the triggers turn each away before its
    rewriter (and libcst with the Python one) is imported, and the selection is checked
    against the generated index of rule ids, not the rules themselves."""
    files = {
        "train.py": "import torch\nprint(torch.ones(2))\n",
        "run.sh": "python3 train.py\n",
        "Dockerfile": "FROM python:3.11\n",
        "job.yaml": "steps: [1]\n",
        "README.md": "```python\nx = 1\n```\n",
        "nb.ipynb": '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n',
        "requirements.txt": "torch\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    # sys.modules of a real run (the import log misses modules imported by importlib's
    # import_module, as the rewriters are).
    listing = tmp_path / "modules.json"
    code = (
        "import json, sys\nfrom xrt2pjrt.cli import main\n"
        f"code = main(['migrate', '--check', '--select', 'api,env', {str(tmp_path)!r}])\n"
        f"open({str(listing)!r}, 'w').write(json.dumps(sorted(sys.modules)))\nsys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "7 files seen" in done.stderr
    modules = set(json.loads(listing.read_text()))
    assert {"xrt2pjrt.codemod", "xrt2pjrt.rule_index"} <= modules
    assert not {m for m in modules if m.split(".")[0] == "libcst"}
    # no rewriter, and no rule: the triggers are the generated index's
    assert not {
        m for m in modules if m.startswith(("xrt2pjrt.python.", "xrt2pjrt.text.", "xrt2pjrt.mixed.", "xrt2pjrt.rules."))
    }


def test_python_m_in_a_project_that_shadows_the_standard_library(tmp_path):
    """`python -m xrt2pjrt` run at the top of a project with its own logging/ (fairseq's
    layout): the project's folders must not stand in for the standard library inside the
    tool, as they don't for the console script."""
    (tmp_path / "logging").mkdir()
    (tmp_path / "logging" / "__init__.py").write_text("raise ImportError('the project logging package')\n")
    (tmp_path / "train.py").write_text("import torch_xla.core.xla_model as xm\nprint(xm.xrt_world_size())\n")
    done = subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "migrate", "--check", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr[-2000:]  # changes pending, not a crash
    assert "train.py" in done.stdout + done.stderr
