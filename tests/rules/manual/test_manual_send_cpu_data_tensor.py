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


@pytest.mark.parametrize("body, reported", [
    # a dict, a sequence or a number comes back as it went; a result no code reads changes nothing
    ("state = xm.send_cpu_data_to_device(model.state_dict(), device)", False),
    ("batch = {'x': x.clone(), 'n': 3}\n    batch = xm.send_cpu_data_to_device(batch, device)", False),
    ("xm.send_cpu_data_to_device(t, device)", False),
    # what may be one tensor, on some branch: reported
    ("v = xm.send_cpu_data_to_device(torch.get_rng_state(), device)", True),
    ("batch = {'x': x} if ok else x.clone()\n    batch = xm.send_cpu_data_to_device(batch, device)", True),
    ("v = xm.send_cpu_data_to_device(t, device)", True),
])
def test_a_send_cpu_data_to_device_of_a_value_proven_no_tensor_or_thrown_away_is_not_reported(body, reported):
    source = f"import torch\nimport torch_xla.core.xla_model as xm\n\ndef load(model, t, x, ok, device):\n    {body}\n"
    assert [item.rule for item in migrate(source).manual] == ["manual-send-cpu-data-tensor"] * reported
