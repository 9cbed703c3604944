"""The replacement table (python/replacements.py), which api-not-in-target and
import-gone-module advise from, held to the API table of 2.9 and to the installed torch_xla:
what it replaces is gone, what it names instead exists."""

from __future__ import annotations

import re

import pytest

from torch_xla_names import resolve as _resolve
from xrt2pjrt.python import api_surface
from xrt2pjrt.python import replacements as target_api


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
    named = {m for advice in target_api.REPLACEMENTS.values() for m in re.findall(r"torch_xla(?:\.\w+)+", str(advice))}
    assert named
    for dotted in sorted(named):
        _resolve(dotted)
