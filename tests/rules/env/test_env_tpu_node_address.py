"""env-tpu-node-address beyond its examples: the TPU node's address and profiler in real shapes."""

import pytest

from python_migrate import migrate, same


def test_a_grpc_address_parsed_from_tpu_ip_address_is_reported():
    outcome = migrate("""\
        import os
        import torch

        tpu_ip = os.environ['TPU_IP_ADDRESS'].replace('grpc://', '').split(':')[0]
        """)
    assert [(f.rule, f.line) for f in outcome.manual] == [("env-tpu-node-address", 4)]


def test_a_trace_of_the_node_profiler_port_is_reported():
    outcome = migrate("""\
        import torch_xla.debug.profiler as xp

        def capture(tpu_ip):
            xp.trace(f'{tpu_ip}:8466', '/tmp/tb', duration_ms=2000)
        """)
    assert [(f.rule, f.line) for f in outcome.manual] == [("env-tpu-node-address", 4)]
    assert "xp.start_server(9012)" in outcome.manual[0].message


def test_a_trace_of_a_server_the_program_started_is_left_alone():
    same("""\
        import torch_xla.debug.profiler as xp

        server = xp.start_server(9012)
        xp.trace('localhost:9012', '/tmp/tb')
        """)


XRT_TPU_CONFIG = "os.environ['XRT_TPU_CONFIG'] = 'tpu_worker;0;' + os.environ['TPU_IP_ADDRESS'] + ':8470'"


@pytest.mark.parametrize(
    "lines, reported",
    [
        # the final count: an address set only to build XRT_TPU_CONFIG, whose own item says it all
        (["os.environ['TPU_IP_ADDRESS'] = '10.0.0.2'", XRT_TPU_CONFIG], []),
        (["os.environ['TPU_NAME'] = 'node-1'", "tpu = os.environ['TPU_NAME']", XRT_TPU_CONFIG], [4, 5]),
        (["os.environ['TPU_IP_ADDRESS'] = '10.0.0.2'", XRT_TPU_CONFIG, "up = 'TPU_IP_ADDRESS' in os.environ"], [4, 6]),
    ],
)
def test_an_address_that_only_builds_xrt_tpu_config_is_left_to_its_item(lines, reported):
    source = "import os\nimport torch_xla.core.xla_model as xm\n\n" + "\n".join(lines) + "\n"
    items = migrate(source).manual
    assert [item.line for item in items if item.rule == "env-tpu-node-address"] == reported
    assert "env-xrt-tpu-config" in {item.rule for item in items}
