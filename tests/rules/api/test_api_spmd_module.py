"""api-spmd-module beyond its examples: what it moves is in the installed torch_xla, and a file
that takes anything else from the old module keeps its import and its report."""

import pytest

from python_migrate import migrate, same
from torch_xla_names import resolve
from xrt2pjrt.rules.api.api_spmd_module import MOVED, NEW


@pytest.mark.xla
def test_every_moved_name_is_in_the_installed_spmd_module():
    for names in MOVED.values():
        for name in sorted(names):
            resolve(f"{NEW}.{name}")
    assert {"Mesh", "mark_sharding", "clear_sharding"} <= MOVED["torch_xla.experimental.xla_sharding"]


def test_a_private_helper_keeps_the_old_import_and_its_report():
    outcome = migrate(
        "import torch_xla.experimental.xla_sharding as xs\n\nspec = xs._get_tile_assignment(mesh, (0, 1))\n"
    )
    assert outcome.text.endswith(
        "import torch_xla.experimental.xla_sharding as xs\n\nspec = xs._get_tile_assignment(mesh, (0, 1))\n"
    )
    assert [f.rule for f in outcome.manual] == ["import-gone-module"]


def test_the_module_passed_on_is_left_to_a_person():
    outcome = migrate("import torch_xla.experimental.xla_sharding as xs\n\nsetup(xs)\n")
    assert "import torch_xla.experimental.xla_sharding as xs" in outcome.text
    assert [f.rule for f in outcome.manual] == ["import-gone-module"]


def test_left_alone_for_2_1_where_the_new_module_is_not_yet():
    same("from torch_xla.experimental.xla_sharding import Mesh\n\nmesh = Mesh(ids, (2, 2))\n", target_version=(2, 1))
