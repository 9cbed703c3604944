"""manual-send-cpu-data-tensor beyond its examples: what may be one tensor, and the
containers that are not."""

import pytest

from python_migrate import migrate


@pytest.mark.parametrize("data, reported", [
    # checked on CPU with torch_xla 2.9: a tensor comes back as a list, a dict as a dict
    ("couplings", True), ("torch.ones(2)", True), ("data=weights", True),
    ("(x, y)", False), ("[x, y]", False), ("{'x': x}", False), ("*batch", False)])
def test_a_send_cpu_data_to_device_of_what_may_be_one_tensor_is_reported(data, reported):
    source = f"import torch\nimport torch_xla.core.xla_model as xm\n\nv = xm.send_cpu_data_to_device({data}, device=device)\n"
    assert [item.rule for item in migrate(source).manual] == ["manual-send-cpu-data-tensor"] * reported
    assert not migrate(source, target="shim").manual  # the shim's returns a tensor for a tensor
