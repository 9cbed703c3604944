"""Early PJRT's runtime queries → torch_xla.runtime, where 2.1 moved them.

torch_xla.experimental.pjrt held the runtime queries (``world_size``, ``global_ordinal``,
``local_ordinal``, ``device_type``, ...); torch_xla 2.1 moved them to torch_xla.runtime under
the same names (``device_attributes`` became ``runtime_device_attributes``,
``broadcast_master_param`` went to xm, ``xla_device`` became ``torch_xla.device`` in 2.3), and
2.5 deleted the old module. Each use is pointed at the same function in its new home (safe); a
``devkind`` passed to ``xla_device`` is reported, as PJRT_DEVICE chooses the device type. The
names with no replacement are manual-pjrt-other's.
"""

from __future__ import annotations

from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.rules.pjrt._pjrt import PJRT_RENAMES
from xrt2pjrt.python.renames import RenameRule


class PjrtRuntime(RenameRule):
    id = "pjrt-runtime"
    summary = "torch_xla.experimental.pjrt.* (deleted in 2.5) → torch_xla.runtime (xr.*)"
    table = PJRT_RENAMES
    examples = (
        Example(
            dedent("""
                from torch_xla.experimental import pjrt

                if pjrt.global_ordinal() == 0:
                    print(pjrt.world_size())
            """),
            dedent("""
                import torch_xla.runtime as xr

                if xr.global_ordinal() == 0:
                    print(xr.world_size())
            """),
        ),
        Example(  # the device kind goes: torch_xla.device takes none (TypeError)
            dedent("""
                from torch_xla.experimental import pjrt

                device = pjrt.xla_device(0, 'TPU')
            """),
            dedent("""
                import torch_xla

                # TODO(xrt2pjrt): set PJRT_DEVICE for the devkind dropped [pjrt-runtime]
                device = torch_xla.device(0)
            """),
            manual=("devkind='TPU' dropped",),
        ),
        Example(
            dedent("""
                import torch_xla.runtime as xr
                from torch_xla.experimental.pjrt import local_ordinal, world_size

                n = world_size()
            """),
            dedent("""
                import torch_xla.runtime as xr
                from torch_xla.experimental.pjrt import local_ordinal

                n = xr.world_size()
            """),
        ),
    )
