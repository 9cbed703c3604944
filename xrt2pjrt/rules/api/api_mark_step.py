"""xm.mark_step() (deprecated in 2.8) → torch_xla.sync() (2.4+)
"""

from __future__ import annotations

from xrt2pjrt.python.renames import RenameRule, XM, renames_of
from xrt2pjrt.registry import Example


class MarkStep(RenameRule):
    id = "api-mark-step"
    summary = "xm.mark_step() (deprecated in 2.8) → torch_xla.sync() (2.4+)"
    targets = ("native",)
    table = renames_of(f"{XM}.mark_step")
    examples = (
        Example(
            "import torch_xla.core.xla_model as xm\n\nloss.backward()\nxm.mark_step()\n",
            "import torch_xla\n\nloss.backward()\ntorch_xla.sync()\n",
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\nxm.mark_step(wait=True)\n",
            "import torch_xla.core.xla_model as xm\n\nxm.mark_step(wait=True)\n",
            options={"target_version": (2, 4)},
        ),
    )
