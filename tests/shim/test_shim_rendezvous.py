"""xrt2pjrt.shim.rendezvous across real processes and threads on loopback.

Each participant is a separate Python process (or a thread inside one) talking to a real
store (xrt2pjrt.shim.store) over a real socket; nothing is mocked.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

from xrt2pjrt.shim import rendezvous, settings
from xrt2pjrt.shim.rendezvous import RendezvousError, host_rendezvous
from xrt2pjrt.shim.store import client as client_module
from xrt2pjrt.shim.store.client import StoreClient, for_this_job
from xrt2pjrt.shim.store.server import StoreServer, listen

PYTHON = sys.executable
ROOT = str(Path(__file__).resolve().parents[2])

# A participant: joins the rendezvous described by its JSON argument, prints one JSON line.
WORKER = textwrap.dedent(
    """
    import json, sys, threading, time
    from xrt2pjrt.shim import rendezvous as r
    from xrt2pjrt.shim.store.client import for_this_job

    spec = json.loads(sys.argv[1])
    printing = threading.Lock()  # one whole line per thread

    def join(ordinal):
        time.sleep(spec.get("delay", {}).get(str(ordinal), 0))
        store = None
        if spec.get("store_port"):
            store = for_this_job("127.0.0.1", spec["store_port"], timeout=10)
        out = {"ordinal": ordinal, "results": []}
        try:
            for tag in spec["tags"][str(ordinal)]:
                out["arrived"] = time.time()
                got = r.host_rendezvous(tag, f"from {ordinal}".encode(), spec.get("replicas"),
                                        ordinal=ordinal, world_size=spec["world"],
                                        timeout=spec.get("timeout"), store=store)
                out["results"].append([p.decode() for p in got])
            out["left"] = time.time()
            if store is not None:
                out["keys_left"] = store.num_keys()
        except r.RendezvousError as error:
            out["error"] = type(error).__name__
            out["message"] = str(error)
            out["left"] = time.time()
        with printing:
            print(json.dumps(out), flush=True)

    threads = [threading.Thread(target=join, args=(o,)) for o in spec["ordinals"]]
    [t.start() for t in threads]
    [t.join() for t in threads]
    """
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


SECRET = uuid.uuid4().hex


def _run(
    processes: list[list[int]], tags: dict[int, list[str]], world: int, *, env=None, deadline: float = 60, **spec
) -> dict[int, dict]:
    """Start one process per entry of ``processes`` (its ordinals run as threads)."""
    environment = {**os.environ, "PYTHONPATH": ROOT, "XRT2PJRT_JOB_SECRET": SECRET, **(env or {})}
    spec.update(world=world, tags={str(k): v for k, v in tags.items()})
    if "delay" in spec:
        spec["delay"] = {str(k): v for k, v in spec["delay"].items()}
    started = []
    for ordinals in processes:
        arg = json.dumps({**spec, "ordinals": ordinals})
        started.append(
            subprocess.Popen(
                [PYTHON, "-c", WORKER, arg], env=environment, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
        )
        environment = {**environment, **spec.get("next_env", {})}
    results = {}
    try:
        for process in started:
            out, err = process.communicate(timeout=deadline)
            assert process.returncode == 0, err
            for line in out.splitlines():
                record = json.loads(line)
                results[record["ordinal"]] = record
    finally:
        for process in started:
            process.kill()
    return results


@pytest.fixture
def served_store(monkeypatch):
    monkeypatch.setenv("XRT2PJRT_JOB_SECRET", SECRET)
    server = StoreServer(listen("127.0.0.1", 0), SECRET.encode())
    yield for_this_job("127.0.0.1", server.port, timeout=30)


def test_barrier_holds_everyone_until_the_late_replica_arrives(served_store):
    results = _run(
        [[0], [1], [2]], {o: ["step"] * 3 for o in range(3)}, 3, store_port=served_store.port, delay={2: 2.0}
    )
    late_arrival = results[2]["arrived"]
    for ordinal in (0, 1):
        assert results[ordinal]["left"] >= late_arrival - 0.05  # clocks are the same machine
    for record in results.values():
        # the same tag three times over: three rendezvous, payloads in ordinal order
        assert record["results"] == [["from 0", "from 1", "from 2"]] * 3
    # the last reader of each rendezvous deleted its keys
    assert served_store.num_keys() == 0


def test_subset_meets_without_the_others(served_store):
    results = _run([[0], [2]], {0: ["pair"], 2: ["pair"]}, 4, store_port=served_store.port, replicas=[2, 0])
    assert results[0]["results"] == results[2]["results"] == [["from 0", "from 2"]]


def test_tag_mismatch_names_both_tags_and_ordinals(served_store):
    results = _run([[0], [1], [2]], {0: ["save"], 1: ["save"], 2: ["eval"]}, 3, store_port=served_store.port)
    for record in results.values():
        assert record["error"] == "RendezvousTagMismatch"
        assert "ordinals [0, 1] called rendezvous('save')" in record["message"]
        assert "ordinals [2] called rendezvous('eval')" in record["message"]


def test_timeout_names_the_replicas_that_never_arrived(served_store):
    started = time.monotonic()
    results = _run(
        [[0], [1]],
        {0: ["sync"], 1: ["sync"]},
        4,
        store_port=served_store.port,
        env={"XRT2PJRT_RENDEZVOUS_TIMEOUT": "2"},
    )
    assert time.monotonic() - started < 30
    for record in results.values():
        assert record["error"] == "RendezvousTimeout"
        assert "replicas [2, 3] never arrived" in record["message"]
        assert record["left"] - record["arrived"] < 10


def test_threads_in_processes_meet_in_the_store_local_process_0_serves():
    """Two processes with two replica threads each (TPU v2/v3 shape), no store handed in,
    as torch_xla's spawn starts them (PJRT's process variables). Local process 0 serves
    the job's store although ordinal 0 runs in the other process (PJRT gives ordinals no
    fixed link to processes); it starts second, and nobody waits for a timeout."""
    port = str(_free_port())
    first = {"PJRT_LOCAL_PROCESS_COUNT": "2", "PJRT_LOCAL_PROCESS_RANK": "1", "XRT2PJRT_RENDEZVOUS_PORT": port}
    started = time.monotonic()
    results = _run(
        [[0, 1], [2, 3]],
        {o: ["a", "b", "a"] for o in range(4)},
        4,
        env=first,
        next_env={"PJRT_LOCAL_PROCESS_RANK": "0"},
        delay={2: 1.0, 3: 1.0},
    )
    assert time.monotonic() - started < 30
    expected = [f"from {o}" for o in range(4)]
    assert {o: r["results"] for o, r in results.items()} == {o: [expected] * 3 for o in range(4)}


def test_a_replica_outside_the_participants_is_refused(served_store):
    with pytest.raises(ValueError, match="not among its replicas"):
        host_rendezvous("x", b"", [1, 2], ordinal=0, world_size=3, store=served_store)
    with pytest.raises(TypeError, match="bytes"):
        host_rendezvous("x", "text", None, ordinal=0, world_size=1, store=served_store)


def test_each_handed_in_store_is_the_one_met_in_even_when_an_old_one_is_gone():
    """The per-thread cache is keyed by the store's id; a freed store's id is reused by the
    next object (CPython hands the freed memory to the next client made), which must not
    inherit the freed store's connection."""
    secret = uuid.uuid4().hex.encode()
    servers = [StoreServer(listen("127.0.0.1", 0), secret) for _ in range(3)]

    def meet(port: int) -> int:
        """The port of the connection the rendezvous met in."""
        handed = StoreClient("127.0.0.1", port, secret, timeout=5)
        assert host_rendezvous("x", b"p", None, ordinal=0, world_size=1, store=handed) == [b"p"]
        return rendezvous._local.clients[id(handed)].store.port

    assert [meet(server.port) for server in servers] == [server.port for server in servers]


