"""The shape of a TPU slice as torch_xla's PJRT runtime lays processes and threads on it.

``from_env()`` reads the facts a TPU VM publishes (``TPU_ACCELERATOR_TYPE``,
``TPU_WORKER_ID``, ``TPU_WORKER_HOSTNAMES``, ``TPU_HOST_BOUNDS``,
``TPU_CHIPS_PER_HOST_BOUNDS``, ``TPU_PROCESS_BOUNDS``; the GCE metadata server fills what
the environment leaves out) and ``from_facts()`` turns them into a ``Topology``: hosts,
processes per host (one per chip), devices per process (2 on v2/v3, where each chip shows
two TensorCores and torch_xla runs one thread per device), the task ids of this host's
processes (``CLOUD_TPU_TASK_ID = worker_id * processes_per_host + local_rank``, as
``torch_xla._internal.tpu.configure_topology`` sets them), and where each ordinal runs.

``from_facts`` is pure; ``from_env`` only reads the environment and, unless
``TPU_SKIP_MDS_QUERY`` is set, asks the metadata server with a short timeout.
Neither imports torch. ``observed_placement()`` is the one function that asks the live
runtime, for the placement of the calling thread.
"""

from __future__ import annotations

import math
import os
import re
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import yaml


class TopologyError(ValueError):
    """The environment does not describe a TPU slice this module can lay out."""


@dataclass(frozen=True)
class Generation:
    name: str
    # XLA devices per chip: v2/v3 chips show two TensorCores, later chips one (megacore).
    devices_per_chip: int
    # What the number in an accelerator type counts: TensorCores ("v4-8": 4 chips) or chips.
    count_unit: str
    # Chips on each host of a multi-host slice.
    chips_per_host: int
    # Slices of up to this many chips sit on a single host (v5e/v6e: up to 8 chips).
    single_host_chips: int

    def chips(self, count: int) -> int:
        return count // 2 if self.count_unit == "cores" else count


GENERATIONS = {
    "v2": Generation("v2", 2, "cores", 4, 4),
    "v3": Generation("v3", 2, "cores", 4, 4),
    "v4": Generation("v4", 1, "cores", 4, 4),
    "v5p": Generation("v5p", 1, "cores", 4, 4),
    "v5e": Generation("v5e", 1, "chips", 4, 8),
    "v6e": Generation("v6e", 1, "chips", 4, 8),
}
# Spellings of the generations in accelerator types (and in ``tpu.version()``'s regex).
_SUFFIXES = {
    ("2", ""): "v2",
    ("3", ""): "v3",
    ("4", ""): "v4",
    ("5", "p"): "v5p",
    ("5", "e"): "v5e",
    ("5", "lite"): "v5e",
    ("5", "litepod"): "v5e",
    ("6", "e"): "v6e",
}
_ACCELERATOR = re.compile(r"^(?:v|tpu)(\d+)([a-z]*)-(\d+)$")


def parse_accelerator(accelerator: str) -> tuple[Generation | None, int, int]:
    """'v4-16' -> (v4 generation, major version 4, number 16); unknown spellings -> None."""
    match = _ACCELERATOR.match(accelerator.strip().lower())
    if not match:
        raise TopologyError(f"cannot parse TPU accelerator type {accelerator!r}")
    major, suffix, count = match.groups()
    generation = GENERATIONS.get(_SUFFIXES.get((major, suffix), ""))
    return generation, int(major), int(count)


def _bounds(text: str | None, what: str) -> tuple[int, ...] | None:
    if not text:
        return None
    try:
        dims = tuple(int(d) for d in text.split(","))
    except ValueError:
        raise TopologyError(f"{what} {text!r} is not a comma-separated list of integers")
    if len(dims) < 3 or any(d < 1 for d in dims):
        raise TopologyError(f"{what} {text!r} needs at least three positive dimensions")
    return dims


