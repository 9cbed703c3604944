"""manual-device-probe beyond its examples: on the installed torch_xla the probe is True on a host
without a TPU, and the test the item advises is False there; only a short try that catches what
XRT raised is a probe."""

import pytest

from python_migrate import migrate
from xla_run import run_on_cpu

PROBE = """\
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr

def is_tpu_available():
    try:
        _ = xm.xla_device()
        return True
    except RuntimeError:
        return False

print(is_tpu_available(), xr.device_type() == 'TPU')
"""


@pytest.mark.slow
@pytest.mark.xla
def test_the_probe_says_tpu_on_a_cpu_host_and_the_advised_test_does_not():
    assert run_on_cpu(PROBE).split() == ["True", "False"]


def test_the_probe_is_reported_after_the_rename():
    out = migrate(PROBE)
    assert [item.rule for item in out.manual] == ["manual-device-probe"]
    assert "_ = torch_xla.device()" in out.text


@pytest.mark.parametrize(
    "source",
    [
        # a try around a whole program: its except is the program's, not a probe's
        "import torch_xla.core.xla_model as xm\n\ntry:\n    device = xm.xla_device()\n    model.to(device)\n"
        "    train(model)\n    save(model)\nexcept Exception:\n    log()\n",
        # the call in the handler: the fallback, not the probe
        "import torch_xla.core.xla_model as xm\n\ntry:\n    device = gpu()\nexcept RuntimeError:\n"
        "    device = xm.xla_device()\n",
        # a function defined in the try is called later, outside it
        "import torch_xla.core.xla_model as xm\n\ntry:\n    def dev():\n        return xm.xla_device()\n"
        "except RuntimeError:\n    pass\n",
        "import torch_xla.core.xla_model as xm\n\ntry:\n    device = xm.xla_device()\nexcept KeyError:\n    pass\n",
        # round 15: an except that only passes decides nothing (a --tpu flag picks the device)
        "import torch_xla.core.xla_model as xm\n\ntry:\n    dev = xm.xla_device()\nexcept:\n    pass\n",
    ],
)
def test_no_probe_no_item(source):
    assert "manual-device-probe" not in [item.rule for item in migrate(source).manual]


@pytest.mark.parametrize("caught", ["", " (ValueError, RuntimeError)", " BaseException"])
def test_every_except_that_catches_runtime_error_makes_a_probe(caught):
    source = f"import torch_xla\n\ntry:\n    torch_xla.device()\n    ok = True\nexcept{caught}:\n    ok = False\n"
    assert [item.rule for item in migrate(source).manual] == ["manual-device-probe"]


def test_one_probe_is_one_item_however_often_its_try_takes_the_device():
    # a Kaggle set-up cell: the probe, then the device printed twice in the same try
    source = (
        "import torch_xla.core.xla_model as xm\n\ntry:\n    if xm.xla_device().type == 'xla':\n"
        "        print(len(xm.get_xla_supported_devices()))\n        print(xm.xla_device())\nexcept Exception:\n"
        "    pass\n\ntry:\n    device = xm.xla_device()\nexcept RuntimeError:\n    device = None\n"
    )
    assert [item.line for item in migrate(source).manual if item.rule == "manual-device-probe"] == [4, 11]
