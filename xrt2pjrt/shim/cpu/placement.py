"""Where a CPU replica runs: its place in the N-replica world, and whether this mode is on.

A replica process holds its :class:`Placement` in its environment (``XRT2PJRT_CPU_REPLICA``,
set by the supervisor's spawn): that is what :func:`active` means, and where the ordinals
come from. Outside a replica the XRT-era defaults hold.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket

from xrt2pjrt.shim import job as job_module
from xrt2pjrt.shim import settings


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where one replica runs and how it reaches the others."""

    ordinal: int
    world_size: int
    local_ordinal: int
    local_world_size: int
    host: int
    hosts: int
    store_host: str
    store_port: int
    gloo_addr: str

    def to_env(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_env(cls, text: str) -> Placement:
        return cls(**json.loads(text))


def active() -> bool:
    """True inside a replica process started by the supervisor's spawn."""
    return settings.CPU_REPLICA.text() != ""  # set by spawn in each replica process


def requested(nprocs: int | None) -> bool:
    """Should ``xmp.spawn(fn, nprocs=nprocs)`` use this mode?

    Yes with ``PJRT_DEVICE=CPU`` and ``nprocs > 1``, or ``nprocs=None`` and
    ``XRT2PJRT_CPU_REPLICAS > 1``, or several hosts (``XRT2PJRT_CPU_HOSTS``); never from
    inside a replica.
    """
    if active() or os.environ.get("PJRT_DEVICE", "").strip().upper() != "CPU":
        return False
    return replica_count(nprocs) * Hosts.from_env().count > 1


def replica_count(nprocs: int | None) -> int:
    if nprocs is not None:
        return int(nprocs)
    return host_replicas() or 1


def host_replicas() -> int | None:
    """``XRT2PJRT_CPU_REPLICAS``: the CPU host's devices, one replica each (None when unset)."""
    return settings.CPU_REPLICAS.read()


_placement_cache: Placement | None = None


def placement() -> Placement:
    """This replica's placement (only inside a replica)."""
    global _placement_cache
    text = settings.CPU_REPLICA.text()
    if not text:
        raise RuntimeError("not inside a CPU replica started by xrt2pjrt's CPU multi-replica mode")
    if _placement_cache is None or _placement_cache.to_env() != text:
        _placement_cache = Placement.from_env(text)
    return _placement_cache


def get_ordinal(defval: int = 0) -> int:
    return placement().ordinal if active() else defval


def xrt_world_size(defval: int = 1) -> int:
    return placement().world_size if active() else defval


def get_local_ordinal(defval: int = 0) -> int:
    return placement().local_ordinal if active() else defval


@dataclasses.dataclass(frozen=True)
class Hosts:
    """The CPU hosts of the job (``XRT2PJRT_CPU_HOSTS``) and which one this is (``..._HOST_INDEX``)."""

    count: int
    index: int

    @classmethod
    def from_env(cls) -> Hosts:
        count, index = settings.CPU_HOSTS.read(), settings.CPU_HOST_INDEX.read()
        if count < 1 or not 0 <= index < count:
            raise ValueError(
                f"{settings.CPU_HOST_INDEX.name}={index} is not a host of {settings.CPU_HOSTS.name}={count}"
            )
        return cls(count, index)


def local_address_towards(host: str) -> str:
    """The address this machine uses to reach ``host`` (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect((host, 9))
        return probe.getsockname()[0]


def store_address() -> tuple[str, int]:
    """(host, port) for the CPU mode's hosts: ``XRT2PJRT_RENDEZVOUS_ADDR``, else ``MASTER_ADDR``
    (default 127.0.0.1) and the rendezvous port (``job.rendezvous_port``)."""
    explicit = job_module.from_setting(settings.RENDEZVOUS_ADDR)
    if explicit is not None:
        return explicit
    host = os.environ.get("MASTER_ADDR", "").strip() or "127.0.0.1"
    return host, job_module.rendezvous_port(os.environ)
