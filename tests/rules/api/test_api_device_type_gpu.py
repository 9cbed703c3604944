"""api-device-type-gpu beyond its examples: a test of the device type against 'GPU' names CUDA."""

import pytest

from python_migrate import text


@pytest.mark.parametrize(
    "source, after",
    [
        ("xm.xla_device_hw(d) != \"GPU\"", "xm.xla_device_hw(d) != \"CUDA\""),
        ("'GPU' == xr.device_type()", "'CUDA' == xr.device_type()"),
        ("xm.xla_device_hw(d) == 'TPU'", "xm.xla_device_hw(d) == 'TPU'"),
        ("kind == 'GPU'", "kind == 'GPU'"),
    ],
)
def test_a_gpu_device_type_test_names_cuda(source, after):
    out = text(f"import torch_xla.core.xla_model as xm\nimport torch_xla.runtime as xr\n\nok = {source}\n")
    assert f"ok = {after}\n" in out
