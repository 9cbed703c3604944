"""A notebook's items are located by cell, as ruff locates them (``nb.ipynb:cell 2:3:5``), in
every output format: the cell's number, and the line and column in that cell."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# An item to decide in the second cell, on its third line, four spaces in.
CELLS = [
    {"cell_type": "markdown", "metadata": {}, "source": ["# Training\n", "On a TPU pod.\n"]},
    {
        "cell_type": "code",
        "metadata": {},
        "execution_count": None,
        "outputs": [],
        "source": [
            "import torch_xla.core.xla_model as xm\n",
            "if True:\n",
            "    xm.rendezvous('x', replicas=[0, 1])\n",
        ],
    },
]
RULE = "manual-rendezvous-subset"


def _notebook(tmp_path):
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": CELLS, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1))
    return path


def _run(path, *args) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "migrate", path.name, *args], cwd=path.parent, capture_output=True, text=True
    )
    assert done.returncode in (0, 1), done.stderr
    return done


def _migrate(path, *args) -> str:
    done = _run(path, *args)
    return done.stdout + done.stderr


def _report(path, output_format: str) -> dict:
    return json.loads(_run(path, "--output-format", output_format).stdout)


def _file_line(path) -> int:
    """The line of the notebook's file that holds the item's statement."""
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if "xm.rendezvous" in line)


@pytest.mark.parametrize("write, line", [(False, 3), (True, 4)])  # --write puts the TODO line above it
def test_the_text_report_says_cell_line_and_column(tmp_path, write, line):
    path = _notebook(tmp_path)
    out = _migrate(path, *(["--write"] if write else []))
    assert f"nb.ipynb:cell 2:{line}:5: decide [{RULE}] " in out


def test_json_gives_the_cell_and_the_line_and_columns_in_it(tmp_path):
    report = _report(_notebook(tmp_path), "json")
    (item,) = report["files"][0]["manual"]
    assert (item["rule"], item["cell"]) == (RULE, 2)
    assert item["range"] == {
        "start": {"line": 3, "column": 5},
        "end": {"line": 3, "column": len("    xm.rendezvous('x', replicas=[0, 1])") + 1},
    }


def test_sarif_gives_the_region_in_the_cell_and_the_cell_as_a_property(tmp_path):
    document = _report(_notebook(tmp_path), "sarif")
    (result,) = document["runs"][0]["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"], result["properties"]["cell"]) == (3, 5, 2)


def test_a_github_annotation_points_at_the_cells_line_in_the_file_and_names_the_cell(tmp_path):
    path = _notebook(tmp_path)
    (annotation,) = [line for line in _migrate(path, "--output-format", "github").splitlines() if RULE in line]
    assert annotation.startswith(f"::warning file=nb.ipynb,line={_file_line(path)},")
    assert "::cell 2:3:5: decide by hand: " in annotation


def test_the_markdown_report_names_the_cell(tmp_path):
    path = _notebook(tmp_path)
    _migrate(path, "--report", str(tmp_path / "report.md"))
    assert f"- cell 2, line 3 `{RULE}`: " in (tmp_path / "report.md").read_text()


def test_a_python_files_items_have_no_cell(tmp_path):
    (tmp_path / "train.py").write_text("".join(CELLS[1]["source"]))
    report = _report(tmp_path / "train.py", "json")
    (item,) = report["files"][0]["manual"]
    assert "cell" not in item and item["range"]["start"] == {"line": 3, "column": 5}
    assert "train.py:3:5: decide" in _migrate(tmp_path / "train.py")
