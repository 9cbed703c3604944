"""shim-imports beyond its examples: --target shim changes the imports only."""

import textwrap

from python_migrate import migrate, text


def test_shim_target_changes_imports_only():
    out = text(
        """\
        import torch_xla.core.xla_model as xm
        import torch_xla.distributed.xla_multiprocessing as xmp

        def _mp_fn(index):
            print(xm.get_ordinal(), xm.xrt_world_size())

        xmp.spawn(_mp_fn, nprocs=8, start_method='fork')
        """,
        target="shim",
    )
    assert out == textwrap.dedent("""\
        import xrt2pjrt_shim.xla_model as xm
        import xrt2pjrt_shim.xla_multiprocessing as xmp

        def _mp_fn(index):
            print(xm.get_ordinal(), xm.xrt_world_size())

        xmp.spawn(_mp_fn, nprocs=8, start_method='fork')
        """)


def test_a_from_import_of_xrt_names_pointed_at_the_shim_is_no_item():
    # the migrated file runs (checked on CPU): the shim defines both names
    out = migrate(
        "from torch_xla.core.xla_model import xrt_world_size, get_ordinal as go\n\nprint(xrt_world_size(), go())\n",
        target="shim",
    )
    assert out.text.startswith("from xrt2pjrt_shim.xla_model import xrt_world_size, get_ordinal as go\n")
    assert out.manual == []
