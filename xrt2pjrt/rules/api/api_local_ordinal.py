"""xm.get_local_ordinal(defval) → xr.local_ordinal()
"""

from __future__ import annotations

from xrt2pjrt.python.renames import RenameRule, XM, renames_of
from xrt2pjrt.registry import Example


class LocalOrdinal(RenameRule):
    id = "api-local-ordinal"
    summary = "xm.get_local_ordinal(defval) → xr.local_ordinal()"
    targets = ("native",)
    table = renames_of(f"{XM}.get_local_ordinal")
    examples = (
        Example(
            "import torch_xla.core.xla_model as xm\n\ndef f():\n    return xm.get_local_ordinal()\n",
            "import torch_xla.runtime as xr\n\ndef f():\n    return xr.local_ordinal()\n",
        ),
    )
