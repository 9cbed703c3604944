"""A device type compared with 'GPU' → 'CUDA', the GPU's name under PJRT.

XRT called an XLA:GPU device 'GPU', and code tested for one with ``xm.xla_device_hw(device) ==
'GPU'`` (or ``xr.device_type()``, from 2.1), to make a GradScaler or pick a GPU-only path. From
torch_xla 2.2 the GPU device is CUDA (PJRT_DEVICE=CUDA), and the device type says so: the
comparison is False on every GPU and the program silently takes its other path. Comparing with
'CUDA' asks what the code asked (safe); on torch_xla 2.9, which has no CUDA device, either
comparison is False, and env-pjrt-device-gpu reports the GPU set-up itself.
"""

from __future__ import annotations

import libcst as cst

from xrt2pjrt.python.renames import XM, XR
from xrt2pjrt.python.rule import PythonRule, code
from xrt2pjrt.registry import Example, dedent

# What names the device type (torch_xla 2.x says CUDA where XRT said GPU)
_DEVICE_TYPE_CALLS = frozenset({f"{XM}.xla_device_hw", f"{XR}.device_type"})


class GpuIsCuda(PythonRule):
    id = "api-device-type-gpu"
    summary = "A device type compared with 'GPU' (xm.xla_device_hw, xr.device_type) → 'CUDA'"
    nodes = (cst.Comparison,)
    examples = (
        Example(  # always False on XLA:GPU (torch_xla 2.8, the last with CUDA) once the name changed
            dedent("""
                import torch_xla.core.xla_model as xm

                if xm.xla_device_hw(device) == 'GPU':
                    scaler = GradScaler()
            """),
            dedent("""
                import torch_xla.core.xla_model as xm

                if xm.xla_device_hw(device) == 'CUDA':
                    scaler = GradScaler()
            """),
        ),
    )

    def leave(self, ctx, original, updated):
        if len(original.comparisons) != 1 or not isinstance(
            original.comparisons[0].operator, (cst.Equal, cst.NotEqual)
        ):
            return updated
        sides = (original.left, original.comparisons[0].comparator)
        if not any(isinstance(side, cst.Call) and ctx.resolve(side.func) in _DEVICE_TYPE_CALLS for side in sides):
            return updated
        gpu = next(
            (side for side in sides if isinstance(side, cst.SimpleString) and side.evaluated_value == "GPU"), None
        )
        if gpu is None:
            return updated
        ctx.change(f"{code(original)}: torch_xla 2.x names the GPU device type 'CUDA'")
        new = ctx.string("CUDA", gpu)
        if gpu is original.left:
            return updated.with_changes(left=new)
        return updated.with_changes(comparisons=[updated.comparisons[0].with_changes(comparator=new)])
