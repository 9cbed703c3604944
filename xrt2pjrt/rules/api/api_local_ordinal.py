"""xm.get_local_ordinal() → xr.local_ordinal(), which takes no defval.

Under XRT ``get_local_ordinal(defval=0)`` read the replica's index on its host from the
environment XRT's launcher set, and returned ``defval`` where there was none. torch_xla 2.1
gave the runtime's answer a home in torch_xla.runtime, and 2.5 dropped ``defval``: under PJRT
the runtime always knows the index, so the fallback is never used. The call becomes
``xr.local_ordinal()`` (safe: the same number); a ``defval`` other than 0 is reported, as code
may have relied on it outside a replica. ``--target shim`` keeps the call: the shim serves it.
"""

from __future__ import annotations

from xrt2pjrt.python.renames import RenameRule, XM, renames_of
from xrt2pjrt.registry import Example, dedent


class LocalOrdinal(RenameRule):
    id = "api-local-ordinal"
    summary = "xm.get_local_ordinal(defval) → xr.local_ordinal(); a defval other than 0 reported"
    targets = ("native",)
    table = renames_of(f"{XM}.get_local_ordinal")
    examples = (
        Example(
            dedent("""
                import torch_xla.core.xla_model as xm

                def f():
                    return xm.get_local_ordinal()
            """),
            dedent("""
                import torch_xla.runtime as xr

                def f():
                    return xr.local_ordinal()
            """),
        ),
    )
