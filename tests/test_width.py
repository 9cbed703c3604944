"""The width of the TODO lines a migration writes: the project's line length (width.py),
and the one renderer every rewriter writes them with (rewriters.todo_comment)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from xrt2pjrt import width
from xrt2pjrt.rewriters import todo_comment

SETTINGS = [
    (".ruff.toml", "line-length = 101\n"),
    ("ruff.toml", "line-length = 102\n"),
    ("pyproject.toml", "[tool.ruff]\nline-length = 103\n"),
    ("pyproject.toml", "[tool.black]\nline-length = 104\n"),
    (".flake8", "[flake8]\nmax-line-length = 105\n"),
    ("setup.cfg", "[flake8]\nmax-line-length = 106\n"),
    ("tox.ini", "[flake8]\nmax_line_length = 107\n"),
    ("setup.cfg", "[pycodestyle]\nmax-line-length = 108\n"),
    ("tox.ini", "[pep8]\nmax-line-length = 109\n"),
    (".pylintrc", "[FORMAT]\nmax-line-length = 110\n"),
    ("pylintrc", "[format]\nmax-line-length = 111\n"),
    ("pyproject.toml", "[tool.pylint.format]\nmax-line-length = 112\n"),
    (".editorconfig", "root = true\n[*]\nmax_line_length = 80\n[*.py]\nmax_line_length = 113\n"),
    (".editorconfig", "[*.{js,py}]\nmax_line_length = 114\n"),
]


@pytest.mark.parametrize("name, text", SETTINGS, ids=[f"{n}:{t.split()[0]}" for n, t in SETTINGS])
def test_the_width_is_read_from_each_kind_of_settings(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    expected = int(text.rsplit("=", 1)[1])
    assert width.of(tmp_path).length == expected
    assert width.of(tmp_path).formatter is (
        name in (".ruff.toml", "ruff.toml") or "[tool.ruff]" in text or "[tool.black]" in text
    )


def test_the_nearest_settings_win_whatever_their_tool(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.black]\nline-length = 120\n")
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / ".flake8").write_text("[flake8]\nmax-line-length = 79\n")
    assert width.of(tmp_path / "pkg" / "sub") == width.Width(79)
    assert width.of(tmp_path) == width.Width(120, formatter=True)


def test_an_editorconfig_section_for_other_files_and_the_root_mark_are_respected(tmp_path):
    (tmp_path / "setup.cfg").write_text("[flake8]\nmax-line-length = 120\n")
    (tmp_path / "web").mkdir()
    (tmp_path / "web" / ".editorconfig").write_text("[*.js]\nmax_line_length = 60\n")
    assert width.of(tmp_path / "web").length == 120  # not Python's: the search goes on up
    (tmp_path / "web" / ".editorconfig").write_text("root = true\n[*.js]\nmax_line_length = 60\n")
    width.of.cache_clear()
    assert width.of(tmp_path / "web").length == width.DEFAULT  # the root: nothing above counts


def test_88_without_settings_and_100_for_files_that_are_not_python(tmp_path):
    (tmp_path / "setup.cfg").write_text("[metadata]\nname = x\n")  # no line length in it
    assert width.of(tmp_path) == width.Width(88)
    project = width.Width(120, formatter=True)
    assert width.for_kind("python", project) == width.for_kind("notebook", project) == 120
    assert {width.for_kind(kind, project) for kind in ("shell", "dockerfile", "yaml")} == {100}


@pytest.mark.parametrize("indent", ["", "        ", "\t\t"])
def test_a_todo_line_fits_its_width_indent_included_and_keeps_its_rule_id(indent):
    message = (
        "xm.rendezvous with replicas=list(range(world // 2)): under PJRT every replica must join "
        "(a subset raises ValueError); use all replicas or a host-side barrier"
    )
    line = indent + todo_comment(message, "manual-rendezvous-subset", 88, indent)
    assert len(line) <= 88
    assert line.endswith(" [manual-rendezvous-subset]")
    assert line.strip().startswith("# TODO(xrt2pjrt): xm.rendezvous with")
    assert line.endswith("... [manual-rendezvous-subset]")  # cut, and saying so
    assert "\n" not in line


def test_a_short_message_is_written_whole():
    assert todo_comment("use xr.world_size()", "api-world-size", 88) == (
        "# TODO(xrt2pjrt): use xr.world_size() [api-world-size]"
    )


def test_every_todo_line_migrate_writes_fits_the_projects_width(tmp_path):
    """End to end: the project's flake8 says 79, and every TODO line written fits it, in
    Python at any depth and in a notebook's cells; a shell script's fit 100."""
    (tmp_path / ".flake8").write_text("[flake8]\nmax-line-length = 79\n")
    (tmp_path / "train.py").write_text(
        "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        "def _mp_fn(index):\n    for step in range(3):\n        if step:\n"
        "            xm.rendezvous('x', replicas=[0, 1])\n\n"
        "if __name__ == '__main__':\n    xmp.spawn(_mp_fn, args=(), nprocs=8, start_method='fork', join=False)\n"
    )
    cell = {
        "cell_type": "code",
        "metadata": {},
        "execution_count": None,
        "outputs": [],
        "source": ["import torch_xla.core.xla_model as xm\n", "xm.rendezvous('x', replicas=[0, 1])\n"],
    }
    (tmp_path / "nb.ipynb").write_text(
        json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    (tmp_path / "run.sh").write_text("python -m torch_xla.distributed.xla_dist --tpu=t --vm v1 -- python train.py\n")
    done = subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "migrate", str(tmp_path), "--write"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    python = (tmp_path / "train.py").read_text().splitlines()
    cells = ["".join(c["source"]) for c in json.loads((tmp_path / "nb.ipynb").read_text())["cells"]]
    shell = (tmp_path / "run.sh").read_text().splitlines()
    todos = {
        name: [line for line in lines if "TODO(xrt2pjrt)" in line]
        for name, lines in (("py", python), ("nb", "\n".join(cells).splitlines()), ("sh", shell))
    }
    assert all(todos.values()), todos
    assert all(len(line) <= 79 for line in todos["py"] + todos["nb"]), todos
    assert all(len(line) <= 100 for line in todos["sh"]), todos
