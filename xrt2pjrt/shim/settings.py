"""Every ``XRT2PJRT_*`` environment variable: its name, default, parser and meaning, read here only.

The shim's floors and the codemod side (``launch``, ``run``, the ``xla_dist`` rewriter) take
the names from here, so a variable is spelled once and parsed one way. A value that does
not parse is a :class:`SettingError` naming the variable and the value. A variable set to
nothing, or to white space, counts as unset.

Standard library only, and nothing of xrt2pjrt: the bottom floor of the shim.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from typing import Any


class SettingError(ValueError):
    """An ``XRT2PJRT_*`` variable holds a value its parser refuses."""


@dataclasses.dataclass(frozen=True)
class Setting:
    """One variable: ``parse(name, text)`` turns its text into a value, ``default`` stands
    in when it is unset."""

    name: str
    meaning: str
    parse: Callable[[str, str], Any]
    default: Any = None

    def text(self, env: Mapping[str, str] | None = None) -> str:
        """The value as set, without surrounding white space; "" when unset."""
        return (os.environ if env is None else env).get(self.name, "").strip()

    def read(self, env: Mapping[str, str] | None = None) -> Any:
        text = self.text(env)
        return self.parse(self.name, text) if text else self.default


# --- parsers: (name, text) -> value, or a SettingError that names both -------------------------
def as_text(name: str, value: str) -> str:
    return value


def integer(name: str, value: str) -> int:
    if not value.lstrip("-").isdigit():
        raise SettingError(f"{name}={value!r} is not an integer")
    return int(value)


def _positive_integer(complaint: str) -> Callable[[str, str], int]:
    def parse(name: str, value: str) -> int:
        if not value.isdigit() or int(value) < 1:
            raise SettingError(f"{name}={value!r} {complaint}")
        return int(value)

    return parse


def positive_seconds(name: str, value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise SettingError(f"{name}={value!r} is not a number of seconds") from None
    if seconds <= 0:
        raise SettingError(f"{name}={value!r} must be a positive number of seconds")
    return seconds


def host_and_port(name: str, value: str) -> tuple[str, int]:
    """'host:port' or '[v6 address]:port' -> (host, port)."""
    host, _, port = value.strip().rpartition(":")
    if not host or not port.isdigit():
        raise SettingError(f"{name}={value!r} is not host:port")
    return host.strip("[]"), int(port)


TRANSPORTS = ("host", "xla")


def transport(name: str, value: str) -> str:
    """A rendezvous transport, from the variable or from ``xm.rendezvous(transport=...)``."""
    chosen = value.lower()
    if chosen not in TRANSPORTS:
        raise SettingError(
            f"rendezvous transport {chosen!r} is not one of {TRANSPORTS} (argument transport= or {name})"
        )
    return chosen


# --- the job and its store ------------------------------------------------------------------------
JOB_SECRET = Setting("XRT2PJRT_JOB_SECRET", "the job's secret: only processes that hold it enter its store", as_text)
JOB_SECRET_FILE = Setting(
    "XRT2PJRT_JOB_SECRET_FILE", "a file only its owner may read that holds the job's secret", as_text
)
STORE_MAX_BYTES = Setting(
    "XRT2PJRT_STORE_MAX_BYTES",
    "the largest value the store takes, in bytes",
    _positive_integer("is not a positive number of bytes"),
    1 << 30,
)
SERVED_STORE = Setting(
    "XRT2PJRT_STORE", "host:port of the store a spawn parent serves for its children (it sets it)", host_and_port
)

# --- rendezvous -----------------------------------------------------------------------------------
RENDEZVOUS_TIMEOUT = Setting(
    "XRT2PJRT_RENDEZVOUS_TIMEOUT", "seconds a rendezvous or collective waits for the others", positive_seconds, 300.0
)
RENDEZVOUS_ADDR = Setting(
    "XRT2PJRT_RENDEZVOUS_ADDR", "host:port of the job's store, where the job would place it elsewhere", host_and_port
)
RENDEZVOUS_PORT = Setting("XRT2PJRT_RENDEZVOUS_PORT", "the port of the job's store (unset: MASTER_PORT + 1)", integer)
RENDEZVOUS_TRANSPORT = Setting(
    "XRT2PJRT_RENDEZVOUS_TRANSPORT",
    "how xm.rendezvous meets: 'host' (the job's store) or 'xla' (an all_gather)",
    transport,
    "host",
)

# --- the CPU replica mode -------------------------------------------------------------------------
CPU_REPLICAS = Setting(
    "XRT2PJRT_CPU_REPLICAS",
    "the CPU replicas of this host (its device count) for nprocs=None",
    _positive_integer("is not a positive replica count"),
)
CPU_HOSTS = Setting("XRT2PJRT_CPU_HOSTS", "how many CPU hosts the job runs on", integer, 1)
CPU_HOST_INDEX = Setting("XRT2PJRT_CPU_HOST_INDEX", "which of the CPU hosts this one is, from 0", integer, 0)
CPU_HOST_ADDR = Setting(
    "XRT2PJRT_CPU_HOST_ADDR", "this host's address for gloo, where the route to MASTER_ADDR picks another", as_text
)
CPU_REPLICA = Setting(
    "XRT2PJRT_CPU_REPLICA", "a replica's placement, set by the CPU mode's spawn in each replica (JSON)", as_text
)
RUN_ITEMS = Setting(
    "XRT2PJRT_RUN_ITEMS",
    "the folder where the processes of an `xrt2pjrt run` write what they saw at its items to decide (run sets it)",
    as_text,
)

# --- the launcher ---------------------------------------------------------------------------------
LAUNCH = Setting("XRT2PJRT_LAUNCH", "the run id `xrt2pjrt launch` sets on every worker of one run", as_text)

# --- migrate's results cache (xrt2pjrt/cache.py) ----------------------------------------------------
CACHE_DIR = Setting("XRT2PJRT_CACHE_DIR", "the results cache's folder (unset: ~/.cache/xrt2pjrt)", as_text)
NO_CACHE = Setting("XRT2PJRT_NO_CACHE", "set to anything: migrate neither reads nor writes the results cache", as_text)

ALL: tuple[Setting, ...] = tuple(value for value in list(globals().values()) if isinstance(value, Setting))
