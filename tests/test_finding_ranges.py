"""Every output format places a finding by its range (report.Range: 1-based lines and
columns, the end column just past the code) and an error by the character it names, and
the JSON report says each finding's fix: its safety and whether it was made.

One tree holds a Python change on a continuation line and an unsafe fix pending on a call
over two lines, a shell change in an ``if`` block, an item to decide in a notebook's cell
(placed in the cell), and two files that do not parse."""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys

import pytest

TRAIN = """\
import sys

import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp


def _mp_fn(index):
    print(index,
          xm.get_ordinal())


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=(),
              nprocs=int(sys.argv[1]))
"""
RUN_SH = 'if true; then\n  export XRT_TPU_CONFIG="localservice;0;localhost:51011"\nfi\npython3 train.py\n'
CELLS = [
    {"cell_type": "markdown", "metadata": {}, "source": ["# Training\n"]},
    {
        "cell_type": "code",
        "metadata": {},
        "execution_count": None,
        "outputs": [],
        "source": [
            "import torch_xla.core.xla_model as xm\n",
            "if True:\n",
            "    xm.rendezvous('x',\n",
            "                  replicas=[0, 1])\n",
        ],
    },
]
BROKEN = "import torch_xla\ndef f(:\n    pass\n"
NOT_JSON = '{\n "cells": [},\n "torch_xla": 1\n}\n'

# (file, rule; None for the file's error) -> (start line, start column, end line, end column)
EXPECTED = {
    # the code of line 9, where the call is: `          xm.get_ordinal())`
    ("train.py", "api-ordinal"): (9, 11, 9, 28),
    # the spawn call's two lines, from its first character to the end of `nprocs=int(sys.argv[1]))`
    ("train.py", "spawn-nprocs-expression"): (13, 5, 14, 39),
    ("run.sh", "env-shell-xrt-tpu-config"): (2, 3, 2, 57),
    # in cell 2, counted from the cell's first line: the call's two lines
    ("nb.ipynb", "manual-rendezvous-subset"): (3, 5, 4, len("                  replicas=[0, 1])") + 1),
    # the ':' that Python's parser stops at, and the '}' that the JSON decoder does
    ("broken.py", None): (2, 7, 2, 8),
    ("bad.ipynb", None): (2, 12, 2, 13),
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("ranges")
    (root / "train.py").write_text(TRAIN)
    (root / "run.sh").write_text(RUN_SH)
    (root / "nb.ipynb").write_text(json.dumps({"cells": CELLS, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    (root / "broken.py").write_text(BROKEN)
    (root / "bad.ipynb").write_text(NOT_JSON)
    return root


def _migrate(root, *args) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "migrate", ".", *args], cwd=root, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 2, done.stderr  # (broken.py and bad.ipynb cannot be processed)
    return done


def _json(root, *args) -> dict:
    return json.loads(_migrate(root, "--output-format", "json", *args).stdout)


@functools.cache  # (each reader runs its format once, for all the cases)
def _from_json(root) -> dict:
    def span(at: dict) -> tuple[int, int, int, int]:
        return at["start"]["line"], at["start"]["column"], at["end"]["line"], at["end"]["column"]

    said = {}
    for record in _json(root)["files"]:
        for item in record["changes"] + record["manual"] + record.get("pending", []):
            said[record["path"], item["rule"]] = span(item["range"])
            assert item.get("cell") == (2 if record["path"] == "nb.ipynb" else None)
        if record["error"] is not None:
            said[record["path"], None] = span(record["error_range"])
    return said


@functools.cache
def _from_sarif(root) -> dict:
    (run,) = json.loads(_migrate(root, "--output-format", "sarif").stdout)["runs"]

    def region(location: dict) -> tuple[str, tuple[int, int, int, int]]:
        physical = location["physicalLocation"]
        r = physical["region"]
        return physical["artifactLocation"]["uri"], (r["startLine"], r["startColumn"], r["endLine"], r["endColumn"])

    said = {}
    for result in run["results"]:
        path, at = region(result["locations"][0])
        said[path, result["ruleId"]] = at
        assert result["properties"].get("cell") == (2 if path == "nb.ipynb" else None)
    for notification in run["invocations"][0]["toolExecutionNotifications"]:
        path, at = region(notification["locations"][0])
        said[path, None] = at
    return said


_ANNOTATION = re.compile(r"::\w+ file=([^,]+),(.*?),title=xrt2pjrt ?([\w-]*)::(.*)")


@functools.cache
def _from_github(root) -> dict:
    """A notebook's annotation points at the file's line and names the place in the cell
    (``cell 2:3:5: ...``): only that place is the cell's."""
    said = {}
    for line in _migrate(root, "--output-format", "github").stdout.splitlines():
        path, props, rule, message = _ANNOTATION.fullmatch(line).groups()
        in_cell = re.match(r"cell 2:(\d+):(\d+): ", message)
        if in_cell:
            said[path, rule] = tuple(map(int, in_cell.groups()))
        else:
            values = dict(prop.split("=") for prop in props.split(","))
            said[path, rule or None] = tuple(int(values[k]) for k in ("line", "col", "endLine", "endColumn"))
    return said


@functools.cache
def _from_text(root) -> dict:
    """``FILE:LINE:COLUMN:`` (``FILE:cell 2:LINE:COLUMN:``) for a finding, ``FILE: error: line
    LINE: ...`` for an error (-v lists the changes too)."""
    said = {}
    for line in _migrate(root, "-v").stderr.splitlines():
        if found := re.match(r"([^:]+):(?:cell 2:)?(\d+):(\d+): (?:change|pending|decide) \[([\w-]+)\]", line):
            said[found[1], found[4]] = (int(found[2]), int(found[3]))
        elif found := re.match(r"([^:]+): error: line (\d+): ", line):
            said[found[1], None] = (int(found[2]),)
    return said


@pytest.mark.parametrize("read", [_from_json, _from_sarif, _from_github, _from_text])
@pytest.mark.parametrize("where", list(EXPECTED), ids=lambda where: f"{where[0]}-{where[1] or 'error'}")
def test_each_format_places_a_finding_by_its_range(tree, read, where):
    said = read(tree)[where]
    assert said == EXPECTED[where][: len(said)]


def test_json_says_each_fix_is_safe_and_made(tree):
    """(The pending record of an unsafe fix: tests/test_fix_safety.py.)"""
    (train,) = [record for record in _json(tree)["files"] if record["path"] == "train.py"]
    assert [(c["rule"], c["fix"]) for c in train["changes"]] == [
        ("api-ordinal", {"safety": "safe", "applied": True}),
        ("spawn-nprocs-expression", {"safety": "safe", "applied": True}),
    ]
    assert "pending" not in train


def test_after_write_a_range_is_on_the_code_as_written(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    done = subprocess.run(
        [sys.executable, "-m", "xrt2pjrt", "migrate", "--write", "--output-format", "json", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    (change,) = [
        c for record in json.loads(done.stdout)["files"] for c in record["changes"] if c["rule"] == "api-ordinal"
    ]
    new = (tmp_path / "train.py").read_text().splitlines()
    at = change["range"]
    assert new[at["start"]["line"] - 1] == "          xr.global_ordinal())"  # below the import of xr
    assert at["start"]["column"] == 11 and at["end"]["column"] == len("          xr.global_ordinal())") + 1
