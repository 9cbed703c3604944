"""A notebook's cells are one program, but each cell is read and run on its own: a cell
that uses a module or name torch_xla 2.x lacks is told so, whichever cell imports it."""

from __future__ import annotations

import json

from python_migrate import migrate
from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt.mixed import notebook

ALL = Options(rules=frozenset(all_rules()), unsafe_fixes=True)


def _notebook(*sources: list[str]) -> str:
    cells = [
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": s} for s in sources
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 4}, indent=1) + "\n"


def _twice(text: str):
    outcome = notebook.rewrite(text, ALL)
    again = notebook.rewrite(outcome.text, ALL)
    assert again.text == outcome.text and again.changes == [], again.changes
    return outcome


def _cells(text: str) -> list[str]:
    return ["".join(cell["source"]) for cell in json.loads(text)["cells"]]


def _items(outcome, text: str) -> list[tuple[str, int]]:
    """(rule, cell) of each item, the cell found by the item's line in the notebook."""
    starts = [i + 1 for i, line in enumerate(text.splitlines()) if line == '   "source": [']
    return [(f.rule, sum(start < f.line for start in starts)) for f in outcome.manual]


def test_each_cell_that_uses_a_gone_module_gets_its_own_item_and_todo():
    text = _notebook(
        ["import torch_xla.utils.gcsfs as gcs\n"],
        ["blob = gcs.read('gs://bucket/a')\n", "other = gcs.read('gs://bucket/b')\n"],
        ["print('no torch_xla here')\n"],
        ["gcs.write('gs://bucket/c', blob)\n"],
    )
    outcome = _twice(text)
    assert _items(outcome, text) == [("import-gone-module", 1), ("api-not-in-target", 2), ("api-not-in-target", 4)]
    cells = _cells(outcome.text)
    assert cells[1].startswith("# TODO(xrt2pjrt): use a GCS client of your own [api-not-in-target]")
    assert cells[1].count("TODO") == 1 and "TODO" not in cells[2]  # one item a cell, however many uses
    assert cells[3].startswith("# TODO(xrt2pjrt): use a GCS client of your own [api-not-in-target]")
    assert outcome.manual[2].detail.startswith(
        "gcs.write: torch_xla.utils.gcsfs is not in torch_xla 2.9; the cell that imports it fails"
    )


def test_each_cell_that_uses_a_gone_name_gets_its_own_item():
    text = _notebook(
        ["from torch_xla.amp import GradScaler, autocast\n"],
        ["scaler = GradScaler()\n"],
        ["with autocast(device):\n", "    scaler.scale(loss).backward()\n"],
        ["s2 = GradScaler()\n"],
    )
    outcome = _twice(text)
    assert _items(outcome, text) == [("import-gone-module", 1), ("api-not-in-target", 2), ("api-not-in-target", 4)]
    assert outcome.manual[1].detail.startswith(
        "GradScaler: torch_xla.amp.GradScaler is not in torch_xla 2.9; the cell that imports it fails"
    )


def test_a_cell_whose_use_is_rewritten_is_not_told():
    text = _notebook(
        ["from torch_xla.experimental import pjrt\n"], ["n = pjrt.world_size()\n"], ["pjrt.spawn_threads(fn)\n"]
    )
    outcome = _twice(text)
    assert _cells(outcome.text)[1] == "n = xr.world_size()\n"
    # the third cell has its own item already (no public replacement): not a second one
    assert [rule for rule, cell in _items(outcome, text) if cell == 3] == ["manual-pjrt-other"]
    assert [cell for _, cell in _items(outcome, text)].count(2) == 0


def test_a_file_gets_one_item_at_the_import():
    out = migrate("import torch_xla.utils.gcsfs as gcs\n\nblob = gcs.read('a')\ngcs.write('b', blob)\n")
    assert [f.rule for f in out.manual] == ["import-gone-module"]


def test_a_writefile_cell_is_a_program_of_its_own_in_a_notebook_and_in_its_export():
    # the same cells as a notebook and as nbconvert's .py: the one mechanism (mixed/magics.py)
    from xrt2pjrt.mixed import exported

    program = "import torch_xla.core.xla_model as xm\nprint(xm.get_ordinal(), xm.xrt_world_size())\n"
    text = _notebook(
        ["import torch_xla.core.xla_model as xm\n"], ["%%writefile train.py\n", program], ["n = xm.xrt_world_size()\n"]
    )
    cells = _cells(_twice(text).text)
    written = "import torch_xla.runtime as xr\nprint(xr.global_ordinal(), xr.world_size())\n"
    assert cells == ["import torch_xla.runtime as xr\n", "%%writefile train.py\n" + written, "n = xr.world_size()\n"]
    export = (
        f"import torch_xla.core.xla_model as xm\nget_ipython().run_cell_magic('writefile', 'train.py', "
        f"{program!r})\nn = xm.xrt_world_size()\n"
    )
    assert exported.rewrite(export, ALL).text == (
        f"import torch_xla.runtime as xr\nget_ipython().run_cell_magic('writefile', 'train.py', {written!r})\n"
        "n = xr.world_size()\n"
    )


def test_a_cell_of_imports_only_keeps_the_imports_the_cells_below_now_use():
    """issue 32's tenth round: a notebook run from part way down lost its import; the cell
    above that imports torch_xla may not have run."""
    text = _notebook(
        ["import torch_xla\n", "import torch_xla.core.xla_model as xm\n", "d = xm.xla_device()"],
        ["print('training')"],
        ["import torch_xla.core.xla_model as xm"],
        ["device = xm.xla_device()\n", "n = xm.xrt_world_size()"],
    )
    cells = _cells(_twice(text).text)
    assert cells[2] == "import torch_xla\nimport torch_xla.runtime as xr"
    assert cells[3] == "device = torch_xla.device()\nn = xr.world_size()"


def test_a_cell_of_imports_whose_names_nothing_below_uses_is_emptied():
    text = _notebook(
        ["import torch_xla\n", "import torch_xla.core.xla_model as xm\n", "d = xm.xla_device()"],
        ["import torch_xla.core.xla_model as xm"],
        ["print('no xla here')"],
    )
    assert _cells(notebook.rewrite(text, ALL).text)[1:] == ["", "print('no xla here')"]


def test_a_cell_of_imports_the_rewrite_leaves_is_left():
    text = _notebook(
        ["import torch_xla.distributed.xla_multiprocessing as xmp"],
        ["import torch_xla.core.xla_model as xm"],
        ["xmp.spawn(fn)\n", "print(xm.is_master_ordinal())"],
    )
    assert _cells(notebook.rewrite(text, ALL).text)[:2] == _cells(text)[:2]
