"""xrt2pjrt.shim.store.helper: when a store served by a process of its own ends. Real processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from xrt2pjrt.shim.store.client import StoreClient
from xrt2pjrt.shim.store.helper import start_helper
from xrt2pjrt.shim.store.protocol import PortTaken

from store_serving import ROOT, SECRET, client, server  # noqa: F401 -- server: a fixture


HELPED = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, sys.argv[1])
    from xrt2pjrt.shim.store.client import StoreClient
    from xrt2pjrt.shim.store.helper import start_helper
    secret, expected, how = sys.argv[2].encode(), int(sys.argv[3]), sys.argv[4]
    helper = start_helper("127.0.0.1", 0, secret, expected=expected, linger=30)
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


def _creator(expected: int, how: str) -> tuple[StoreClient, int]:
    """A process that starts a helper-served store, sets a key, waits for the peer, then
    finishes or crashes. (The helper writes to the creator's stderr; capturing that would
    wait for the helper.)"""
    creator = subprocess.Popen([sys.executable, "-c", HELPED, ROOT, SECRET.decode(), str(expected), how],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
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
