"""xm.get_ordinal() → xr.global_ordinal(), which takes no defval.

``xm.get_ordinal()`` was XRT's replica index. torch_xla 2.1 put the runtime's answer in
torch_xla.runtime, 2.5 deprecated the old name and 2.7 removed it: an XRT-era script fails
there with AttributeError. ``xr.global_ordinal()`` is the same index under PJRT (safe).
``defval``, what XRT returned outside a replica, is gone: the runtime always knows the
ordinal, so a ``defval`` other than 0 is reported, as code may have relied on it; not where
the value is only printed or logged (a log line's label), which is all it would change.
``--target shim`` keeps the call: the shim serves it.
"""

from __future__ import annotations

from xrt2pjrt.python.renames import RenameRule, XM, renames_of
from xrt2pjrt.registry import Example, dedent


class Ordinal(RenameRule):
    id = "api-ordinal"
    summary = "xm.get_ordinal() (removed in 2.7) → xr.global_ordinal()"
    targets = ("native",)
    table = renames_of(f"{XM}.get_ordinal")
    examples = (
        Example(
            dedent("""
                from torch_xla.core import xla_model

                rank = xla_model.get_ordinal()
            """),
            dedent("""
                import torch_xla.runtime as xr

                rank = xr.global_ordinal()
            """),
        ),
        Example(
            dedent("""
                from torch_xla.core.xla_model import get_ordinal as go

                rank = go(defval=0)
            """),
            dedent("""
                import torch_xla.runtime as xr

                rank = xr.global_ordinal()
            """),
        ),
        Example(
            dedent("""
                import torch_xla.core.xla_model as xm

                def train():
                    rank = xm.get_ordinal(defval=-1)
                    print(f"[{rank}] starting")
                    if xm.get_ordinal(defval=-1) < 0:
                        run_alone()
            """),
            dedent("""
                import torch_xla.runtime as xr

                def train():
                    rank = xr.global_ordinal()
                    print(f"[{rank}] starting")
                    # TODO(xrt2pjrt): check nothing relied on defval= [api-ordinal]
                    if xr.global_ordinal() < 0:
                        run_alone()
            """),
            manual=("defval=-1 dropped",),
        ),
    )
