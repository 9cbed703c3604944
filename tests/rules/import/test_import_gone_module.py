"""import-gone-module beyond its examples: imports of modules the target lacks go when unused
and are marked when used, by the target release."""

from python_migrate import migrate


def test_an_unused_import_of_the_deleted_pjrt_module_goes_with_the_rest():
    # Found in pytorch/xla v1.13's own tests: an import nobody used, which fails on 2.5+.
    out = migrate("import torch_xla.core.xla_model as xm\nfrom torch_xla.experimental import pjrt\n\n"
                  "def f():\n    return xm.xla_device()\n")
    assert out.text == "import torch_xla\n\ndef f():\n    return torch_xla.device()\n"
    assert any(c.rule == "import-gone-module" and c.line == 2 for c in out.changes) and not out.manual
