"""xrt2pjrt.shim.store.server and the keys it keeps: who can read and write, where it listens,
how big a value may be, what an abort ends, how many processes one server holds. Real
sockets and real processes; nothing is mocked."""

from __future__ import annotations

import datetime
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid

import pytest

from xrt2pjrt.shim import settings
from xrt2pjrt.shim.store.protocol import KeySpace, PortTaken, StoreAborted, StoreAuthenticationError, StoreError
from xrt2pjrt.shim.store.server import StoreServer, listen

from store_serving import ROOT, SECRET, client, server  # noqa: F401 -- server: a fixture


def _engine_client(port: int):
    """A client of the store's engine that knows its protocol but not the job's secret."""
    import torch.distributed as dist

    return dist.TCPStore("127.0.0.1", port, is_master=False, use_libuv=True, timeout=datetime.timedelta(seconds=5))


def test_a_stranger_can_neither_read_write_nor_forge(server):
    """A stranger who knows the key names but not the secret, then one who also learnt the
    job's namespace from the wire: a forged arrival never becomes a value."""
    job = client(server.port)
    job.set("xrt2pjrt/rendezvous/all/0/1", b"the job's payload")
    stranger = client(server.port, secret=b"guessed-" + uuid.uuid4().hex.encode())
    for call in (
        lambda: stranger.set("xrt2pjrt/rendezvous/all/0/1", b"forged"),
        lambda: stranger.get("xrt2pjrt/rendezvous/all/0/1"),
    ):
        with pytest.raises(StoreAuthenticationError, match="does not hold this job's secret"):
            call()
    engine = _engine_client(server.port)
    engine.set("xrt2pjrt/rendezvous/all/0/1", b"forged")  # a name of its own, not the job's key
    assert job.get("xrt2pjrt/rendezvous/all/0/1") == b"the job's payload"
    name = KeySpace(SECRET).name(b"xrt2pjrt/rendezvous/all/0/2")
    ((_, sealed_by_another),) = KeySpace(b"another job's secret").seal(name, b"forged")
    for forged in (b"forged", sealed_by_another):
        engine.set(name[1:].decode(), forged)  # the engine's client puts the "/" back
        with pytest.raises(StoreAuthenticationError, match="does not carry this job's secret"):
            job.get("xrt2pjrt/rendezvous/all/0/2")
    assert job.get("xrt2pjrt/rendezvous/all/0/1") == b"the job's payload"


def test_the_store_binds_exactly_the_address_it_is_given(server):
    """On one host the store listens on loopback alone, not on every address (TCPStore binds
    every interface unless handed a socket)."""
    assert client(server.port).num_keys() == 0
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.2", server.port), timeout=5)


def test_a_second_job_on_a_taken_port_fails_at_once_naming_it(server):
    started = time.monotonic()
    with pytest.raises(PortTaken, match=f"port {server.port} on 127.0.0.1 is taken"):
        listen("127.0.0.1", server.port)
    # and its clients, which found the first job's store there, are turned away at once
    with pytest.raises(StoreAuthenticationError, match="another job's store on the same port"):
        client(server.port, secret=uuid.uuid4().hex.encode()).set("k", b"v")
    assert time.monotonic() - started < 2


def test_values_of_20_mib_pass_and_larger_than_the_limit_are_refused_naming_it(server, monkeypatch):
    """20 MiB is over TCPStore's 8 MiB, which resets the connection: it goes in chunks."""
    payload = os.urandom(20 << 20)
    job = client(server.port, timeout=60)
    job.set("big", payload)
    assert job.get("big") == payload and job.multi_get(["big", "big"]) == [payload, payload]
    assert job.delete_key("big") and job.num_keys() == 0  # its chunks with it
    monkeypatch.setenv(settings.STORE_MAX_BYTES.name, str(1 << 20))
    with pytest.raises(
        StoreError,
        match=r"2097152 bytes is over the store's limit of 1048576 bytes "
        r"\(1 MiB; XRT2PJRT_STORE_MAX_BYTES sets it\)",
    ):
        job.set("bigger", os.urandom(2 << 20))
    small = StoreServer(listen("127.0.0.1", 0), SECRET, max_bytes=1 << 20)
    monkeypatch.delenv(settings.STORE_MAX_BYTES.name)  # the client allows more than that server does
    refused = client(small.port)
    for _ in range(3):  # the server's limit, from its hello
        with pytest.raises(StoreError, match="over the store's limit of 1048576 bytes"):
            refused.set("bigger", os.urandom(2 << 20))
    refused.set("small", b"fits")  # and the connection stays in step
    assert refused.get("small") == b"fits"
    small.close()


def test_an_abort_ends_every_wait_at_once_with_its_message(server):
    outcomes = []

    def waiter():
        try:
            client(server.port, timeout=60).wait(["never"])
        except StoreAborted as error:
            outcomes.append(str(error))

    waiters = [threading.Thread(target=waiter) for _ in range(3)]
    [w.start() for w in waiters]
    time.sleep(0.3)
    started = time.monotonic()
    client(server.port).abort("replica 5 raised ValueError: bad batch")
    [w.join(10) for w in waiters]
    assert outcomes == ["replica 5 raised ValueError: bad batch"] * 3
    assert time.monotonic() - started < 2
    with pytest.raises(StoreAborted):  # later waits too
        client(server.port).get("never")


SERVE_WITH_FEW_FILES = textwrap.dedent("""
    import resource, sys
    from xrt2pjrt.shim.store.server import StoreServer, listen
    soft, hard = int(sys.argv[1]), int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard if hard > 0 else resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    server = StoreServer(listen("127.0.0.1", 0), sys.argv[3].encode())
    print(server.port, flush=True)
    sys.stdin.read()
""")


@pytest.mark.slow
@pytest.mark.parametrize("hard", ["unchanged", "the same"])
def test_more_processes_than_the_soft_open_file_limit_all_get_in(hard):
    """A store whose process may open 48 files, met by 80 processes at once. With a higher
    hard limit it raises its own (Linux's usual soft limit of 1,024 is below a pod of 1,024
    processes); at the hard limit, the engine drops the connections beyond it and their
    processes try again until others close."""
    served = subprocess.Popen(
        [sys.executable, "-c", SERVE_WITH_FEW_FILES, "48", "48" if hard == "the same" else "0", SECRET.decode()],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": ROOT},
    )
    try:
        port = int(served.stdout.readline())
        holding = hard == "unchanged"  # every connection stays open until all got in
        everyone_in = threading.Barrier(80, timeout=60) if holding else None
        outcomes = []

        def process(number: int) -> None:
            job = client(port, timeout=30)
            try:
                job.set(f"process {number}", b"in")
                if everyone_in:
                    everyone_in.wait()
                else:
                    time.sleep(0.5)  # long enough for the others to fill the store's files
                outcomes.append("in")
            except (StoreError, threading.BrokenBarrierError) as error:
                outcomes.append(f"{type(error).__name__}: {error}")
            finally:
                job.close()

        threads = [threading.Thread(target=process, args=(n,)) for n in range(80)]
        [t.start() for t in threads]
        [t.join(90) for t in threads]
        assert outcomes == ["in"] * 80, sorted(set(outcomes))
        assert client(port).num_keys() == 80
    finally:
        served.stdin.close()
        served.wait(10)


def test_importing_the_store_imports_neither_torch_nor_yaml():
    code = (
        "import sys; import xrt2pjrt.shim.store.client, xrt2pjrt.shim.store.helper; "
        "print('torch' in sys.modules, 'yaml' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT}
    )
    assert done.stdout.split() == ["False", "False"]
