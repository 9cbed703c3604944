"""Host rendezvous: a barrier with payload exchange over torch.distributed's TCPStore.

XRT's ``xm.rendezvous`` was a real barrier served by a gRPC mesh on the host of ordinal 0;
PJRT's is an XLA all_gather that syncs the graph and does nothing under SPMD. This module
brings back the XRT behaviour with an existing engine, ``torch.distributed.TCPStore``:

* every participant writes ``(tag, payload)`` under a key for this rendezvous and waits
  until every other participant's key exists, so nobody leaves before all arrived;
* all participants compare the tags (a mismatch is :class:`RendezvousTagMismatch`,
  raised on every participant) and return the payloads in ordinal order;
* the key carries a generation number counted per (participant set, ordinal), so the
  same tag can be used again and again (``mesh_reduce('loss', ...)`` every step);
* the last participant to finish reading deletes the keys, so a long run does not grow
  the store.

It needs no graph sync, works under SPMD, and works with threads (v2/v3: two devices per
process) as well as processes: the ordinal is an argument, not a per-process global, and
each thread talks to the store over its own connection, because a TCPStore client
serialises its calls and a thread blocked in ``wait`` would block the others.

Where the store lives (first match wins):

1. ``store=`` handed in (the CPU multi-replica mode passes the one its parent serves);
2. ``XRT2PJRT_RENDEZVOUS_ADDR=host:port``;
3. ``MASTER_ADDR`` (default ``127.0.0.1``) and ``XRT2PJRT_RENDEZVOUS_PORT``, else
   ``MASTER_PORT + 1`` (``MASTER_PORT`` defaults to 12355 as in torch_xla). Not
   ``MASTER_PORT`` itself: ``init_process_group(init_method='xla://' or 'env://')``
   serves its own TCPStore there, and two servers cannot share a port.

In cases 2 and 3 the process that holds ordinal 0 serves the store (the host of ordinal
0, as XRT's mesh master); the others connect and retry until the timeout.

The timeout (seconds) comes from the ``timeout`` argument, else
``XRT2PJRT_RENDEZVOUS_TIMEOUT``, else 300.
"""

from __future__ import annotations

import datetime
import os
import socket
import threading
import time
from collections.abc import Sequence

TIMEOUT_ENV = "XRT2PJRT_RENDEZVOUS_TIMEOUT"
DEFAULT_TIMEOUT_SECONDS = 300.0
ADDR_ENV = "XRT2PJRT_RENDEZVOUS_ADDR"
PORT_ENV = "XRT2PJRT_RENDEZVOUS_PORT"
DEFAULT_MASTER_PORT = 12355  # torch_xla's default for xla:// and its master discovery

_KEY_PREFIX = "xrt2pjrt/rendezvous"


class RendezvousError(RuntimeError):
    """A host rendezvous could not complete."""


class RendezvousTagMismatch(RendezvousError):
    """Participants of one rendezvous called it with different tags."""


class RendezvousTimeout(RendezvousError):
    """Some participants did not arrive within the timeout."""


def default_timeout() -> float:
    """Seconds to wait for the other participants: ``XRT2PJRT_RENDEZVOUS_TIMEOUT`` or 300."""
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_TIMEOUT_SECONDS
    try:
        seconds = float(raw)
    except ValueError:
        raise ValueError(f"{TIMEOUT_ENV}={raw!r} is not a number of seconds") from None
    if seconds <= 0:
        raise ValueError(f"{TIMEOUT_ENV}={raw!r} must be a positive number of seconds")
    return seconds


def participants_of(replicas: Sequence[int] | None, world_size: int) -> list[int]:
    """The ordinals taking part: ``replicas`` sorted (XRT's order), or every ordinal."""
    if not replicas:
        return list(range(world_size))
    members = sorted(set(int(r) for r in replicas))
    if len(members) != len(replicas):
        raise ValueError(f"rendezvous replicas {list(replicas)} name an ordinal twice")
    outside = [r for r in members if not 0 <= r < world_size]
    if outside:
        raise ValueError(f"rendezvous replicas {outside} are outside the world of {world_size}")
    return members


def host_rendezvous(
    tag: str,
    payload: bytes,
    replicas: Sequence[int] | None,
    *,
    ordinal: int,
    world_size: int,
    timeout: float | None = None,
    store=None,
) -> list[bytes]:
    """Barrier + payload exchange among ``replicas`` (all ordinals if empty/None).

    Returns the participants' payloads in ordinal order. Every participant returns only
    after all have arrived. Raises :class:`RendezvousTagMismatch` when participants gave
    different tags and :class:`RendezvousTimeout` naming the replicas that never arrived.
    """
    if not isinstance(payload, (bytes, bytearray)):
        raise TypeError(f"rendezvous payload must be bytes, not {type(payload).__name__}")
    members = participants_of(replicas, world_size)
    if ordinal not in members:
        raise ValueError(
            f"ordinal {ordinal} joined rendezvous {tag!r} but is not among its replicas {members}"
        )
    seconds = default_timeout() if timeout is None else float(timeout)
    client = _thread_client(store, ordinal, seconds)

    group = "all" if len(members) == world_size else ",".join(map(str, members))
    generation = _next_generation(client.identity, group, ordinal)
    base = f"{_KEY_PREFIX}/{group}/{generation}"
    keys = {member: f"{base}/{member}" for member in members}

    client.store.set(keys[ordinal], _encode(tag, bytes(payload)))
    _wait_for_all(client.store, tag, keys, ordinal, seconds)
    values = client.store.multi_get([keys[m] for m in members])
    arrivals = {member: _decode(value) for member, value in zip(members, values)}
    # Everyone has read every key once the counter reaches the group size: the last one
    # deletes them (the counter key last, so a late reader never sees a half-deleted set).
    if client.store.add(f"{base}/read", 1) == len(members):
        for key in keys.values():
            client.store.delete_key(key)
        client.store.delete_key(f"{base}/read")

    tags = {member: arrived_tag for member, (arrived_tag, _) in arrivals.items()}
    if len(set(tags.values())) > 1:
        raise RendezvousTagMismatch(_describe_mismatch(tags, ordinal))
    return [arrivals[member][1] for member in members]


