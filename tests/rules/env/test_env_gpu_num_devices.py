"""env-gpu-num-devices beyond its examples: reads, launcher environments, older targets."""

from python_migrate import migrate, same


def test_a_read_and_a_child_environment_are_reported_on_2_9():
    outcome = migrate("""\
        import os
        import subprocess
        import torch_xla

        gpus = int(os.environ.get('GPU_NUM_DEVICES', 0))
        subprocess.run(['python', 'train.py'], env=dict(os.environ, **{'GPU_NUM_DEVICES': '4'}))
        """)
    assert [(f.rule, f.line) for f in outcome.manual] == [("env-gpu-num-devices", 5), ("env-gpu-num-devices", 6)]
    assert "GPU_NUM_DEVICES', 0" in outcome.text and "'GPU_NUM_DEVICES': '4'" in outcome.text


def test_left_alone_for_a_target_that_still_reads_it():
    """torch_xla 2.2-2.8 select CUDA by it and their CUDA client needs it (runtime.py, _internal/gpu.py)."""
    same(
        """\
        import os
        import torch_xla

        os.environ['GPU_NUM_DEVICES'] = '4'
        """,
        target_version=(2, 8),
    )