def _meet_in_threads(
    server, participants: int, payload: bytes, rounds: int = 2, timeout: float = 30, own_byte: bool = True
) -> list[list[bytes]]:
    """``participants`` threads of this process, each with a store client of its own for
    ``server``, meet ``rounds`` times, each giving ``payload`` and (``own_byte``) its
    ordinal's byte; what the last round returned to each (or its error)."""
    got: dict[int, list[bytes]] = {}

    def join(ordinal: int) -> None:
        store = StoreClient("127.0.0.1", server.port, SECRET.encode(), timeout=timeout)
        try:
            for _ in range(rounds):
                got[ordinal] = host_rendezvous(
                    "step",
                    payload + bytes([ordinal] * own_byte),
                    None,
                    ordinal=ordinal,
                    world_size=participants,
                    timeout=timeout,
                    store=store,
                )
        except RendezvousError as error:
            got[ordinal] = str(error)

    threads = [threading.Thread(target=join, args=(o,)) for o in range(participants)]
    [t.start() for t in threads]
    [t.join(timeout + 30) for t in threads]
    return [got.get(o) for o in range(participants)]


def test_the_stores_work_per_participant_does_not_grow_with_the_participants(monkeypatch):
    """On a pod of 256 processes a barrier cost the store 0.7 s (bench/store_scale.py): each
    participant asked for all N keys, N^2 per barrier. Counted here as the bytes of every
    request the store was sent, per participant and rendezvous, at 8 and at 32 participants."""
    sent = []
    send = client_module._Link.send
    monkeypatch.setattr(
        client_module._Link, "send", lambda self, request: sent.append(len(request)) or send(self, request)
    )
    per_participant = {}
    for participants in (8, 32):
        server = StoreServer(listen("127.0.0.1", 0), SECRET.encode())
        results = _meet_in_threads(server, participants, b"", rounds=1)  # connections made, first keys
        sent.clear()
        results = _meet_in_threads(server, participants, b"", rounds=3)
        assert results == [[bytes([o]) for o in range(participants)]] * participants
        per_participant[participants] = sum(sent) / (participants * 3)
        server.close()
    assert per_participant[32] < 1.2 * per_participant[8], per_participant


