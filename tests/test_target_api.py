"""The check of every torch_xla name a migrated file uses against the target release
(rules/target_api.py): imports of what the target lacks, the backstop over the rest, and
the replacement table held to the installed torch_xla."""

from __future__ import annotations

import importlib
import re

import pytest

from xrt2pjrt.registry import Options, all_rules
from xrt2pjrt.rules import api_surface, python, target_api

OPTIONS = Options(rules=frozenset(rid for rid, rule in all_rules().items() if rule.kind == "python"))


def _resolve(dotted: str):
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:end]))
        except ImportError:
            continue
        for part in parts[end:]:
            obj = getattr(obj, part)
        return obj
    raise ImportError(dotted)


@pytest.mark.parametrize("dotted", sorted(target_api.REPLACEMENTS))
def test_every_replaced_name_is_lacking_in_2_9_by_the_table(dotted):
    assert api_surface.lacks(dotted, (2, 9)) is not None


@pytest.mark.xla
@pytest.mark.parametrize("dotted", sorted(target_api.REPLACEMENTS))
def test_every_replaced_name_is_really_gone_from_the_installed_torch_xla(dotted):
    with pytest.raises((ImportError, AttributeError)):
        _resolve(dotted)


@pytest.mark.xla
def test_what_the_replacements_name_exists_in_the_installed_torch_xla():
    named = {m for advice in target_api.REPLACEMENTS.values() for m in re.findall(r"torch_xla(?:\.\w+)+", advice)}
    assert named
    for dotted in sorted(named):
        _resolve(dotted)


def test_imports_of_gone_modules_go_when_unused_and_are_marked_when_used():
    # pytorch/xla v1.8's cached-dataset notebook, and PyTorch Lightning's sharding code
    out = python.rewrite(
        "import torch_xla.utils.gcsfs as gcs\nimport torch_xla.utils.cached_dataset as xcd\n"
        "from torch_xla.experimental import xla_sharding as xs\n\nds = xcd.CachedDataset(None, 'gs://bucket/cache')\n",
        OPTIONS)
    (item,) = out.manual
    assert item.line == 2 and "a cache of your own" in item.message
    assert out.text == (f"# TODO(xrt2pjrt): {item.message} [import-gone-module]\n"
                        "import torch_xla.utils.cached_dataset as xcd\n\n"
                        "ds = xcd.CachedDataset(None, 'gs://bucket/cache')\n")
    assert [(c.rule, c.line) for c in out.changes] == [("import-gone-module", 1), ("import-gone-module", 3)]
    again = python.rewrite(out.text, OPTIONS)
    assert again.text == out.text and [f.message for f in again.manual] == [item.message]


def test_an_older_target_keeps_what_it_still_has():
    source = "from torch_xla.experimental import pjrt\n\nfn = pjrt.spawn_threads\n"
    assert python.rewrite(source, Options(OPTIONS.rules, target_version=(2, 4))).manual[0].rule == "manual-pjrt-other"
    assert not any(f.rule == "import-gone-module" for f in python.rewrite(
        source, Options(OPTIONS.rules, target_version=(2, 4))).manual)
    assert any(f.rule == "import-gone-module" for f in python.rewrite(source, OPTIONS).manual)
