"""PJRT_DEVICE=GPU set in Python → CUDA (2.1's name; 2.3-2.8 refuse it), and GPU or CUDA on
torch_xla 2.9 (no CUDA device) reported.

Code that half-moved to PJRT in the torch_xla 2.1 days set PJRT_DEVICE=GPU. torch_xla 2.2
renamed the device CUDA and warned about GPU; 2.3 to 2.8 stop with "Unknown PJRT_DEVICE
'GPU'", so the rewrite to CUDA does what 2.1 did where the old spelling cannot run (safe).
torch_xla 2.9 has no CUDA device at all ("No PjRtPlugin registered for: CUDA"): on that
target GPU still becomes CUDA, the name of the release a GPU user stays on, and both are
reported. Reads of PJRT_DEVICE are left alone.
"""

from __future__ import annotations

from xrt2pjrt.python.environment import KEEP, EnvRule
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.xrt_variables import pjrt_device

NAME = "PJRT_DEVICE"


class PjrtDeviceGpu(EnvRule):
    id = "env-pjrt-device-gpu"
    summary = "PJRT_DEVICE=GPU set in Python (2.1's name) → CUDA; GPU or CUDA on torch_xla 2.9 (no CUDA) reported"
    words = (NAME,)
    # (the rules that write PJRT_DEVICE=CUDA for a GPU on 2.9 and ask this decision there first)
    settled_by = ("env-xrt-cpu-topology", "env-gpu-num-devices")
    examples = (
        Example(
            dedent("""
                import os

                os.environ['PJRT_DEVICE'] = 'GPU'
            """),
            dedent("""
                import os

                os.environ['PJRT_DEVICE'] = 'CUDA'
            """),
            options={"target_version": (2, 8)},
        ),
        Example(
            dedent("""
                import os

                os.environ.setdefault('PJRT_DEVICE', 'CUDA')
            """),
            dedent("""
                import os

                # TODO(xrt2pjrt): stay on torch_xla 2.8 for GPUs [env-pjrt-device-gpu]
                os.environ.setdefault('PJRT_DEVICE', 'CUDA')
            """),
            manual=("2.9 dropped CUDA",),
        ),
        Example.unchanged(
            dedent("""
                import os

                if os.environ.get('PJRT_DEVICE') == 'TPU':
                    os.environ['PJRT_DEVICE'] = 'TPU'
            """),
        ),
    )

    def handles(self, variable):
        return variable == NAME

    def write(self, variable, value, target):
        choice = pjrt_device(value, target)
        if choice is None:
            return KEEP, None
        return (KEEP if choice.device in value else (NAME, choice.device)), choice.note

    def read(self, variable):
        return None
