"""PJRT_DEVICE=GPU outside Python → CUDA, and GPU or CUDA on torch_xla 2.9 (no CUDA device)
reported.

The text side of env-pjrt-device-gpu (its docstring says why), in every form a kind sets a
variable (export, a command's prefix, docker -e, ENV, a YAML env entry, a .env line, %env).
"""

from __future__ import annotations

from xrt2pjrt.registry import Example
from xrt2pjrt.recorder import todo_line
from xrt2pjrt.text.environment import KEEP, EnvRule
from xrt2pjrt.xrt_variables import NO_CUDA, pjrt_device


class ShellPjrtDeviceGpu(EnvRule):
    id = "env-shell-pjrt-device-gpu"
    summary = "PJRT_DEVICE=GPU outside Python (2.1's name) → CUDA; GPU or CUDA on torch_xla 2.9 (no CUDA) reported"
    words = ("PJRT_DEVICE",)
    # (the rules that write PJRT_DEVICE=CUDA for a GPU on 2.9 and ask this decision there first)
    settled_by = ("env-shell-xrt-cpu", "env-shell-gpu-num-devices")
    variables = "PJRT_DEVICE"
    examples = (
        Example(
            "PJRT_DEVICE=GPU GPU_NUM_DEVICES=4 python3 train.py\n",
            "PJRT_DEVICE=CUDA GPU_NUM_DEVICES=4 python3 train.py\n",
            options={"target_version": (2, 8)},
        ),
        Example(
            "export PJRT_DEVICE=GPU\n",
            todo_line(NO_CUDA.do, "env-shell-pjrt-device-gpu") + "export PJRT_DEVICE=CUDA\n",
            manual=("2.9 dropped CUDA",),
        ),
        Example("export PJRT_DEVICE=TPU\n", "export PJRT_DEVICE=TPU\n"),
    )

    @classmethod
    def choose(cls, setting, target):
        choice = pjrt_device(setting.value, target)
        if choice is None:
            return KEEP, None
        return (KEEP if choice.device in setting.value else ("PJRT_DEVICE", choice.device)), choice.note
