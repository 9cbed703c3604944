"""The Python rewriter as a whole (python/rewriter.py): bad input, the trigger that skips
files, rule selection and target releases, and no statement lost however many rewrites."""

import ast
import gc
from pathlib import Path

import libcst as cst
import pytest

from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt import codemod, file_caches, rewriters
from xrt2pjrt.rewriters import SourceError
from xrt2pjrt.python import rewriter as python
from python_migrate import migrate, text

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "legacy_mnist" / "train.py"


def test_mark_step_before_2_4_is_kept_and_pjrt_xla_device_before_2_3_goes_to_runtime():
    assert "xm.mark_step()" in text("import torch_xla.core.xla_model as xm\nxm.mark_step()\n", target_version=(2, 3))
    out = text("from torch_xla.experimental import pjrt\nd = pjrt.xla_device()\n", target_version=(2, 2))
    assert "d = xr.xla_device()" in out


def test_unparseable_source_raises_with_line_and_column():
    with pytest.raises(SourceError) as error:
        python.rewrite("import torch_xla\n\ndef f(:\n    pass\n", Options(rules=frozenset(all_rules())))
    at = error.value.range
    assert (at.start_line, at.start_column) == (3, 7)  # the ':' Python's parser stops at


@pytest.mark.parametrize(
    "source, triggers",
    [
        ("import torch\nprint(torch.ones(2))\n", False),
        ("from xmanager import xm\nxm.get_ordinal()\n", False),
        ("import torch_xla\n", True),
        ("os.environ['XRT_TPU_CONFIG'] = 'x'\n", True),
        ("os.environ.get(xenv.HOST_ORDINAL)\n", True),
    ],
)
def test_trigger_skips_files_with_nothing_to_do(source, triggers):
    assert bool(rewriters.trigger_for("python").search(source)) is triggers


def test_select_one_rule_runs_only_it():
    outcome = migrate(
        "import torch_xla.core.xla_model as xm\nxm.get_ordinal()\nxm.mark_step()\n", rules=frozenset({"api-mark-step"})
    )
    assert "xm.get_ordinal()" in outcome.text and "torch_xla.sync()" in outcome.text


def test_many_function_local_imports_lose_no_statement():
    """Regression: nodes were once tracked by bare id(), and a freed node's id reused by a
    new one made an unrelated statement vanish or turn into an import (seen on
    lightning_fabric's XLAEnvironment, whose methods each import xm locally)."""
    methods = []
    for i in range(40):
        methods.append(f"""
    def world_{i}(self):
        import torch_xla.core.xla_model as xm

        return xm.xrt_world_size() + {i}

    def note_{i}(self):
        log.debug("note {i}")

    def host_{i}(self):
        import torch_xla.core.xla_env_vars as xenv

        return int(os.environ.get(xenv.HOST_ORDINAL, {i}))
""")
    source = "import os\n\n\nclass Env:\n" + "".join(methods)
    out = text(source)
    for i in range(40):
        assert f'        log.debug("note {i}")\n' in out
        assert f"        import torch_xla.runtime as xr\n\n        return xr.world_size() + {i}\n" in out
        assert f'return int(os.environ.get("XRT_HOST_ORDINAL", {i}))' in out  # in the file's quotes
    assert out.count("import torch_xla.runtime as xr") == 40
    assert "xla_env_vars" not in out and "xla_model" not in out


def test_a_files_trees_go_with_its_rewrite_not_at_a_collection():
    # codemod rewrites with the cyclic collector off and counts on reference counting to
    # drop each file's trees (codemod._no_cyclic_gc): a cycle through one kept them all
    source = EXAMPLE.read_text() + "get_ipython().run_cell_magic('time', '', 'print(xm.get_ordinal())\\n')\n"
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        outcome = codemod.rewrite("python", source, Options(rules=all_rules()))
        file_caches.forget()
        gc.collect()
        kept = [type(o).__name__ for o in gc.garbage if isinstance(o, (ast.AST, cst.CSTNode))]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert outcome.changes and outcome.manual  # (the spawn, the fold and the cell magic were read)
    assert kept == []
