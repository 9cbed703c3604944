"""env-xrt-tpu-config beyond its examples: a write of XRT_TPU_CONFIG that the file reads again stays."""

import json

import pytest

from python_migrate import migrate
from xrt2pjrt.mixed import notebook
from xrt2pjrt.registry import Options, all_rules


def test_a_write_of_a_variable_the_file_reads_again_stays():
    # Found in danielkunin/neural-mechanics: renamed, the write left a read raising KeyError.
    source = (
        'import os\n\nos.environ["XRT_TPU_CONFIG"] = "localservice;0;localhost:51011"\n'
        'print("config:", os.environ["XRT_TPU_CONFIG"])\n'
        "os.environ.setdefault('XRT_DEVICE_MAP', 'CPU:0;/job:localservice/replica:0/task:0/device:XLA_CPU:0')\n"
    )
    out = migrate(source)
    assert 'os.environ["XRT_TPU_CONFIG"] = "localservice;0;localhost:51011"\n' in out.text
    assert "os.environ.setdefault('PJRT_DEVICE', 'CPU')" in out.text  # not read again: migrated
    (kept,) = [m for m in out.manual if "this write stays" in m.detail]
    assert kept.line == 3 and "read elsewhere in this file" in kept.detail and "(line 4)" in kept.shown()
    assert "set PJRT_DEVICE='TPU' instead" in kept.detail
    assert migrate(out.text).text == out.text


@pytest.mark.parametrize(
    "other_cell, reported",
    [
        ("import mylib\nmylib.plot()\n", False),  # nothing in the kernel or started by it uses torch_xla
        ("import torch_xla.core.xla_model as xm\n", True),
        ("!python3 train.py --tpu\n", True),  # the process it starts inherits the node's address
        ("import subprocess\nsubprocess.run(['python3', 'train.py'])\n", True),
    ],
)
def test_a_tpu_node_set_in_a_notebook_is_reported_where_something_can_reach_it(other_cell, reported):
    cells = ["import os\nos.environ['XRT_TPU_CONFIG'] = f'tpu_worker;0;{ip}:8470'\n", other_cell]
    text = json.dumps(
        {
            "cells": [
                {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": c}
                for c in cells
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )
    outcome = notebook.rewrite(text, Options(rules=frozenset(all_rules())))
    assert [m.rule for m in outcome.manual] == ["env-xrt-tpu-config"] * reported
    assert "PJRT_DEVICE" in outcome.text  # the setting is migrated either way


@pytest.mark.parametrize(
    "definitions, for_a_test",
    [
        # round 15: an MNIST script's evaluation loop, named test, makes no test file
        ("def test(model, loader):\n    pass\n", False),
        ("def test_config():\n    pass\n", True),
        ("class TestRun:\n    def testConfig(self):\n        pass\n", True),
    ],
)
def test_a_write_in_a_test_file_stays_and_a_script_with_a_test_loop_is_migrated(definitions, for_a_test):
    source = f"import os\nos.environ['XRT_TPU_CONFIG'] = 'tpu_worker;0;10.0.0.2:8470'\n\n{definitions}"
    out = migrate(source)
    assert ("XRT_TPU_CONFIG" in out.text) == for_a_test
    assert any("set for a test here" in m.detail for m in out.manual) == for_a_test
