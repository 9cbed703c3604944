"""Host rendezvous: a barrier with payload exchange over the job's key-value store.

XRT's ``xm.rendezvous`` was a real barrier served by a gRPC mesh on the host of ordinal 0;
PJRT's is an XLA all_gather that syncs the graph and does nothing under SPMD. This module
brings back the XRT behaviour over a key-value store (``store``: authenticated, with
server-side waits):

* every participant writes ``(tag, payload)`` under a key for this rendezvous and counts
  itself in; the last one counted gathers every key into one value, which the others wait
  for, so nobody leaves before all arrived (and the store answers N requests of one key
  per barrier, not N requests of N keys);
* all participants compare the tags (a mismatch is :class:`RendezvousTagMismatch`,
  raised on every participant) and return the payloads in ordinal order;
* the key carries a generation number counted per (participant set, ordinal), so the
  same tag can be used again and again (``mesh_reduce('loss', ...)`` every step);
* the last participant to finish reading deletes the keys, so a long run does not grow
  the store.

It needs no graph sync, works under SPMD, and works with threads (v2/v3: two devices per
process) as well as processes: the ordinal is an argument, not a per-process global, and
each thread talks to the store over its own connection, because a store client
serialises its calls and a thread blocked in ``wait`` would block the others.

Where the store lives: ``store=`` handed in (the CPU multi-replica mode passes the one its
parent serves), else the store of this process's job (``job``: placed where every host can
find it without an XLA collective; ``job_store``: served by a process that exists there, and
kept up until the job's last process is done with it). Only the job's processes get in
(``store``).

The timeout (seconds) comes from the ``timeout`` argument, else
``XRT2PJRT_RENDEZVOUS_TIMEOUT``, else 300.
"""

from __future__ import annotations

import datetime
import itertools
import os
import threading
import weakref
from collections.abc import Sequence

from xrt2pjrt.shim import job as job_module
from xrt2pjrt.shim import settings
from xrt2pjrt.shim.job_store import JOB_STORE
from xrt2pjrt.shim.store.protocol import StoreAborted, StoreError, StoreTimeout, max_value_bytes

_KEY_PREFIX = "xrt2pjrt/rendezvous"


class RendezvousError(RuntimeError):
    """A host rendezvous could not complete."""


class RendezvousTagMismatch(RendezvousError):
    """Participants of one rendezvous called it with different tags."""


class RendezvousTimeout(RendezvousError):
    """Some participants did not arrive within the timeout."""


class RendezvousAborted(RendezvousError):
    """Another process of the job failed; its message says how."""


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
        raise ValueError(f"ordinal {ordinal} joined rendezvous {tag!r} but is not among its replicas {members}")
    seconds = settings.RENDEZVOUS_TIMEOUT.read() if timeout is None else float(timeout)
    try:
        client = _thread_client(store, seconds)
    except (job_module.JobError, StoreError) as error:
        raise RendezvousError(f"rendezvous {tag!r} on ordinal {ordinal}: {error}") from None

    group = "all" if len(members) == world_size else ",".join(map(str, members))
    generation = _next_generation(client.identity, group, ordinal)
    base = f"{_KEY_PREFIX}/{group}/{generation}"
    keys = {member: f"{base}/{member}" for member in members}
    try:
        client.store.set(keys[ordinal], _encode(tag, bytes(payload)))
        values = _values_of_all(client.store, tag, keys, base, ordinal, seconds)
        # Everyone has read once the counter reaches the group size: the last one deletes
        # the keys (the counter key last, so a late reader never sees a half-deleted set).
        if client.store.add(f"{base}/read", 1) == len(members):
            client.store.delete_keys([*keys.values(), f"{base}/all", f"{base}/arrived", f"{base}/read"])
    except StoreAborted as error:
        raise RendezvousAborted(f"rendezvous {tag!r} on ordinal {ordinal} ended: {error}") from None
    except StoreError as error:
        raise RendezvousError(f"rendezvous {tag!r} failed on ordinal {ordinal}: {error}") from None
    if len(set(values)) == 1:  # a barrier: one tag, one payload (C-speed; no N decodes each)
        return [_decode(values[0])[1]] * len(members)
    arrivals = {member: _decode(value) for member, value in zip(members, values)}

    tags = {member: arrived_tag for member, (arrived_tag, _) in arrivals.items()}
    if len(set(tags.values())) > 1:
        raise RendezvousTagMismatch(_describe_mismatch(tags, ordinal))
    return [arrivals[member][1] for member in members]


