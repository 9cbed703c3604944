"""api-xla-device beyond its examples: the spelling follows the target release, and a device
index says what it counts under PJRT."""

import pytest

from python_migrate import migrate, text
from xla_run import run_on_cpu


@pytest.mark.parametrize(
    "version, expected",
    [
        ((2, 2), "xm.xla_device()"),
        ((2, 3), "torch_xla.device()"),
        ((2, 9), "torch_xla.device()"),
    ],
)
def test_xla_device_spelling_follows_target_version(version, expected):
    out = text("import torch_xla.core.xla_model as xm\n\nd = xm.xla_device()\n", target_version=version)
    assert f"d = {expected}\n" in out


@pytest.mark.parametrize(
    "call, reported",
    [
        ("xm.xla_device(n=index)", True),
        ("xm.xla_device(1)", True),
        ("xm.xla_device(0)", False),
        ("xm.xla_device(n=None)", False),
        ("xm.xla_device()", False),
    ],
)
def test_a_device_index_says_what_it_counts_under_pjrt(call, reported):
    # XRT code picked replica `index`'s device; a PJRT replica sees its own device only
    # (torch_xla.device(1) raised IndexError on CPU)
    out = migrate(
        f"import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
        f"def _mp_fn(index):\n    device = {call}\n\nxmp.spawn(_mp_fn)\n"
    )
    assert [item.rule for item in out.manual] == ["api-xla-device"] * reported
    assert "torch_xla.device(" in out.text


@pytest.mark.parametrize(
    "source, says",
    [
        ("def device_of(local_rank):\n    return xm.xla_device(local_rank)\n", "n meant its own"),
        # One process choosing among the host's devices: XRT counted the TPU cores from xla:1
        # (xla:0 was the host's CPU device: torch_xla 1.8's Colab notebook takes "the first Cloud
        # TPU core ('xla:1')"), PJRT counts its chips from xla:0. Issue 32's earlier counts took
        # these for false alarms, on the belief that the index kept its meaning.
        ("class OneDevice:\n    def __init__(self, core):\n        self.device = xm.xla_device(core)\n", "from xla:1"),
        ("def setup(idx=None):\n    return xm.xla_device(n=idx)\n\nsetup(2)\n", "from xla:1"),
        ("def run(fold):\n    return xm.xla_device(fold + 1)\n", "from xla:1"),
        ("device = xm.xla_device(n=2, devkind='TPU')\n", "from xla:1"),
    ],
)
def test_an_index_says_what_it_counts_inside_the_replicas_and_outside(source, says):
    out = migrate("import torch_xla.core.xla_model as xm\n\n" + source)
    assert [item.rule for item in out.manual] == ["api-xla-device"]
    assert says in out.manual[0].message


@pytest.mark.slow
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


@pytest.mark.parametrize("devkind, reported", [("'TPU'", False), ("'CPU'", True), ("'GPU'", True), ("kind", True)])
def test_a_dropped_devkind_is_to_decide_unless_it_asked_for_the_tpus_pjrt_gives(devkind, reported):
    # BigGAN-Pytorch-TPU asks xla_device(devkind='TPU') six times: PJRT_DEVICE=TPU is that
    out = migrate(f"import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device(devkind={devkind})\n")
    assert out.text.endswith("device = torch_xla.device()\n")
    assert [item.rule for item in out.manual] == ["api-xla-device"] * reported


@pytest.mark.parametrize(
    "calls, reported",
    [("device = get_device()\n", False), ("", False), ("device = get_device(2)\n", True), ("get_device(n=1)\n", True)],
)
def test_a_helper_passing_its_none_default_through_is_asked_only_where_given(calls, reported):
    # round 14: a `get_device(n=None)` helper every caller calls bare gets the first device, as on XRT
    source = (
        "import torch_xla.core.xla_model as xm\n\n"
        "def get_device(n=None):\n    return xm.xla_device(n=n, devkind='TPU')\n\n" + calls
    )
    assert [item.rule for item in migrate(source).manual] == ["api-xla-device"] * reported
