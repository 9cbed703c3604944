"""api-xla-device beyond its examples: the spelling follows the target release, and a device
index says what it counts under PJRT."""

import pytest

from python_migrate import migrate, text
from xla_run import run_on_cpu


@pytest.mark.parametrize("version, expected", [
    ((2, 2), "xm.xla_device()"),
    ((2, 3), "torch_xla.device()"),
    ((2, 9), "torch_xla.device()"),
])
def test_xla_device_spelling_follows_target_version(version, expected):
    out = text("import torch_xla.core.xla_model as xm\n\nd = xm.xla_device()\n", target_version=version)
    assert f"d = {expected}\n" in out


@pytest.mark.parametrize("call, reported", [
    ("xm.xla_device(n=index)", True), ("xm.xla_device(1)", True), ("xm.xla_device(0)", False),
    ("xm.xla_device(n=None)", False), ("xm.xla_device()", False)])
def test_a_device_index_says_what_it_counts_under_pjrt(call, reported):
    # XRT code picked replica `index`'s device; a PJRT replica sees its own device only
    # (torch_xla.device(1) raised IndexError on CPU)
    out = migrate(f"import torch_xla.core.xla_model as xm\n\ndef _mp_fn(index):\n    device = {call}\n")
    assert [item.rule for item in out.manual] == ["api-xla-device"] * reported
    assert "torch_xla.device(" in out.text


@pytest.mark.xla
def test_an_index_past_the_last_device_raises():
    # one CPU device in this process: index 0 is it, 1 (one past the last) and beyond raise
    ran = run_on_cpu("""
        import torch_xla
        print(torch_xla.device(0))
        for index in (1, 2):
            try:
                torch_xla.device(index)
            except IndexError:
                print('IndexError')
        """)
    assert ran.split() == ["xla:0", "IndexError", "IndexError"]
