"""manual-borrowed-alias beyond its examples: torch_xla's modules borrowed from a module of
the project, reported once per name."""

from python_migrate import migrate


def test_a_torch_xla_module_borrowed_from_a_module_of_the_project_is_reported_once_per_name():
    # `from .tpu_utils import xm, xmp`: the file holds no torch_xla word, yet calls XRT-era APIs.
    out = migrate(
        "from .tpu_utils import xm, xmp\n\nxmp.spawn(f, nprocs=8)\nn = xm.xrt_world_size()\nr = xm.get_ordinal()\n"
    )
    assert [(m.rule, m.line) for m in out.manual] == [("manual-borrowed-alias", 3), ("manual-borrowed-alias", 4)]
    assert "xmp comes from .tpu_utils" in out.manual[0].detail
    assert migrate(out.text).text == out.text


def test_a_parameter_xm_is_reported_at_the_first_call_the_target_lacks_wherever_it_stands():
    # deeptrane's torch_data.py: get_dataloaders(cfg, ..., xm) logs with xm.master_print, which
    # 2.9 has, then hands xm.get_ordinal() (gone in 2.7) to a sampler inside a call of its own
    source = (
        "import torch_xla\n\ndef loaders(ds, xm):\n    xm.master_print('ds:', len(ds))\n"
        "    return DistributedSampler(\n        ds,\n        rank=xm.get_ordinal(),\n    )\n"
    )
    assert [(item.rule, item.line) for item in migrate(source).manual] == [("manual-borrowed-alias", 7)]
    assert "xm.get_ordinal() here" in migrate(source).manual[0].detail
    only_shown = "import torch_xla\n\ndef loaders(ds, xm):\n    xm.master_print('ds:', len(ds))\n"
    assert not migrate(only_shown).manual
