"""XRT_TPU_CONFIG set in Python → PJRT_DEVICE='TPU'; reads reported.

XRT_TPU_CONFIG (``localservice;0;localhost:51011``) told torch_xla 1.x where XRT's TPU server
listened; torch_xla 2.1+ ignores it, and PJRT_DEVICE=TPU says the same to PJRT. The setting
becomes that one (safe). A value naming a remote TPU node
(``tpu_worker;0;10.0.0.2:8470``) is reported as well: only XRT could drive one, and PJRT needs
the program on the TPU VM; not in a notebook none of whose cells uses torch_xla or starts a
process, where the setting reaches nothing that drives the node. A read is reported: nothing
sets it now; test ``xr.device_type() == 'TPU'``. The text side is env-shell-xrt-tpu-config.
"""

from __future__ import annotations

from xrt2pjrt.python.environment import DeviceRule
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.report import Advice


class TpuConfig(DeviceRule):
    id = "env-xrt-tpu-config"
    summary = "XRT_TPU_CONFIG set in Python → PJRT_DEVICE='TPU'; remote TPU nodes and reads reported"
    examples = (
        Example(
            dedent("""
                import os

                os.environ['XRT_TPU_CONFIG'] = 'localservice;0;localhost:51011'  # torch_xla
            """),
            dedent("""
                import os

                os.environ['PJRT_DEVICE'] = 'TPU'  # torch_xla
            """),
        ),
        Example(
            dedent("""
                import os
                import torch_xla.core.xla_env_vars as xenv

                os.environ.setdefault(xenv.TPU_CONFIG, f'tpu_worker;0;{ip}:8470')
            """),
            dedent("""
                import os

                # TODO(xrt2pjrt): run it on a TPU VM, not a TPU node [env-xrt-tpu-config]
                os.environ.setdefault('PJRT_DEVICE', 'TPU')
            """),
            manual=("remote TPU node",),
        ),
        Example(
            dedent("""
                import os

                os.environ['XRT_TPU_CONFIG'] = 'grpc://' + os.environ['COLAB_TPU_ADDR']  # torch_xla
            """),
            dedent("""
                import os

                # TODO(xrt2pjrt): run it on a TPU VM, not a TPU node [env-xrt-tpu-config]
                os.environ['PJRT_DEVICE'] = 'TPU'  # torch_xla
            """),
            manual=("remote TPU node",),
        ),
        Example(
            dedent("""
                import os

                env = {"XRT_TPU_CONFIG": config, 'XLA_USE_BF16': '1'}
            """),
            dedent("""
                import os

                env = {"PJRT_DEVICE": "TPU", 'XLA_USE_BF16': '1'}
            """),
        ),
        Example(
            dedent("""
                import os

                if 'XRT_TPU_CONFIG' in os.environ:
                    run()
            """),
            dedent("""
                import os

                # TODO(xrt2pjrt): test xr.device_type() == 'TPU' instead [env-xrt-tpu-config]
                if 'XRT_TPU_CONFIG' in os.environ:
                    run()
            """),
            manual=("PJRT_DEVICE",),
        ),
        Example(  # danielkunin/neural-mechanics: a read that prints what the file set is the write's item
            dedent("""
                import os

                def configure(ip):
                    os.environ['XRT_TPU_CONFIG'] = f'tpu_worker;0;{ip}:8470'
                    print(f"set to {os.environ['XRT_TPU_CONFIG']}")
            """),
            dedent("""
                import os

                def configure(ip):
                    # TODO(xrt2pjrt): migrate the reads first, then this write [env-xrt-tpu-config]
                    os.environ['XRT_TPU_CONFIG'] = f'tpu_worker;0;{ip}:8470'
                    print(f"set to {os.environ['XRT_TPU_CONFIG']}")
            """),
            manual=("read elsewhere in this file",),
        ),
    )

    def handles(self, variable):
        return variable == "XRT_TPU_CONFIG"

    def read(self, variable):
        return Advice(
            "test xr.device_type() == 'TPU' instead",
            "XRT_TPU_CONFIG is ignored from torch_xla 2.1: test PJRT_DEVICE or xr.device_type() == 'TPU'",
        )
