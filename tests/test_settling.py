"""What stays open beyond what the rules see on one pass (xrt2pjrt/settling.py): TODO lines an
earlier --write left, and markers that settle nothing, in every kind of file, each in the
place a person looks for it (a notebook's cell, a document's code block)."""

from __future__ import annotations

import json

from xrt2pjrt import codemod
from xrt2pjrt.registry import Options, all_rules, select
from xrt2pjrt.settling import LEFT_BY_WRITE

EVERY_RULE = Options(rules=frozenset(all_rules()))


def _items(kind: str, text: str, options: Options = EVERY_RULE) -> list[tuple]:
    outcome = codemod.rewrite(kind, text, options)
    return [(f.rule, f.cell, (f.cell_range or f.range).start_line, f.message) for f in outcome.manual]


def _notebook(*cells: str) -> str:
    return (
        json.dumps(
            {
                "cells": [
                    {
                        "cell_type": "code",
                        "metadata": {},
                        "outputs": [],
                        "execution_count": None,
                        "source": cell.splitlines(keepends=True),
                    }
                    for cell in cells
                ],
                "metadata": {},
                "nbformat": 4,
                "nbformat_minor": 5,
            },
            indent=1,
        )
        + "\n"
    )


def test_a_todo_line_whose_rule_no_longer_sees_its_spot_stays_an_item():
    shell = "# TODO(xrt2pjrt): run it on a TPU VM, not a TPU node [env-shell-xrt-tpu-config]\nPJRT_DEVICE=TPU python3 t.py\n"
    assert _items("shell", shell) == [("env-shell-xrt-tpu-config", None, 2, "run it on a TPU VM, not a TPU node")]
    outcome = codemod.rewrite("shell", shell, EVERY_RULE)
    assert outcome.text == shell and LEFT_BY_WRITE in outcome.manual[0].detail  # nothing written twice


def test_a_todo_line_its_rule_still_reports_is_one_item_not_two():
    python = (
        "import torch_xla.core.xla_model as xm\n\ndef f(m, p):\n"
        "    # TODO(xrt2pjrt): add xm.rendezvous('saved') for readers [manual-save-barrier]\n"
        "    xm.save(m, p)\n    return torch.load(p)\n"
    )
    assert [item[:3] for item in _items("python", python)] == [("manual-save-barrier", None, 5)]


def test_a_todo_line_above_a_continued_instruction_is_one_item_with_the_spot_on_a_later_line():
    """A Dockerfile ENV continued with a backslash: the spot is on its second line."""
    dockerfile = (
        "# TODO(xrt2pjrt): no effect from 2.5: cast to float16 [env-shell-deprecated]\n"
        "ENV PJRT_DEVICE=TPU \\\n    XLA_USE_FP16=1\n"
    )
    assert [item[:3] for item in _items("dockerfile", dockerfile)] == [("env-shell-deprecated", None, 3)]


def test_a_todo_line_of_a_rule_the_run_does_not_take_is_left_to_that_run():
    shell = "# TODO(xrt2pjrt): run it on a TPU VM, not a TPU node [env-shell-xrt-tpu-config]\nPJRT_DEVICE=TPU python3 t.py\n"
    assert _items("shell", shell, Options(rules=select(["api"], None))) == []


def test_a_todo_line_naming_no_rule_is_an_item():
    shell = "# TODO(xrt2pjrt): look at this [env-shell-xrt-tpu-confg]\nPJRT_DEVICE=TPU python3 t.py\n"
    assert _items("shell", shell) == [
        ("manual-unused-marker", None, 1, "name a rule in this TODO line, not env-shell-xrt-tpu-confg")
    ]


def test_a_marker_in_a_notebook_cell_that_settles_nothing_is_an_item_of_that_cell():
    notebook = _notebook(
        "import torch_xla.runtime as xr\n",
        "rank = xr.global_ordinal()\n# xrt2pjrt: ignore[api-ordinal]\nworld = xr.world_size()\n",
    )
    assert _items("notebook", notebook) == [("manual-unused-marker", 2, 2, "remove this marker: it settles nothing")]


def test_a_marker_in_a_notebook_cell_that_keeps_a_rule_off_is_no_item():
    notebook = _notebook(
        "import torch_xla.core.xla_model as xm\n", "# xrt2pjrt: ignore[api-ordinal]\nrank = xm.get_ordinal()\n"
    )
    assert _items("notebook", notebook) == []


def test_a_document_quoting_a_marker_in_its_prose_has_no_item_but_a_stale_one_in_a_block_is():
    document = (
        "Keep a line with `# xrt2pjrt: ignore[ID]`.\n\n```python\nimport torch_xla.runtime as xr\n\n"
        "world = xr.world_size()  # xrt2pjrt: ignore[api-world-size]\n```\n"
    )
    assert _items("markdown", document) == [("manual-unused-marker", None, 6, "remove this marker: it settles nothing")]


def test_a_multi_line_statement_is_covered_by_a_marker_on_any_of_its_lines():
    python = (
        "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        "xmp.spawn(  # xrt2pjrt: ignore[spawn-nprocs-literal]\n    fn,\n    nprocs=8,\n)\n"
    )
    assert _items("python", python) == []


def test_only_the_rules_the_run_takes_judge_a_marker():
    python = "import torch_xla\n\nx = 1  # xrt2pjrt: ignore[manual-save-barrier]\n"
    assert _items("python", python, Options(rules=select(["api"], None))) == []
    assert [item[0] for item in _items("python", python)] == ["manual-unused-marker"]
