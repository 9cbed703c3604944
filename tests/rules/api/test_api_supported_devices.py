"""api-supported-devices beyond its examples: a device list asked for by a kind named elsewhere."""

from python_migrate import migrate


def test_a_device_list_asked_for_by_a_kind_named_elsewhere_says_it_no_longer_tells_the_kind():
    # timm 0.6's is_xla_available('TPU'): the list, then len(devices) >= 1 on the next line,
    # said True on every CPU host once devkind was gone
    out = migrate(
        "import torch_xla.core.xla_model as xm\n\ndef is_xla_available(xla_device_type=None):\n"
        "    devices = xm.get_xla_supported_devices(devkind=xla_device_type)\n    return len(devices) >= 1\n"
    )
    (item,) = out.manual
    assert item.rule == "api-supported-devices" and item.detail.startswith("devkind=xla_device_type dropped: ")
    assert "CPU devices on a CPU host" in item.detail and "compare xr.device_type() with the kind" in item.detail
