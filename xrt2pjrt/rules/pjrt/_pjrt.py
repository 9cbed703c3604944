"""``torch_xla.experimental.pjrt`` (2022–2.4, deleted in 2.5) → ``torch_xla.runtime`` and friends.

Every import form resolves to the same dotted names, so ``pjrt.world_size()``,
``from torch_xla.experimental.pjrt import world_size`` and the full dotted spelling are
all rewritten; the old import goes once nothing uses it."""

from __future__ import annotations

from xrt2pjrt.python.renames import DEVKIND, DEVKIND_TODO, XM, XR, Dropped, Rename, Spelling

PJRT = "torch_xla.experimental.pjrt"

_SAME_IN_RUNTIME = (
    "world_size",
    "global_ordinal",
    "local_ordinal",
    "local_process_count",
    "global_device_count",
    "local_device_count",
    "addressable_device_count",
    "process_index",
    "process_count",
    "device_type",
    "set_device_type",
)

PJRT_RENAMES: tuple[Rename, ...] = (
    *(Rename(f"{PJRT}.{name}", (Spelling(XR, name, "xr", (2, 1)),)) for name in _SAME_IN_RUNTIME),
    Rename(
        f"{PJRT}.xla_device",
        (
            Spelling("torch_xla", "device", None, (2, 3), keywords=(("n", "index"),)),
            Spelling(XR, "xla_device", "xr", (2, 1), (2, 7)),
        ),
        (Dropped("devkind", 1, None, DEVKIND, DEVKIND_TODO),),
    ),
    Rename(f"{PJRT}.device_attributes", (Spelling(XR, "runtime_device_attributes", "xr", (2, 1)),)),
    Rename(f"{PJRT}.global_device_attributes", (Spelling(XR, "global_runtime_device_attributes", "xr", (2, 1)),)),
    Rename(f"{PJRT}.broadcast_master_param", (Spelling(XM, "broadcast_master_param", "xm", (2, 1)),)),
)
