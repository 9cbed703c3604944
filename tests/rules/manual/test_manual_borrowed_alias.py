"""manual-borrowed-alias beyond its examples: torch_xla's modules borrowed from a module of
the project, reported once per name."""

from python_migrate import migrate


def test_a_torch_xla_module_borrowed_from_a_module_of_the_project_is_reported_once_per_name():
    # `from .tpu_utils import xm, xmp`: the file holds no torch_xla word, yet calls XRT-era APIs.
    out = migrate("from .tpu_utils import xm, xmp\n\nxmp.spawn(f, nprocs=8)\nn = xm.xrt_world_size()\nr = xm.get_ordinal()\n")
    assert [(m.rule, m.line) for m in out.manual] == [("manual-borrowed-alias", 3), ("manual-borrowed-alias", 4)]
    assert "xmp comes from .tpu_utils" in out.manual[0].message
    assert migrate(out.text).text == out.text
