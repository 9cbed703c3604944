"""env-xrt-cpu-topology beyond its examples: a device map in Python becomes the PJRT_DEVICE its
value names, and what a person must decide is said on each line."""

from python_migrate import migrate


def test_gpu_device_map_becomes_cuda_with_a_decision_for_2_9():
    outcome = migrate("""\
        import os
        os.environ['XRT_DEVICE_MAP'] = 'GPU:0;/job:localservice/replica:0/task:0/device:XLA_GPU:0'
        os.environ['XRT_WORKERS'] = 'localservice:0;grpc://localhost:40934'
        """)
    assert outcome.text == (
        "import os\n# TODO(xrt2pjrt): stay on torch_xla 2.8 for GPUs [env-xrt-cpu-topology]\n"
        "os.environ['PJRT_DEVICE'] = 'CUDA'\n"
    )
    assert "2.9 dropped CUDA: 'No PjRtPlugin registered for: CUDA'" in outcome.manual[0].detail
    assert [(f.rule, f.line) for f in outcome.manual] == [("env-xrt-cpu-topology", 2)]


def test_tpu_node_map_keeps_tpu_and_reports_the_node_on_each_line():
    outcome = migrate("""\
        import os
        os.environ['XRT_WORKERS'] = 'tpu_worker:0;grpc://10.0.0.2:8470'
        os.environ['XRT_DEVICE_MAP'] = 'TPU:0;/job:tpu_worker/replica:0/task:0/device:TPU:0'
        """)
    assert outcome.text.endswith("[env-xrt-cpu-topology]\nos.environ['PJRT_DEVICE'] = 'TPU'\n")
    assert [(f.rule, f.line) for f in outcome.manual] == [("env-xrt-cpu-topology", 2), ("env-xrt-cpu-topology", 3)]
    assert all(f.detail.startswith("this configured a remote TPU node") for f in outcome.manual)


def test_device_map_from_a_variable_keeps_cpu_and_says_it_could_not_be_read():
    outcome = migrate("""\
        import os
        os.environ['XRT_DEVICE_MAP'] = device_map
        """)
    assert outcome.text.endswith(
        "# TODO(xrt2pjrt): set PJRT_DEVICE by the map's device [env-xrt-cpu-topology]\n"
        "os.environ['PJRT_DEVICE'] = 'CPU'\n"
    )
    assert outcome.manual[0].detail.endswith("set PJRT_DEVICE to CPU, TPU or CUDA by it")
    assert [f.line for f in outcome.manual] == [2]
