"""xm.xrt_world_size() → xr.world_size(), which takes no defval.

``xm.xrt_world_size()`` counted XRT's replicas. torch_xla 2.1 put the runtime's count in
torch_xla.runtime, 2.5 deprecated the old name and 2.7 removed it (AttributeError).
``xr.world_size()`` counts the replicas under PJRT, one per device (8 on a v3-8 run by 4
processes), as XRT counted one per core: the rewrite keeps the number (safe). ``defval``,
what XRT returned outside a replica, is gone, so a ``defval`` other than 1 is reported, but where the count is only printed or logged.
``--target shim`` keeps the call: the shim serves it.
"""

from __future__ import annotations

from xrt2pjrt.python.renames import RenameRule, XM, renames_of
from xrt2pjrt.registry import Example, dedent


class WorldSize(RenameRule):
    id = "api-world-size"
    summary = "xm.xrt_world_size() (removed in 2.7) → xr.world_size()"
    targets = ("native",)
    table = renames_of(f"{XM}.xrt_world_size")
    examples = (
        Example(
            dedent("""
                import torch_xla.core.xla_model as xm

                n = xm.xrt_world_size()
            """),
            dedent("""
                import torch_xla.runtime as xr

                n = xr.world_size()
            """),
        ),
        Example(
            dedent("""
                import torch_xla.core.xla_model as xm

                n = xm.xrt_world_size(defval=4)
                steps = len(data) // n
            """),
            dedent("""
                import torch_xla.runtime as xr

                # TODO(xrt2pjrt): check nothing relied on defval= [api-world-size]
                n = xr.world_size()
                steps = len(data) // n
            """),
            manual=("defval=4 dropped",),
        ),
    )