def _values_of_all(store, tag: str, keys: dict[int, str], base: str, ordinal: int, seconds: float) -> list[bytes]:
    """Every participant's arrival, once all have arrived (the store waits).

    The last to arrive gathers the arrivals into one value, ``base/all``, that the others
    wait for: each participant asks for one key, not N, so the store's work per barrier
    grows as N, not N^2 (N^2 keys cost the store 0.7 s per barrier on a pod of 256
    processes). When the gathered arrivals would be over the store's value limit
    (large payloads from many participants), ``base/all`` says so and each participant
    fetches the N keys itself. When every arrival is the same (a barrier), ``base/all`` holds
    it once, so what each participant reads does not grow with N either.
    """
    try:
        if store.add(f"{base}/arrived", 1) == len(keys):
            values = store.multi_get(list(keys.values()))  # all there: no wait
            gathered = _SAME + values[0] if len(set(values)) == 1 else _GATHERED + _pack(values)
            store.set(f"{base}/all", gathered if len(gathered) <= max_value_bytes() else _EACH_KEY)
            return values
        everyone = store.get(f"{base}/all")
        if everyone == _EACH_KEY:
            return store.multi_get(list(keys.values()))
        if everyone[:1] == _SAME:
            return [everyone[1:]] * len(keys)
        return _unpack(everyone[len(_GATHERED) :])
    except StoreTimeout:
        try:
            missing = [member for member, key in keys.items() if not store.check([key])]
        except StoreError:
            missing = []
        if not missing:
            raise
        raise RendezvousTimeout(
            f"rendezvous {tag!r} timed out after {seconds:g}s on ordinal {ordinal}: "
            f"replicas {missing} never arrived (participants {sorted(keys)}; "
            f"set {settings.RENDEZVOUS_TIMEOUT.name} to wait longer)"
        ) from None


_GATHERED, _EACH_KEY, _SAME = b"G", b"K", b"S"


def _pack(values: Sequence[bytes]) -> bytes:
    return b"".join(len(value).to_bytes(8, "big") + value for value in values)


def _unpack(packed: bytes) -> list[bytes]:
    values, at = [], 0
    while at < len(packed):
        size = int.from_bytes(packed[at : at + 8], "big")
        values.append(packed[at + 8 : at + 8 + size])
        at += 8 + size
    return values


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


# A handed-in store's identity in the counts: a number no later store gets. Its id() would
# do while it lives, but once it is freed the next store made often gets the same id, and
# with it the freed store's counts: participants then met under different generations and
# waited for each other until the timeout.
_store_numbers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_numbers = itertools.count()


def _identity_of(store) -> object:
    with _generations_lock:
        try:
            if store not in _store_numbers:
                _store_numbers[store] = next(_numbers)
            return ("store", _store_numbers[store])
        except TypeError:  # no weak reference to it (a C++ store): it must live as long as the job
            return id(store)


# --- store connections ---------------------------------------------------------------
class _Client:
    def __init__(self, store, identity: object, handed_in=None):
        self.store = store
        self.identity = identity
        self.handed_in = handed_in  # held, so that its id (the cache key) is never another store's


_local = threading.local()


def _thread_client(store, seconds: float) -> _Client:
    """This thread's own connection to the handed-in store or to this process's job's store."""
    clients = getattr(_local, "clients", None)
    if clients is None or getattr(_local, "pid", None) != os.getpid():  # not a forked parent's
        clients = _local.clients = {}
        _local.pid = os.getpid()
    key = id(store) if store is not None else job_module.current()
    client = clients.get(key)
    if client is None:
        if store is not None:
            client = _Client(store.clone() if hasattr(store, "clone") else store, _identity_of(store), store)
        else:
            client = _Client(JOB_STORE.connect(key, seconds), key)
        clients[key] = client
    client.store.set_timeout(datetime.timedelta(seconds=seconds))
    return client
