"""manual-send-cpu-data-tensor beyond its examples: reported on evidence of one tensor (the
value, or its result read as one), not for containers or what the text shows nothing of."""

import pytest

from python_migrate import migrate


@pytest.mark.parametrize(
    "data, reported",
    [
        # checked on CPU with torch_xla 2.9: a tensor comes back as a list, a dict as a dict
        ("couplings", False),
        ("torch.ones(2)", True),
        ("data=weights", False),
        ("data=weights.detach()", True),
        ("(x, y)", False),
        ("[x, y]", False),
        ("{'x': x}", False),
        ("*batch", False),
    ],
)
def test_a_send_cpu_data_to_device_of_what_may_be_one_tensor_is_reported(data, reported):
    source = f"import torch\nimport torch_xla.core.xla_model as xm\n\nv = xm.send_cpu_data_to_device({data}, device=device)\n"
    assert [item.rule for item in migrate(source).manual] == ["manual-send-cpu-data-tensor"] * reported
    assert not migrate(source, target="shim").manual  # the shim's returns a tensor for a tensor


@pytest.mark.parametrize(
    "body, reported",
    [
        # a dict, a sequence or a number comes back as it went; a result no code reads changes nothing
        ("state = xm.send_cpu_data_to_device(model.state_dict(), device)", False),
        ("batch = {'x': x.clone(), 'n': 3}\n    batch = xm.send_cpu_data_to_device(batch, device)", False),
        ("xm.send_cpu_data_to_device(t, device)", False),
        # what may be one tensor, on some branch: reported
        ("v = xm.send_cpu_data_to_device(torch.get_rng_state(), device)", True),
        ("batch = {'x': x} if ok else x.clone()\n    batch = xm.send_cpu_data_to_device(batch, device)", True),
        ("v = xm.send_cpu_data_to_device(t, device)", False),  # nothing shown of t
        ("v = xm.send_cpu_data_to_device(t, device)\n    n = v.shape[0]", True),  # the result read as a tensor
        ("v = xm.send_cpu_data_to_device(t, device)\n    first = v[0]", False),
        ("v = xm.send_cpu_data_to_device(t, device)\n    v = v.to(device)", True),
        # a model moved, then its own .to(): a module comes back as it went
        (
            "from encoders import Encoder\n    net = Encoder.from_pretrained('base')\n    net = xm.send_cpu_data_to_device(net, device)\n    net.to(device)",
            False,
        ),
        ("net = Encoder(4)\n    net = xm.send_cpu_data_to_device(net, device).cpu()", False),
    ],
)
def test_a_send_cpu_data_to_device_of_a_value_proven_no_tensor_or_thrown_away_is_not_reported(body, reported):
    source = f"import torch\nimport torch_xla.core.xla_model as xm\n\ndef load(model, t, x, ok, device):\n    {body}\n"
    assert [item.rule for item in migrate(source).manual] == ["manual-send-cpu-data-tensor"] * reported


def test_a_state_dict_annotated_as_a_dict_of_tensors_is_not_reported():
    # issue 32, in a shape of its own: a device helper moving a state dict, annotated so
    assert not migrate(
        "from typing import Dict\nimport torch\nimport torch_xla.core.xla_model as xm\n\n"
        "class Device:\n    def to_device(self, weights: Dict[str, torch.Tensor]):\n"
        "        moved = xm.send_cpu_data_to_device(weights, device=self.device)\n        return moved\n"
    ).manual