def _wait_for_all(store, tag: str, keys: dict[int, str], ordinal: int, seconds: float) -> None:
    try:
        store.wait(list(keys.values()), datetime.timedelta(seconds=seconds))
    except Exception as error:  # the store raises a generic DistStoreError on timeout
        try:
            missing = [member for member, key in keys.items() if not store.check([key])]
        except Exception:  # noqa: BLE001 -- the store itself is gone
            missing = []
        if not missing:
            raise RendezvousError(f"rendezvous {tag!r} failed on ordinal {ordinal}: {error}") from error
        raise RendezvousTimeout(
            f"rendezvous {tag!r} timed out after {seconds:g}s on ordinal {ordinal}: "
            f"replicas {missing} never arrived (participants {sorted(keys)}; "
            f"set {TIMEOUT_ENV} to wait longer)"
        ) from None


def _describe_mismatch(tags: dict[int, str], ordinal: int) -> str:
    by_tag: dict[str, list[int]] = {}
    for member, member_tag in sorted(tags.items()):
        by_tag.setdefault(member_tag, []).append(member)
    parts = "; ".join(f"ordinals {members} called rendezvous({t!r})" for t, members in by_tag.items())
    return f"rendezvous tag mismatch seen by ordinal {ordinal}: {parts}"


def _encode(tag: str, payload: bytes) -> bytes:
    raw_tag = tag.encode("utf-8")
    return len(raw_tag).to_bytes(4, "big") + raw_tag + payload


def _decode(value: bytes) -> tuple[str, bytes]:
    size = int.from_bytes(value[:4], "big")
    return value[4 : 4 + size].decode("utf-8"), bytes(value[4 + size :])


# --- generations ---------------------------------------------------------------------
# Participants of a group call its rendezvous in the same sequence, so counting calls per
# (store, group, ordinal) gives every participant the same generation for the same call.
_generations: dict[tuple[object, str, int], int] = {}
_generations_lock = threading.Lock()


def _next_generation(identity: object, group: str, ordinal: int) -> int:
    with _generations_lock:
        key = (identity, group, ordinal)
        generation = _generations.get(key, 0)
        _generations[key] = generation + 1
        return generation


# --- store connections ---------------------------------------------------------------
class _Client:
    def __init__(self, store, identity: object):
        self.store = store
        self.identity = identity


_local = threading.local()
_server_lock = threading.Lock()
_servers: dict[tuple[str, int], object] = {}


def _thread_client(store, ordinal: int, seconds: float) -> _Client:
    """This thread's own connection to the handed-in store or to the configured address."""
    clients = getattr(_local, "clients", None)
    if clients is None:
        clients = _local.clients = {}
    key = id(store) if store is not None else store_address()
    client = clients.get(key)
    if client is None:
        if store is not None:
            client = _Client(store.clone() if hasattr(store, "clone") else store, id(store))
        else:
            host, port = key
            if ordinal == 0:
                _serve(host, port, seconds)
            client = _Client(connect_store(host, port, is_server=False, timeout=seconds), key)
        clients[key] = client
    client.store.set_timeout(datetime.timedelta(seconds=seconds))
    return client


def store_address() -> tuple[str, int]:
    """(host, port) of the rendezvous store from the environment (see module docstring)."""
    explicit = os.environ.get(ADDR_ENV, "").strip()
    if explicit:
        host, _, port = explicit.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"{ADDR_ENV}={explicit!r} is not host:port")
        return host.strip("[]"), int(port)
    host = os.environ.get("MASTER_ADDR", "").strip() or "127.0.0.1"
    port = os.environ.get(PORT_ENV, "").strip()
    if port:
        return host, int(port)
    master_port = int(os.environ.get("MASTER_PORT", "").strip() or DEFAULT_MASTER_PORT)
    return host, master_port + 1


def connect_store(host: str, port: int, *, is_server: bool, timeout: float, listening=None):
    """A TCPStore at host:port; ``port=0`` with ``is_server`` picks a free port.

    ``listening``: a bound, listening socket for the server to take over (so the port can
    be known, and handed to others, before the server's threads start).
    """
    from torch.distributed import TCPStore

    if not is_server:
        _wait_until_listening(host, port, time.monotonic() + timeout)
    return TCPStore(
        host,
        port,
        is_master=is_server,
        wait_for_workers=False,
        timeout=datetime.timedelta(seconds=timeout),
        master_listen_fd=listening.detach() if listening is not None else None,
    )


def _wait_until_listening(host: str, port: int, deadline: float) -> None:
    """Wait for the store's host to listen. A host that starts before host 0 would otherwise
    meet a refused connection, and TCPStore retries after a random back-off that can take
    most of the timeout (seen: 46 s of 60): then it times out although host 0 came up."""
    while True:
        try:
            socket.create_connection((host, port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() >= deadline:
                return  # TCPStore reports the failure, with its own message
            time.sleep(0.2)


def _serve(host: str, port: int, seconds: float) -> None:
    with _server_lock:
        if (host, port) not in _servers:
            _servers[(host, port)] = connect_store(host, port, is_server=True, timeout=seconds)
