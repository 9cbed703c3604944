"""XRT-era environment variables and what replaces each under PJRT: one table for the
Python rules, the text rules and ``xrt2pjrt doctor``.

torch_xla 2.1+ reads none of these (tests/runtime/test_doctor.py checks the installed torch_xla).
Every ``XRT_*`` name not listed below configured XRT's server and mesh: it just goes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xrt2pjrt.meanings.settings import XRT_CLIENT_ONLY
from xrt2pjrt.report import Advice

# Variables that chose the device, with the device a setting chooses when its value does not
# say (``device_for`` reads the value). XRT_WORKERS only said where XRT's servers ran: the
# device came from XRT_DEVICE_MAP, set next to it.
DEVICE_SETTINGS = {
    "XRT_TPU_CONFIG": "TPU",
    "XRT_DEVICE_MAP": "CPU",
    "XRT_WORKERS": None,
}

# Variables XRT set in every replica: a read of one becomes this torch_xla.runtime call
# (``do``: the few words of a TODO line; ``more``: the whole call, where those cannot hold it).
RUNTIME_READS = {
    "XRT_SHARD_WORLD_SIZE": Advice("use xr.world_size()"),
    "XRT_SHARD_ORDINAL": Advice("use xr.global_ordinal()"),
    "XRT_SHARD_LOCAL_ORDINAL": Advice("use xr.local_ordinal()"),
    # Hosts, not processes: xr.process_index()/process_count() count processes (4 on one v4-8).
    "XRT_HOST_ORDINAL": Advice("use xr.host_index()"),
    "XRT_HOST_WORLD_SIZE": Advice("use the number of hosts from xr", "xr.process_count() // xr.local_process_count()"),
}


# TPU_NUM_DEVICES of a whole host: a v2-8/v3-8's 8 cores, or a v4 host's 4 chips. Real
# XRT-era scripts that set 4 are v4 scripts ("for pytorch on TPU V4", fairseq's and the CI's
# v4-8 launches); a v3-8 run on fewer cores said nprocs=1 instead.
_WHOLE_HOST = frozenset({"8", "4"})


def asks_fewer_cores(name: str, value: str | None) -> bool:
    """A TPU_NUM_DEVICES setting of fewer devices than a whole host (1, 2, or a value read
    elsewhere) wants a person; a whole host is what PJRT opens unasked."""
    return name == "TPU_NUM_DEVICES" and value is not None and value.strip("'\"") not in _WHOLE_HOST


# XRT-era variables without the XRT_ prefix, with what to do instead.
UNPREFIXED = {
    "TPU_NUM_DEVICES": Advice(
        "set TPU_VISIBLE_CHIPS for fewer chips",
        "torch_xla runs one process per chip; to use fewer chips set TPU_PROCESS_BOUNDS and "
        "TPU_VISIBLE_CHIPS, or spawn with nprocs=1",
    ),
    "TPUVM_MODE": Advice(
        "keep only the TPU VM branch",
        "torch_xla 2.1+ ignores it: TPU nodes are gone, every TPU torch_xla runs on is a TPU VM, so "
        "code that branches on it wants the TPU VM branch",
    ),
    "COLAB_TPU_ADDR": Advice(
        "test xr.device_type() == 'TPU' instead",
        "only the old Colab TPU runtime (a TPU node driven by XRT) set it, today's Colab TPU VM "
        "does not: test PJRT_DEVICE or xr.device_type() == 'TPU' instead",
    ),
    **dict.fromkeys(
        ("TPU_MESH_CONTROLLER_ADDRESS", "TPU_MESH_CONTROLLER_PORT"),
        Advice(
            "take host 0's address from your launcher",
            "xla_dist set it for XRT's mesh controller on worker 0; PJRT neither sets nor reads it (a read is a "
            "KeyError): take host 0's address from your launcher, or use xr.process_index() == 0 to pick host 0",
        ),
    ),
    # XLA_TENSOR_ALLOCATOR_MAXSIZE and the like: settings of XRT's client that torch_xla 2.x dropped
    **{
        name: Advice(
            "remove it: torch_xla 2.x ignores it",
            f"only XRT's client read it ({what}): torch_xla 2.1+ has no such setting",
        )
        for name, _, what in XRT_CLIENT_ONLY
    },
}

# A regex matching the name of any XRT-era variable, for the text rewriters.
XRT_ERA_PATTERN = r"XRT_\w+|" + "|".join(UNPREFIXED)


def is_xrt_era(name: str) -> bool:
    return name.startswith("XRT_") or name in UNPREFIXED


def is_plumbing(name: str) -> bool:
    """An XRT server or mesh variable, which nothing replaces."""
    return name.startswith("XRT_") and name not in DEVICE_SETTINGS and name not in RUNTIME_READS


# Variables other frameworks read too (TensorFlow's Colab notebooks found their TPU in
# COLAB_TPU_ADDR): reported only in files that use PyTorch (registry.Options.uses_torch).
SHARED = frozenset({"COLAB_TPU_ADDR"})

# GKE's TPU-node integration: the annotation choosing the node's software
# (tf-version.cloud-tpus.google.com: "pytorch-1.9") and the resource asking for one
# (cloud-tpus.google.com/v3: 8). Kept as it is, reported on every run (YAML, jsonnet).
TPU_NODE = re.compile(r"(?:tf-version\.)?cloud-tpus\.google\.com\b")
GKE_TPU_NODE = (
    "a GKE TPU node, which only XRT can drive (its XRT_TPU_CONFIG set from KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS): "
    "PJRT runs on TPU VMs: move the workload to a TPU VM node pool (nodeSelector "
    "cloud.google.com/gke-tpu-accelerator and cloud.google.com/gke-tpu-topology, resource google.com/tpu)"
)


# A value naming a TPU node that XRT reached over the network. Local XRT servers listened
# on localhost (localservice); a TPU node's on its own address, port 8470.
_REMOTE = re.compile(
    r"tpu_worker|COLAB_TPU_ADDR|KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS|:8470\b"
    r"|grpc://(?!localhost\b|127\.0\.0\.1\b)"
)
# The device kinds of a device map's entries: `CPU:0;/job:...|GPU:0;/job:...`, in whatever
# quotes. XRT's xm.xla_device() took the first kind of TPU, GPU, CPU the map had.
_MAP_DEVICE = re.compile(r"""(?:^[rRbBfFuU]*["']*|\|)(CPU|GPU|TPU):""")
_XRT_PREFERENCE = ("TPU", "GPU", "CPU")
REMOTE_TPU = Advice(
    "run it on a TPU VM, not a TPU node",
    "this configured a remote TPU node (tpu_worker / COLAB_TPU_ADDR), which only XRT can drive: PJRT "
    "needs the program to run on the TPU VM itself",
)


@dataclass(frozen=True)
class DeviceChoice:
    """What a setting of a device variable becomes."""

    device: str | None  # the PJRT_DEVICE it becomes; None: the setting just goes
    note: Advice | None = None  # what a person must decide about it


def device_for(variable: str, value: str | None, target: tuple[int, int] = (2, 9)) -> DeviceChoice:
    """What setting ``variable`` (a key of DEVICE_SETTINGS) to ``value`` becomes, for torch_xla
    ``target``. ``value`` is the value as written (quotes, ``$X`` and all); None when the
    setting carries none (``export X``)."""
    remote = REMOTE_TPU if value is not None and _REMOTE.search(value) else None
    if variable != "XRT_DEVICE_MAP":
        return DeviceChoice(DEVICE_SETTINGS[variable], remote)
    kinds = set(_MAP_DEVICE.findall(value or ""))
    if not kinds:
        return DeviceChoice(
            "CPU",
            remote
            or Advice(
                "set PJRT_DEVICE by the map's device",
                "PJRT_DEVICE=CPU assumed: the device XRT_DEVICE_MAP named could "
                "not be read from its value; set PJRT_DEVICE to CPU, TPU or CUDA by it",
            ),
        )
    kind = next(k for k in _XRT_PREFERENCE if k in kinds)
    if kind != "GPU":
        return DeviceChoice(kind, remote)
    if target < (2, 2):
        return DeviceChoice("GPU")
    if target < (2, 9):
        return DeviceChoice("CUDA")
    return DeviceChoice("CUDA", NO_CUDA)


NO_CUDA = Advice(
    "stay on torch_xla 2.8 for GPUs",
    "this ran on GPUs: stay on torch_xla 2.8, run on TPU or CPU, or use "
    "PyTorch's own CUDA (PJRT_DEVICE=CUDA works on torch_xla 2.2–2.8 only; 2.9 dropped CUDA: 'No "
    "PjRtPlugin registered for: CUDA')",
)
_GPU_VALUE = re.compile(r"""^[rRbBfFuU]*["']*(GPU|CUDA)["']*$""")


def pjrt_device(value: str | None, target: tuple[int, int] = (2, 9)) -> DeviceChoice | None:
    """What a setting of PJRT_DEVICE to ``value`` (as written, quotes and all) becomes for
    torch_xla ``target``, where its GPU names changed: GPU was 2.1's (2.2 warned, 2.3-2.8 say
    'Unknown PJRT_DEVICE'), CUDA 2.2-2.8's, and 2.9 has neither. None: it stays as it is."""
    found = _GPU_VALUE.match(value.strip()) if value else None
    if found is None or target < (2, 2) or (found.group(1) == "CUDA" and target < (2, 9)):
        return None
    return DeviceChoice("CUDA", NO_CUDA if target >= (2, 9) else None)


def replacement(name: str, value: str | None = None) -> Advice:
    """What a person does instead of setting or reading ``name``, an XRT-era variable
    (set to ``value``, when known)."""
    if name in UNPREFIXED:
        return UNPREFIXED[name]
    if name in DEVICE_SETTINGS:
        choice = device_for(name, value)
        if choice.device is None:
            instead = Advice("remove it: nothing replaces it", "XRT_DEVICE_MAP chose the device")
        else:
            instead = Advice(
                f"set PJRT_DEVICE={choice.device} instead",
                "CPU_NUM_DEVICES for devices" if choice.device == "CPU" else "",
            )
        return Advice(choice.note.do, f"{instead}; {choice.note}") if choice.note else instead
    if name in RUNTIME_READS:
        read = RUNTIME_READS[name]
        return Advice(read.do, f"{read.more} (xr: torch_xla.runtime)".lstrip())
    return Advice("remove it: nothing replaces it", "it configured XRT's server and mesh")
