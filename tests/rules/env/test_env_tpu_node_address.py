"""env-tpu-node-address beyond its examples: the TPU node's address and profiler in real shapes."""

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
