"""env-shell-xrt-cpu beyond its examples: a GPU map by the target release."""

from text_migrate import rewrite_shell as rewrite


def test_gpu_map_becomes_cuda_without_a_decision_for_torch_xla_2_8_and_gpu_for_2_1():
    text = 'export XRT_DEVICE_MAP="GPU:0;/job:localservice/replica:0/task:0/device:XLA_GPU:0"\n'
    assert (rewrite(text, target_version=(2, 8)).text, rewrite(text, target_version=(2, 8)).manual) == (
        "export PJRT_DEVICE=CUDA\n",
        [],
    )
    assert rewrite(text, target_version=(2, 1)).text == "export PJRT_DEVICE=GPU\n"
