"""env-pjrt-device-gpu and env-shell-pjrt-device-gpu beyond their examples: what the installed
torch_xla 2.9 does with either GPU name, and the forms and targets."""

import os
import subprocess
import sys

import pytest

from python_migrate import migrate
from text_migrate import rewrite_shell


@pytest.mark.slow
@pytest.mark.xla
@pytest.mark.parametrize("device", ["GPU", "CUDA"])
def test_torch_xla_2_9_refuses_both_gpu_names(device):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XLA_", "GPU_"))} | {"PJRT_DEVICE": device}
    ran = subprocess.run(
        [sys.executable, "-c", "import torch, torch_xla; torch.ones(1, device=torch_xla.device())"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode != 0 and f"No PjRtPlugin registered for: {device}" in ran.stderr


def test_gpu_is_2_1_s_own_name_there():
    source = "import os\n\nos.environ['PJRT_DEVICE'] = 'GPU'\n"
    assert migrate(source, target_version=(2, 1)).text == source


def test_a_dict_a_launcher_builds_gets_cuda():
    outcome = migrate("import os\n\nenv = {**os.environ, 'PJRT_DEVICE': 'GPU'}\n", target_version=(2, 5))
    assert outcome.text == "import os\n\nenv = {**os.environ, 'PJRT_DEVICE': 'CUDA'}\n" and not outcome.manual


def test_docker_e_and_a_prefix_get_cuda_for_2_8():
    outcome = rewrite_shell("docker run -e PJRT_DEVICE=GPU img python3 train.py\n", target_version=(2, 8))
    assert outcome.text == "docker run -e PJRT_DEVICE=CUDA img python3 train.py\n"
    assert [f.rule for f in outcome.changes] == ["env-shell-pjrt-device-gpu"]


def test_a_value_from_elsewhere_is_left_alone():
    outcome = rewrite_shell('export PJRT_DEVICE="$DEVICE"\n')
    assert outcome.text == 'export PJRT_DEVICE="$DEVICE"\n' and not outcome.manual
