"""xm.get_ordinal() (removed in 2.7) → xr.global_ordinal()
"""

from __future__ import annotations

from xrt2pjrt.python.renames import RenameRule, XM, renames_of
from xrt2pjrt.registry import Example


class Ordinal(RenameRule):
    id = "api-ordinal"
    summary = "xm.get_ordinal() (removed in 2.7) → xr.global_ordinal()"
    targets = ("native",)
    table = renames_of(f"{XM}.get_ordinal")
    examples = (
        Example(
            "from torch_xla.core import xla_model\n\nrank = xla_model.get_ordinal()\n",
            "import torch_xla.runtime as xr\n\nrank = xr.global_ordinal()\n",
        ),
        Example(
            "from torch_xla.core.xla_model import get_ordinal as go\n\nrank = go(defval=0)\n",
            "import torch_xla.runtime as xr\n\nrank = xr.global_ordinal()\n",
        ),
    )