@dataclass(frozen=True)
class Placement:
    """Where one replica (ordinal) runs."""

    ordinal: int
    host: int  # TPU worker id
    hostname: str
    process: int  # task id across the slice (CLOUD_TPU_TASK_ID)
    local_process: int  # rank of the process on its host (PJRT_LOCAL_PROCESS_RANK, the chip)
    thread: int  # index of the device within its process
    device: str  # the torch device the thread uses, e.g. 'xla:1'
    local_ordinal: int  # local_process * devices_per_process + thread, as torch_xla computes


@dataclass(frozen=True)
class TpuFacts:
    """What a TPU VM says about its slice; None where it said nothing."""

    accelerator: str
    worker_id: int = 0
    hostnames: tuple[str, ...] = ()
    host_bounds: str | None = None
    chips_per_host_bounds: str | None = None
    process_bounds: str | None = None  # only a user's TPU_PROCESS_BOUNDS limits processes


@dataclass(frozen=True)
class Topology:
    accelerator: str
    generation: str
    hosts: int
    worker_id: int
    hostnames: tuple[str, ...]
    chips_per_host: int
    processes_per_host: int
    devices_per_process: int

    @property
    def world_size(self) -> int:
        return self.hosts * self.processes_per_host * self.devices_per_process

    @property
    def local_device_count(self) -> int:
        return self.processes_per_host * self.devices_per_process

    @property
    def local_process_task_ids(self) -> list[int]:
        return [self.worker_id * self.processes_per_host + r for r in range(self.processes_per_host)]

    def placement(self, ordinal: int) -> Placement:
        """The placement torch_xla lays out for ``ordinal``: task-major, thread-minor.

        PJRT numbers ordinals by device id, and upstream warns that ids need not follow
        worker ids; ``observed_placement()`` reports what the live runtime did.
        """
        if not 0 <= ordinal < self.world_size:
            raise IndexError(f"ordinal {ordinal} outside a world of {self.world_size}")
        task, thread = divmod(ordinal, self.devices_per_process)
        host, local_process = divmod(task, self.processes_per_host)
        return Placement(
            ordinal=ordinal,
            host=host,
            hostname=self.hostnames[host] if host < len(self.hostnames) else "localhost",
            process=task,
            local_process=local_process,
            thread=thread,
            device=f"xla:{thread}",
            local_ordinal=local_process * self.devices_per_process + thread,
        )

    def placements(self) -> list[Placement]:
        return [self.placement(o) for o in range(self.world_size)]


def from_facts(facts: TpuFacts) -> Topology:
    generation, major, count = parse_accelerator(facts.accelerator)
    host_bounds = _bounds(facts.host_bounds, "TPU_HOST_BOUNDS")
    chip_bounds = _bounds(facts.chips_per_host_bounds, "TPU_CHIPS_PER_HOST_BOUNDS")
    process_bounds = _bounds(facts.process_bounds, "TPU_PROCESS_BOUNDS")
    if generation is None and not (host_bounds and chip_bounds):
        raise TopologyError(
            f"unknown TPU generation in {facts.accelerator!r}: set TPU_HOST_BOUNDS and "
            "TPU_CHIPS_PER_HOST_BOUNDS to describe it"
        )
    devices_per_chip = generation.devices_per_chip if generation else (2 if major <= 3 else 1)

    if chip_bounds:
        chips_per_host = math.prod(chip_bounds)
    else:
        total = generation.chips(count)
        chips_per_host = total if total <= generation.single_host_chips else generation.chips_per_host
    if host_bounds:
        hosts = math.prod(host_bounds)
    else:
        hosts = max(1, math.ceil(generation.chips(count) / chips_per_host))
    if facts.hostnames and len(facts.hostnames) > 1 and len(facts.hostnames) != hosts:
        raise TopologyError(f"{len(facts.hostnames)} worker hostnames but {hosts} hosts in {facts.accelerator}")
    if not 0 <= facts.worker_id < hosts:
        raise TopologyError(f"worker id {facts.worker_id} outside {hosts} hosts")
    # torch_xla runs one process per chip, fewer when TPU_PROCESS_BOUNDS asks for fewer
    # (tpu.num_local_processes).
    processes = chips_per_host if not process_bounds else min(chips_per_host, math.prod(process_bounds))
    return Topology(
        accelerator=facts.accelerator,
        generation=generation.name if generation else f"v{major}",
        hosts=hosts,
        worker_id=facts.worker_id,
        hostnames=facts.hostnames if len(facts.hostnames) > 1 else ("localhost",),
        chips_per_host=chips_per_host,
        processes_per_host=processes,
        devices_per_process=devices_per_chip,
    )


