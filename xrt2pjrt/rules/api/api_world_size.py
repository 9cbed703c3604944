"""xm.xrt_world_size() (removed in 2.7) → xr.world_size()
"""

from __future__ import annotations

from xrt2pjrt.python.renames import RenameRule, XM, renames_of
from xrt2pjrt.registry import Example


class WorldSize(RenameRule):
    id = "api-world-size"
    summary = "xm.xrt_world_size() (removed in 2.7) → xr.world_size()"
    targets = ("native",)
    table = renames_of(f"{XM}.xrt_world_size")
    examples = (
        Example(
            "import torch_xla.core.xla_model as xm\n\nn = xm.xrt_world_size()\n",
            "import torch_xla.runtime as xr\n\nn = xr.world_size()\n",
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\nn = xm.xrt_world_size(defval=4)\nxm.master_print(n)\n",
            (
                "import torch_xla.core.xla_model as xm\n"
                "import torch_xla.runtime as xr\n"
                "\n"
                "# TODO(xrt2pjrt): check nothing relied on defval= [api-world-size]\n"
                "n = xr.world_size()\n"
                "xm.master_print(n)\n"
            ),
            manual=("defval=4 dropped",),
        ),
    )
