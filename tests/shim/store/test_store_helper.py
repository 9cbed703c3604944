"""xrt2pjrt.shim.store.helper: when a store served by a process of its own ends. Real processes."""

from __future__ import annotations

import datetime
import os
import socket
import struct
import subprocess
import sys
import textwrap
import time

import pytest

from xrt2pjrt.shim.store.client import StoreClient
from xrt2pjrt.shim.store.helper import start_helper
from xrt2pjrt.shim import settings
from xrt2pjrt.shim.store.protocol import PortTaken, StoreAborted, StoreError, Wire
from xrt2pjrt.shim.store.server import listen

from store_serving import ROOT, SECRET, client, server  # noqa: F401 -- server: a fixture


HELPED = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, sys.argv[1])
    from xrt2pjrt.shim.store.client import StoreClient
    from xrt2pjrt.shim.store.helper import start_helper
    secret, expected, how, linger = sys.argv[2].encode(), int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
    helper = start_helper("127.0.0.1", 0, secret, expected=expected, linger=linger)
    print(helper.port, helper.process.pid, flush=True)
    mine = StoreClient("127.0.0.1", helper.port, secret)
    mine.set("from the creator", b"hello")
    mine.wait(["peer connected"])
    if how == "finish":
        mine.say_done()  # as its exit hook does
        helper.finish()
    else:
        os._exit(1)  # killed: neither done nor finish
""")


def _creator(expected: int, how: str, linger: float = 30) -> tuple[StoreClient, int]:
    """A process that starts a helper-served store, sets a key, waits for the peer, then
    finishes or crashes. (The helper writes to the creator's stderr; capturing that would
    wait for the helper.)"""
    creator = subprocess.Popen(
        [sys.executable, "-c", HELPED, ROOT, SECRET.decode(), str(expected), how, str(linger)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    port, pid = map(int, creator.stdout.readline().split())
    peer = client(port, timeout=60)  # a new helper process answers slowly on a loaded machine
    assert peer.get("from the creator") == b"hello"
    peer.set("peer connected", b"")
    assert creator.wait(30) in (0, 1)
    return peer, pid


def _ended(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except (ProcessLookupError, FileNotFoundError):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow
def test_a_helper_outlives_its_creator_until_every_process_said_done():
    """The creator (worker 0's process) finishes first; a peer still reads and writes
    afterwards, then says done, and only then does the store end."""
    peer, pid = _creator(expected=2, how="finish")
    peer.set("after the creator", b"still here")
    assert peer.get("after the creator") == b"still here"
    peer.close()
    assert not _ended(pid, within=1.0)  # no connection, but a process has not said done
    peer.say_done()
    assert _ended(pid, within=5)


@pytest.mark.slow
def test_the_last_process_to_say_done_gets_its_answer_before_the_helper_ends():
    """The last 'done' ends the helper's process: its answer goes out first (it could end
    in between, and the job's last process then failed at exit: 'the store went away')."""
    for _ in range(20):
        helper = start_helper("127.0.0.1", 0, SECRET, expected=1, linger=30)
        client(helper.port, timeout=60).say_done()
        helper.finish()
        assert helper.process.wait(10) == 0


def test_a_helper_whose_creator_crashed_ends_once_nobody_is_connected():
    peer, pid = _creator(expected=4, how="crash")
    assert peer.get("peer connected") == b""
    assert not _ended(pid, within=0.5)  # a connection is open: someone may still need it
    peer.close()
    assert _ended(pid, within=5)


def test_a_helper_on_a_taken_port_fails_at_once_naming_it(server):
    started = time.monotonic()
    with pytest.raises(PortTaken, match=f"port {server.port} on 127.0.0.1 is taken"):
        start_helper("127.0.0.1", server.port, SECRET, expected=2, linger=30)
    assert time.monotonic() - started < 10


# --- strangers at the store's port --------------------------------------------------------


def test_a_strangers_idle_connection_does_not_keep_a_finished_jobs_store():
    """Once its creator finished, an open connection kept the helper (and its port) up for
    good: a stranger's, idle, kept it past the job's wait. Now a connection that does
    nothing for a wait's length keeps nothing."""
    peer, pid = _creator(expected=2, how="finish", linger=2)
    with socket.create_connection(("127.0.0.1", peer.port)):  # connected, and silent
        peer.close()  # the job's peer never says done
        assert not _ended(pid, within=1.0)
        assert _ended(pid, within=10)


@pytest.mark.slow
def test_a_strangers_bad_frames_print_no_stack_into_the_jobs_output(capfd):
    """The engine warned with a C++ stack for each malformed request, on the stderr the
    helper shares with the job."""
    helper = start_helper("127.0.0.1", 0, SECRET, expected=2, linger=30)
    try:
        for frame in (
            Wire.validate() + bytes([Wire.SET]) + struct.pack("<Q", 1 << 62),
            os.urandom(4096),
            bytes([Wire.VALIDATE]) + struct.pack("<I", 1234),
        ):
            with socket.create_connection(("127.0.0.1", helper.port)) as stranger:
                stranger.sendall(frame)
                stranger.settimeout(5)
                try:
                    stranger.recv(1)  # the engine drops the connection
                except OSError:
                    pass
        assert client(helper.port).num_keys() >= 0  # the job's store still answers
    finally:
        helper.process.kill()
        helper.process.wait()
    err = capfd.readouterr().err
    assert "frame #" not in err and "Exception raised from" not in err, err


@pytest.mark.slow
def test_a_store_filled_past_its_bound_aborts_the_job_saying_so(monkeypatch):
    """A stranger cannot name the job's keys, but could write names of its own until the
    host ran out of memory: past the bound (here its floor, 64 MiB), the job is aborted,
    saying why, and the store ends."""
    import torch.distributed as dist

    monkeypatch.setenv(settings.STORE_MAX_BYTES.name, str(1 << 20))
    helper = start_helper("127.0.0.1", 0, SECRET, expected=2, linger=30)
    job = client(helper.port, timeout=60)
    stranger = dist.TCPStore(
        "127.0.0.1", helper.port, is_master=False, use_libuv=True, timeout=datetime.timedelta(seconds=10)
    )
    try:
        for k in range(40):  # 160 MiB
            stranger.set(f"junk/{k}", b"x" * (4 << 20))
    except Exception:  # the store ended on the way: what counts is what the job hears
        pass
    with pytest.raises(StoreAborted, match="someone is filling it"):
        job.wait(["never set"])
    assert helper.process.wait(30) == 0


def test_an_address_this_machine_lacks_is_refused_in_one_line():
    """It fell back to listening on every interface."""
    with pytest.raises(
        StoreError,
        match=r"^cannot listen on 192\.0\.2\.1:0: 192\.0\.2\.1 is no address of this "
        r"machine; give the store one of its own with XRT2PJRT_RENDEZVOUS_ADDR",
    ):
        listen("192.0.2.1", 0)  # TEST-NET-1: documentation only, nobody's
