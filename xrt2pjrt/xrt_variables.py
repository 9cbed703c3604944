"""XRT-era environment variables and what replaces each under PJRT: one table for the
Python rules, the text rules and ``xrt2pjrt doctor``.

torch_xla 2.1+ reads none of these (tests/test_doctor.py checks the installed torch_xla).
Every ``XRT_*`` name not listed below configured XRT's server and mesh: it just goes.
"""

from __future__ import annotations

# Variables that chose the device: a setting of one becomes PJRT_DEVICE=<value>.
DEVICE_SETTINGS = {
    "XRT_TPU_CONFIG": "TPU",
    "XRT_DEVICE_MAP": "CPU",
    "XRT_WORKERS": "CPU",
}

# Variables XRT set in every replica: a read of one becomes this torch_xla.runtime call.
RUNTIME_READS = {
    "XRT_SHARD_WORLD_SIZE": "xr.world_size()",
    "XRT_SHARD_ORDINAL": "xr.global_ordinal()",
    "XRT_SHARD_LOCAL_ORDINAL": "xr.local_ordinal()",
    "XRT_HOST_ORDINAL": "xr.process_index()",
    "XRT_HOST_WORLD_SIZE": "xr.process_count()",
}


# XRT-era variables without the XRT_ prefix, with what to do instead.
UNPREFIXED = {
    "TPU_NUM_DEVICES": ("torch_xla runs one process per chip; to use fewer chips set "
                        "TPU_PROCESS_BOUNDS and TPU_VISIBLE_CHIPS, or spawn with nprocs=1"),
    "TPUVM_MODE": "nothing replaces it: PJRT always runs in TPU VM mode",
}


# A regex matching the name of any XRT-era variable, for the text rewriters.
XRT_ERA_PATTERN = r"XRT_\w+|" + "|".join(UNPREFIXED)


def is_xrt_era(name: str) -> bool:
    return name.startswith("XRT_") or name in UNPREFIXED


def is_plumbing(name: str) -> bool:
    """An XRT server or mesh variable, which nothing replaces."""
    return name.startswith("XRT_") and name not in DEVICE_SETTINGS and name not in RUNTIME_READS


def replacement(name: str) -> str:
    """What a person does instead of setting or reading ``name``, an XRT-era variable."""
    if name in UNPREFIXED:
        return UNPREFIXED[name]
    if name in DEVICE_SETTINGS:
        device = DEVICE_SETTINGS[name]
        return f"set PJRT_DEVICE={device} instead" + (" (CPU_NUM_DEVICES for devices)" if device == "CPU" else "")
    if name in RUNTIME_READS:
        return f"read {RUNTIME_READS[name]} (torch_xla.runtime) instead"
    return "nothing replaces it: it configured XRT's server and mesh"
