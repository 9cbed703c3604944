"""env-xrt-replica-vars beyond its examples: the replica variables read through torch_xla's own
getenv_as and xenv names."""

from python_migrate import migrate


def test_an_xrt_variable_read_by_torch_xlas_own_getenv_as_is_reported():
    # a Lightning-style environment helper: the xenv name inlined to 'XRT_HOST_ORDINAL' read
    # 0 on every host, where the unmigrated line was a loud AttributeError
    out = migrate(
        "def node_rank():\n    import torch_xla.core.xla_env_vars as xenv\n"
        "    import torch_xla.utils.utils as xu\n"
        "    return xu.getenv_as(xenv.HOST_ORDINAL, int, 0), xu.getenv_as('XRT_SHARD_ORDINAL', int, 0)\n"
    )
    assert [(item.rule, item.message, item.detail) for item in out.manual] == [
        ("env-xrt-replica-vars", "use xr.host_index()", "XRT_HOST_ORDINAL is never set under PJRT"),
        ("env-xrt-replica-vars", "use xr.global_ordinal()", "XRT_SHARD_ORDINAL is never set under PJRT"),
    ]
