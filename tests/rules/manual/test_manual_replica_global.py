"""manual-replica-global beyond its examples: the shapes of issue 32's ninth round (a spawned
function that keeps its device in a module global, which other functions read)."""

import pytest

from python_migrate import migrate

_HEAD = (
    "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\ndevice = None\n"
)


@pytest.mark.parametrize(
    "body, reported",
    [
        ("    global device\n    device = xm.xla_device()\n    train()\n", True),
        ("    global device, rank\n    rank = xm.get_ordinal()\n    train()\n", True),
        # a global of the same value in every replica, or the replica's own name: nothing differs
        ("    global device\n    device = 'xla'\n    train()\n", False),
        ("    global model\n    model = Net()\n    here = xm.xla_device()\n    train(here)\n", False),
    ],
)
def test_a_replica_s_device_or_number_in_a_global_is_reported(body, reported):
    source = f"{_HEAD}\ndef _mp_fn(index):\n{body}\nxmp.spawn(_mp_fn)\n"
    assert ("manual-replica-global" in [item.rule for item in migrate(source).manual]) is reported


def test_a_global_set_in_the_launching_process_is_not():
    source = f"{_HEAD}\ndef setup():\n    global device\n    device = xm.xla_device()\n\nsetup()\n"
    assert "manual-replica-global" not in [item.rule for item in migrate(source).manual]