def test_what_a_barrier_hands_each_participant_does_not_grow_with_the_participants(monkeypatch):
    """A barrier (every participant gives the same tag and payload) at 8 and at 32
    participants: the bytes each participant reads from the store, per barrier, stay the
    same (N participants each reading all N arrivals cost a pod of 4,096 N^2 of work)."""
    received = []
    read = client_module._Link.read
    monkeypatch.setattr(client_module._Link, "read", lambda self, count: received.append(count) or read(self, count))
    per_participant = {}
    for participants in (8, 32):
        server = StoreServer(listen("127.0.0.1", 0), SECRET.encode())
        _meet_in_threads(server, participants, b"", rounds=1)
        received.clear()
        got = _meet_in_threads(server, participants, b"same", rounds=3, own_byte=False)
        assert got == [[b"same"] * participants] * participants
        per_participant[participants] = sum(received) / (participants * 3)
        server.close()
    assert per_participant[32] < 1.2 * per_participant[8], per_participant


@pytest.mark.parametrize("participants", [2, 8])
def test_payloads_too_large_to_gather_in_one_value_still_reach_everyone(monkeypatch, participants):
    """8 payloads of 1,000 bytes are over a 6,000-byte value limit together, not each."""
    monkeypatch.setenv(settings.STORE_MAX_BYTES.name, "6000")
    server = StoreServer(listen("127.0.0.1", 0), SECRET.encode())
    payload = b"x" * 1000
    results = _meet_in_threads(server, participants, payload)
    assert results == [[payload + bytes([o]) for o in range(participants)]] * participants
    assert StoreClient("127.0.0.1", server.port, SECRET.encode(), timeout=5).num_keys() == 0
    server.close()


def test_a_barrier_with_a_payload_at_the_value_limit_still_reaches_everyone(monkeypatch):
    """Each arrival (tag and payload) exactly at a 6,000-byte limit, the same from all:
    stored once it would be one byte over, so each participant fetches it itself."""
    monkeypatch.setenv(settings.STORE_MAX_BYTES.name, "6000")
    server = StoreServer(listen("127.0.0.1", 0), SECRET.encode())
    payload = b"x" * (6000 - 4 - len("step"))  # the arrival: a 4-byte tag length, the tag, the payload
    assert _meet_in_threads(server, 4, payload, own_byte=False) == [[payload] * 4] * 4
    server.close()


def test_stores_made_after_others_were_freed_meet_in_step():
    """Threads that each make a store client, meet and end, again and again (a freed
    client's id is often the next one's): the rendezvous counted its calls per id(store),
    so a new client could inherit a freed one's count, and two participants waited for
    each other under different keys until the timeout."""
    server = StoreServer(listen("127.0.0.1", 0), SECRET.encode())
    for meeting in range(12):
        assert _meet_in_threads(server, 2, b"", rounds=meeting % 3 + 1, timeout=3) == [[b"\0", b"\1"]] * 2, meeting
    server.close()
