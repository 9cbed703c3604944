"""api-full-mat-mul-precision beyond its examples: the rewritten call sets, on the installed
torch_xla, the precision the old bool chose; a value known only at run time is reported."""

import pytest

from python_migrate import migrate
from xla_run import run_on_cpu


@pytest.mark.slow
@pytest.mark.xla
@pytest.mark.parametrize("full, precision", [("True", "highest"), ("False", "default")])
def test_the_rewrite_sets_the_precision_the_bool_chose(full, precision):
    out = migrate(f"import torch_xla\n\ntorch_xla._XLAC._xla_set_use_full_mat_mul_precision({full})\n")
    ran = run_on_cpu(out.text + "print(torch_xla.backends.get_mat_mul_precision())\n")
    assert ran.split() == [precision]


def test_a_value_known_at_run_time_is_reported_not_guessed():
    source = "import torch_xla\n\ndef setup(full):\n    torch_xla._XLAC._xla_set_use_full_mat_mul_precision(full)\n"
    out = migrate(source)
    assert "_xla_set_use_full_mat_mul_precision(full)" in out.text
    assert [item.rule for item in out.manual] == ["api-not-in-target"]
