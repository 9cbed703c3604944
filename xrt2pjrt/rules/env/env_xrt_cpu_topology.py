"""XRT_DEVICE_MAP / XRT_WORKERS set in Python → the PJRT_DEVICE the map names.

XRT's CPU and GPU set-ups named the device in XRT_DEVICE_MAP (``CPU:0;/job:localservice/...``)
and its servers in XRT_WORKERS. torch_xla 2.1+ reads neither: PJRT_DEVICE alone chooses the
device. A setting of the map becomes the PJRT_DEVICE of the kind it names, which chooses what
the map chose (safe): CPU, TPU, or CUDA for GPU (reported on torch_xla 2.9, which has no CUDA
device); a value that cannot be read becomes CPU and is reported. XRT_WORKERS goes. A read is
reported: nothing sets the variable now. The text side is env-shell-xrt-cpu.
"""

from __future__ import annotations

from xrt2pjrt.python.environment import DeviceRule
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.report import Advice
from xrt2pjrt.xrt_variables import DEVICE_SETTINGS


class CpuTopology(DeviceRule):
    id = "env-xrt-cpu-topology"
    summary = "XRT_DEVICE_MAP set in Python → the PJRT_DEVICE it names, XRT_WORKERS removed; GPU maps reported"
    examples = (
        Example(
            dedent("""
                import os

                os.environ['XRT_DEVICE_MAP'] = 'CPU:0;/job:localservice/replica:0/task:0/device:XLA_CPU:0'
                os.environ['XRT_WORKERS'] = 'localservice:0;grpc://localhost:40934'  # torch_xla
            """),
            dedent("""
                import os

                os.environ['PJRT_DEVICE'] = 'CPU'
            """),
        ),
        Example(
            dedent("""
                import os

                os.environ['XRT_DEVICE_MAP'] = 'GPU:0;/job:localservice/replica:0/task:0/device:XLA_GPU:0'
                os.environ['XRT_WORKERS'] = 'localservice:0;grpc://localhost:40934'  # torch_xla
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

                os.environ['XRT_WORKERS'] = 'tpu_worker:0;grpc://10.0.0.2:8470'  # torch_xla
                os.environ['XRT_DEVICE_MAP'] = 'TPU:0;/job:tpu_worker/replica:0/task:0/device:TPU:0'
            """),
            dedent("""
                import os

                # TODO(xrt2pjrt): run it on a TPU VM, not a TPU node [env-xrt-cpu-topology]
                os.environ['PJRT_DEVICE'] = 'TPU'
            """),
            manual=("remote TPU node", "remote TPU node"),
        ),
        Example(
            dedent("""
                import os

                os.environ.update(XRT_DEVICE_MAP=device_map, XRT_WORKERS=workers)  # torch_xla
            """),
            dedent("""
                import os

                # TODO(xrt2pjrt): set PJRT_DEVICE by the map's device [env-xrt-cpu-topology]
                os.environ.update(PJRT_DEVICE='CPU')  # torch_xla
            """),
            manual=("could not be read",),
        ),
    )

    def handles(self, variable):
        return variable in DEVICE_SETTINGS and variable != "XRT_TPU_CONFIG"

    def read(self, variable):
        return Advice("test PJRT_DEVICE or xr.device_type()", f"{variable} is ignored from torch_xla 2.1")
