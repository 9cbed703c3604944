"""env-xrt-plumbing beyond its examples: a test of an XRT server variable is always False now."""

from python_migrate import migrate


def test_a_test_of_an_xrt_server_variable_is_said_to_be_always_false_now():
    # catalyst 22: os.environ.get("XRT_TORCH_DIST_ROOT") is not None decided "distributed on XLA"
    out = migrate(
        "import os\nimport torch_xla\n\ndef is_xla_ddp():\n"
        "    return os.environ.get('XRT_TORCH_DIST_ROOT') is not None\n"
    )
    (item,) = out.manual
    assert "is now always False" in item.detail and "use xr.world_size() > 1" in item.detail
