"""xrt2pjrt.shim.store.client: TCPStore's calls against a real server, and how long a call may take.
Real sockets; nothing is mocked."""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from xrt2pjrt.shim.store.protocol import StoreError

from store_serving import client, server  # noqa: F401 -- server: a fixture


def test_the_job_reads_writes_waits_and_counts(server):
    job = client(server.port)
    job.set("a", b"1")
    assert job.get("a") == b"1" and job.check(["a"]) and not job.check(["a", "b"])
    assert job.add("n", 2) == 2 and job.add("n", 3) == 5 and job.num_keys() == 2
    threading.Timer(0.3, lambda: client(server.port).set("late", b"here")).start()
    job.wait(["late"], 5)  # a waiter wakes when another connection sets the key
    assert job.get("late") == b"here"
    assert job.delete_key("a") and not job.delete_key("a")


@pytest.mark.slow
@pytest.mark.parametrize("timeout", [1.0, 3.0])
def test_a_call_never_outlasts_its_timeout(server, timeout):
    """Seen with TCPStore: 126.8 s on a 30 s timeout, 238.5 s on 60 s."""
    silent = socket.socket()  # accepts connections (the kernel does) and never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    nobody = socket.socket()
    nobody.bind(("127.0.0.1", 0))
    dead_port = nobody.getsockname()[1]
    nobody.close()  # nothing listens there
    cases = {
        "a key nobody sets": lambda: client(server.port, timeout=timeout).wait(["never"]),
        "a get of a key nobody sets": lambda: client(server.port, timeout=timeout).get("never"),
        "no store at the address": lambda: client(dead_port, timeout=timeout).get("k"),
        "a program that never answers": lambda: client(silent.getsockname()[1], timeout=timeout).get("k"),
    }
    for what, call in cases.items():
        started = time.monotonic()
        with pytest.raises(StoreError):
            call()
        elapsed = time.monotonic() - started
        assert timeout - 0.3 <= elapsed <= timeout + 1.0, (what, elapsed)  # slack for a loaded machine
    silent.close()


def test_a_fork_does_not_share_the_parents_connection(server):
    job = client(server.port)
    job.set("before", b"fork")
    pid = os.fork()
    if pid == 0:  # the child's first call makes a connection of its own
        os._exit(0 if job.get("before") == b"fork" and job.add("forked", 1) == 1 else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert job.get("before") == b"fork" and job.add("forked", 1) == 2