_METADATA_URL = "http://metadata.google.internal/computeMetadata/v1/instance/attributes/"


def gce_metadata(key: str, timeout: float = 0.5) -> str | None:
    """One attribute from the GCE metadata server, or None when it cannot be reached."""
    request = urllib.request.Request(_METADATA_URL + key, headers={"Metadata-Flavor": "Google"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.read().decode()
    except (OSError, ValueError):
        return None


def read_facts(env: Mapping[str, str], metadata: Callable[[str], str | None] | None) -> TpuFacts:
    """Environment first; the metadata server's ``tpu-env`` fills the gaps."""
    tpu_env: dict = {}
    endpoints = None
    if metadata is not None:
        tpu_env = yaml.safe_load(metadata("tpu-env") or "") or {}
        endpoints = metadata("worker-network-endpoints")

    def fact(env_name: str, metadata_name: str) -> str | None:
        value = env.get(env_name) or tpu_env.get(metadata_name)
        return str(value) if value is not None else None

    accelerator = fact("TPU_ACCELERATOR_TYPE", "ACCELERATOR_TYPE")
    if not accelerator:
        raise TopologyError(
            "no TPU here: TPU_ACCELERATOR_TYPE is unset and the GCE metadata server "
            "did not answer (set TPU_ACCELERATOR_TYPE, TPU_WORKER_ID, ... to describe a slice)"
        )
    hostnames = env.get("TPU_WORKER_HOSTNAMES")
    if hostnames:
        names = tuple(h.strip() for h in hostnames.split(",") if h.strip())
    elif endpoints:
        # 'hostname:uid:ip,hostname:uid:ip,...' as upstream's get_worker_ips reads it
        names = tuple(worker.split(":")[2] for worker in endpoints.split(","))
    else:
        names = ()
    return TpuFacts(
        accelerator=accelerator,
        worker_id=int(fact("TPU_WORKER_ID", "WORKER_ID") or 0),
        hostnames=names,
        host_bounds=fact("TPU_HOST_BOUNDS", "HOST_BOUNDS"),
        chips_per_host_bounds=fact("TPU_CHIPS_PER_HOST_BOUNDS", "CHIPS_PER_HOST_BOUNDS"),
        process_bounds=env.get("TPU_PROCESS_BOUNDS"),
    )


def from_env(
    env: Mapping[str, str] | None = None,
    metadata: Callable[[str], str | None] | None = gce_metadata,
) -> Topology:
    """The topology of the slice this host belongs to.

    ``TPU_SKIP_MDS_QUERY`` in ``env`` turns the metadata server off, as it does for
    torch_xla; pass ``metadata=None`` to do the same.
    """
    env = os.environ if env is None else env
    if env.get("TPU_SKIP_MDS_QUERY"):
        metadata = None
    return from_facts(read_facts(env, metadata))


def observed_placement() -> Placement:
    """The placement of the calling thread as the live PJRT runtime reports it."""
    import torch_xla
    import torch_xla.runtime as xr

    device = torch_xla.device()
    local_process = int(os.environ.get("PJRT_LOCAL_PROCESS_RANK", 0))
    host = xr.host_index()
    hostnames = os.environ.get("TPU_WORKER_HOSTNAMES", "").split(",")
    return Placement(
        ordinal=xr.global_ordinal(),
        host=host,
        hostname=hostnames[host] if host < len(hostnames) and hostnames[host] else "localhost",
        process=int(os.environ.get("CLOUD_TPU_TASK_ID", xr.process_index())),
        local_process=local_process,
        thread=device.index or 0,
        device=str(device),
        local_ordinal=xr.local_ordinal(),
    )
