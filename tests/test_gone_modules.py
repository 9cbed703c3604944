"""The table of torch_xla modules 2.9 no longer has (rules/gone_modules.py), held to the
installed torch_xla, and the rule on the shapes real code imports them in."""

from __future__ import annotations

import importlib

import pytest

from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt.rules import gone_modules, python

OPTIONS = Options(rules=frozenset(rid for rid, rule in all_rules().items() if rule.kind == "python"))


@pytest.mark.xla
@pytest.mark.parametrize("dotted", sorted(gone_modules.GONE))
def test_every_entry_is_really_gone_from_the_installed_torch_xla(dotted):
    module, _, name = dotted.rpartition(".")
    try:
        importlib.import_module(dotted)
    except ModuleNotFoundError:
        return
    assert not hasattr(importlib.import_module(module), name), f"{dotted} still exists"


@pytest.mark.xla
@pytest.mark.parametrize("replacement", ["torch_xla.runtime", "torch_xla.distributed.spmd",
                                         "torch_xla.distributed.spmd.xla_sharded_tensor"])
def test_the_replacements_the_table_names_exist(replacement):
    assert any(replacement in advice for advice in gone_modules.GONE.values())
    importlib.import_module(replacement)


def test_imports_of_gone_modules_go_when_unused_and_are_reported_when_used():
    # pytorch/xla v1.8's cached-dataset notebook, and PyTorch Lightning's sharding code
    out = python.rewrite(
        "import torch_xla.utils.gcsfs as gcs\nimport torch_xla.utils.cached_dataset as xcd\n"
        "from torch_xla.experimental import xla_sharding as xs\n\nds = xcd.CachedDataset(None, 'gs://bucket/cache')\n",
        OPTIONS)
    assert out.text == ("import torch_xla.utils.cached_dataset as xcd\n\n"
                        "ds = xcd.CachedDataset(None, 'gs://bucket/cache')\n")
    assert [(c.rule, c.line) for c in out.changes] == [("import-gone-module", 1), ("import-gone-module", 3)]
    (item,) = out.manual
    assert item.line == 2 and "a cache of your own" in item.message
    assert python.rewrite(out.text, OPTIONS).text == out.text
