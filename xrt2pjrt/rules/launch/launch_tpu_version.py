"""cloud_tpu_client's ``configure_tpu_version`` (switching a TPU node's software): reported.

Colab, Kaggle and GKE notebooks of the XRT years switched the TPU node they were given to the
software of their torch_xla (``cloud_tpu_client.Client(tpu).configure_tpu_version(
f'pytorch-{torch_xla.__version__}', restart_type='ifNeeded')``; torch_xla 2.0 itself did so on
import for a TPU_NAME of grpc://). Under PJRT the program runs on a TPU VM, whose software is
the torch_xla installed on it: there is no node to switch, and cloud-tpu-client is gone. The
call, and what waits for the node after it, go by hand.
"""

from __future__ import annotations

import libcst as cst

from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.registry import Example, dedent

DO = "drop it: a TPU VM has no node to switch"


class TpuVersion(PythonRule):
    id = "launch-tpu-version"
    fix = "none"
    words = ("configure_tpu_version",)
    nodes = (cst.Call,)
    summary = "cloud_tpu_client's configure_tpu_version (switching a TPU node's software): reported"
    examples = (
        Example(
            dedent("""
                import cloud_tpu_client

                client = cloud_tpu_client.Client(tpu=os.environ['TPU_NAME'])
                client.configure_tpu_version('pytorch-1.13', restart_type='ifNeeded')
            """),
            dedent("""
                import cloud_tpu_client

                client = cloud_tpu_client.Client(tpu=os.environ['TPU_NAME'])
                # TODO(xrt2pjrt): drop it: a TPU VM has no node to switch [launch-tpu-version]
                client.configure_tpu_version('pytorch-1.13', restart_type='ifNeeded')
            """),
            manual=("no node to switch",),
        ),
    )

    def leave(self, ctx, original, updated):
        func = updated.func
        if isinstance(func, cst.Attribute) and func.attr.value == "configure_tpu_version":
            ctx.decide(
                DO,
                detail="configure_tpu_version switched a TPU node's software to a torch_xla release "
                "(XRT's); under PJRT the program runs on a TPU VM, whose software is the torch_xla installed "
                "on it: drop the call and the waits for the node after it, and cloud-tpu-client with them",
            )
        return updated
