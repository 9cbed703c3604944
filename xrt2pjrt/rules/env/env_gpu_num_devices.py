"""GPU_NUM_DEVICES set or read in Python, for torch_xla 2.9: reported, kept.

Under XRT, GPU_NUM_DEVICES=N served N local GPUs and so chose XLA:GPU. torch_xla 2.1–2.8
still read it: set without PJRT_DEVICE, it selected the GPU (2.1) or CUDA (2.2–2.8) device,
and the CUDA client needed it. torch_xla 2.9 reads it nowhere and has no CUDA device: a
program that set it to train on GPUs silently trains on CPU. Nothing on 2.9 replaces it, so
each place is reported; for a lower ``--target-version`` it still means what it meant and
is left alone (meanings/settings.py cites the sources).
"""

from __future__ import annotations

import libcst as cst

from xrt2pjrt.meanings.settings import ADVICE, SHORT
from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.registry import Example, dedent

NAME = "GPU_NUM_DEVICES"


class GpuNumDevices(PythonRule):
    id = "env-gpu-num-devices"
    summary = "GPU_NUM_DEVICES set or read (torch_xla 2.9 ignores it and runs on CPU): reported"
    fix = "none"
    words = (NAME,)
    min_version = (2, 9)
    nodes = (cst.SimpleString,)
    examples = (
        Example(
            dedent("""
                import os
                import torch_xla.core.xla_model as xm

                os.environ['GPU_NUM_DEVICES'] = '4'
            """),
            dedent("""
                import os
                import torch_xla.core.xla_model as xm

                # TODO(xrt2pjrt): stay on torch_xla 2.8 for GPUs [env-gpu-num-devices]
                os.environ['GPU_NUM_DEVICES'] = '4'
            """),
            manual=("runs on CPU",),
        ),
    )

    def leave(self, ctx, original, updated):
        if updated.evaluated_value == NAME and ctx.options.uses_torch(ctx.source):
            ctx.decide(SHORT[NAME], detail=ADVICE[NAME])
        return updated
