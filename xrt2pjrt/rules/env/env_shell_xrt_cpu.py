"""XRT_DEVICE_MAP / XRT_WORKERS outside Python → the PJRT_DEVICE the map names.

XRT's CPU and GPU set-ups named the device in XRT_DEVICE_MAP (``CPU:0;/job:localservice/...``)
and the servers in XRT_WORKERS. Under PJRT, PJRT_DEVICE alone chooses the device: the map's
kind becomes it (CPU, TPU, or CUDA for GPU, which torch_xla 2.9 dropped: reported), a value
that cannot be read becomes CPU and is reported, and XRT_WORKERS goes.
"""

from __future__ import annotations

from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.recorder import todo_line
from xrt2pjrt.text.environment import DeviceRule
from xrt2pjrt.xrt_variables import DEVICE_SETTINGS, device_for


class XrtCpuTopology(DeviceRule):
    id = "env-shell-xrt-cpu"
    summary = "XRT_DEVICE_MAP outside Python → the PJRT_DEVICE it names, XRT_WORKERS removed; GPU maps reported"
    variables = "|".join(name for name in DEVICE_SETTINGS if name != "XRT_TPU_CONFIG")
    replacement = ("PJRT_DEVICE", "CPU")
    examples = (
        Example(
            dedent("""
                export XRT_DEVICE_MAP="CPU:0;/job:localservice/replica:0/task:0/device:XLA_CPU:0"
                export XRT_WORKERS="localservice:0;grpc://localhost:40934"
                python3 test.py
            """),
            dedent("""
                export PJRT_DEVICE=CPU
                python3 test.py
            """),
        ),
        Example(
            'XRT_WORKERS="localservice:0;grpc://localhost:40934" XRT_DEVICE_MAP="CPU:0;/job:localservice/'
            'replica:0/task:0/device:XLA_CPU:0" python3 test.py\n',
            "PJRT_DEVICE=CPU python3 test.py\n",
        ),
        Example(
            dedent("""
                export XRT_DEVICE_MAP="GPU:0;/job:localservice/replica:0/task:0/device:XLA_GPU:0"
                export XRT_WORKERS="localservice:0;grpc://localhost:40934"
            """),
            todo_line(device_for("XRT_DEVICE_MAP", "GPU:0").note.do, "env-shell-xrt-cpu") + "export PJRT_DEVICE=CUDA\n",
            manual=("2.9 dropped CUDA",),
        ),
        Example(
            'export XRT_DEVICE_MAP="$DEVICE_MAP"\n',
            todo_line(device_for("XRT_DEVICE_MAP", "$DEVICE_MAP").note.do, "env-shell-xrt-cpu")
            + "export PJRT_DEVICE=CPU\n",
            manual=("could not be read",),
        ),
    )
