"""xrt2pjrt.shim.store: who gets in, how long a call takes, how big a value may be, when a
helper-served store ends. Real sockets and real processes; nothing is mocked."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid

import pytest

from xrt2pjrt.shim import settings, store

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECRET = uuid.uuid4().hex.encode()


@pytest.fixture
def server():
    served = store.StoreServer(store.listen("127.0.0.1", 0), SECRET)
    yield served
    served.close()


def client(port: int, secret: bytes = SECRET, timeout: float = 5) -> store.StoreClient:
    return store.StoreClient("127.0.0.1", port, secret, timeout=timeout)


def test_the_job_reads_writes_waits_and_counts(server):
    job = client(server.port)
    job.set("a", b"1")
    assert job.get("a") == b"1" and job.check(["a"]) and not job.check(["a", "b"])
    assert job.add("n", 2) == 2 and job.add("n", 3) == 5 and job.num_keys() == 2
    threading.Timer(0.3, lambda: client(server.port).set("late", b"here")).start()
    job.wait(["late"], 5)  # a waiter wakes when another connection sets the key
    assert job.get("late") == b"here"
    assert job.delete_key("a") and not job.delete_key("a")


def test_a_stranger_can_neither_read_nor_write_and_is_named_on_the_servers_side(server, capfd):
    """A stranger who knows the key names but not the secret: a forged arrival never
    becomes a value, and both ends say so."""
    client(server.port).set("xrt2pjrt/rendezvous/all/0/1", b"the job's payload")
    stranger = client(server.port, secret=b"guessed-" + uuid.uuid4().hex.encode())
    for call in (lambda: stranger.set("xrt2pjrt/rendezvous/all/0/1", b"forged"),
                 lambda: stranger.get("xrt2pjrt/rendezvous/all/0/1")):
        with pytest.raises(store.StoreAuthenticationError, match="does not hold this job's secret"):
            call()
    # one that skips the server's proof and just answers: refused, and the server says so
    raw = socket.create_connection(("127.0.0.1", server.port))
    raw.sendall(b"xrt2pjrt-store/1" + os.urandom(32) + b"\x00")
    raw.recv(80)
    raw.sendall(os.urandom(32))
    assert b"refused" in raw.recv(200)
    raw.close()
    garbage = socket.create_connection(("127.0.0.1", server.port))
    garbage.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + b"x" * 40)
    try:
        assert garbage.recv(10) == b""  # dropped without an answer
    except ConnectionResetError:
        pass  # or reset: the server closed with the rest unread
    garbage.close()
    assert client(server.port).get("xrt2pjrt/rendezvous/all/0/1") == b"the job's payload"
    time.sleep(0.2)
    logged = capfd.readouterr().err
    assert "refused a connection from 127.0.0.1" in logged and "does not hold this job's secret" in logged
    assert "does not speak this store's protocol" in logged


def test_a_second_job_on_a_taken_port_fails_at_once_naming_it(server):
    started = time.monotonic()
    with pytest.raises(store.PortTaken, match=f"port {server.port} on 127.0.0.1 is taken"):
        store.listen("127.0.0.1", server.port)
    # and its clients, which found the first job's store there, are turned away at once
    with pytest.raises(store.StoreAuthenticationError, match="another job's store on the same port"):
        client(server.port, secret=uuid.uuid4().hex.encode()).set("k", b"v")
    assert time.monotonic() - started < 2


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
        with pytest.raises(store.StoreError):
            call()
        elapsed = time.monotonic() - started
        assert timeout - 0.3 <= elapsed <= timeout + 1.0, (what, elapsed)  # slack for a loaded machine
    silent.close()


def test_values_of_20_mib_pass_and_larger_than_the_limit_are_refused_naming_it(server, monkeypatch):
    payload = os.urandom(20 << 20)
    job = client(server.port, timeout=60)
    job.set("big", payload)
    assert job.get("big") == payload
    monkeypatch.setenv(settings.STORE_MAX_BYTES.name, str(1 << 20))
    with pytest.raises(store.StoreError, match=r"2097152 bytes is over the store's limit of 1048576 bytes "
                                               r"\(1 MiB; XRT2PJRT_STORE_MAX_BYTES sets it\)"):
        job.set("bigger", os.urandom(2 << 20))
    small = store.StoreServer(store.listen("127.0.0.1", 0), SECRET, max_bytes=1 << 20)
    monkeypatch.delenv(settings.STORE_MAX_BYTES.name)  # the client allows more than that server does
    refused = client(small.port)
    for _ in range(10):  # the server reads what it refuses: the answer arrives, never a reset connection
        with pytest.raises(store.StoreError, match="over the store's limit of 1048576 bytes"):
            refused.set("bigger", os.urandom(2 << 20))
    refused.set("small", b"fits")  # and the connection stays in step
    assert refused.get("small") == b"fits" and small.connections == 1
    small.close()


def test_an_abort_ends_every_wait_at_once_with_its_message(server):
    outcomes = []

    def waiter():
        try:
            client(server.port, timeout=60).wait(["never"])
        except store.StoreAborted as error:
            outcomes.append(str(error))

    waiters = [threading.Thread(target=waiter) for _ in range(3)]
    [w.start() for w in waiters]
    time.sleep(0.3)
    started = time.monotonic()
    client(server.port).abort("replica 5 raised ValueError: bad batch")
    [w.join(10) for w in waiters]
    assert outcomes == ["replica 5 raised ValueError: bad batch"] * 3
    assert time.monotonic() - started < 2
    with pytest.raises(store.StoreAborted):  # later waits too
        client(server.port).get("never")


def test_a_fork_does_not_share_the_parents_connection(server):
    job = client(server.port)
    job.set("before", b"fork")
    pid = os.fork()
    if pid == 0:  # the child's first call makes a connection of its own
        os._exit(0 if job.get("before") == b"fork" and job.add("forked", 1) == 1 else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert job.get("before") == b"fork" and job.add("forked", 1) == 2


# --- the job's secret ------------------------------------------------------------------------
def test_the_secret_comes_from_the_environment_or_a_private_file(tmp_path):
    assert store.job_secret({}) is None
    assert store.job_secret({settings.JOB_SECRET.name: "x" * 16}) == b"x" * 16
    with pytest.raises(store.StoreError, match="has 5 characters; use at least 16"):
        store.job_secret({settings.JOB_SECRET.name: "short"})
    path = tmp_path / "secret"
    path.write_text("s" * 32 + "\n")
    path.chmod(0o644)
    with pytest.raises(store.StoreError, match="mode 0644; others could read the job secret: chmod 600"):
        store.job_secret({settings.JOB_SECRET_FILE.name: str(path)})
    path.chmod(0o600)
    assert store.job_secret({settings.JOB_SECRET_FILE.name: str(path)}) == b"s" * 32
    with pytest.raises(store.StoreError, match="cannot read the job secret"):
        store.job_secret({settings.JOB_SECRET_FILE.name: str(tmp_path / "missing")})


# --- a store in a helper process ---------------------------------------------------------------
HELPED = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, sys.argv[1])
    from xrt2pjrt.shim import store
    secret, expected, how = sys.argv[2].encode(), int(sys.argv[3]), sys.argv[4]
    helper = store.start_helper("127.0.0.1", 0, secret, expected=expected, linger=30)
    print(helper.port, helper.process.pid, flush=True)
    mine = store.StoreClient("127.0.0.1", helper.port, secret)
    mine.set("from the creator", b"hello")
    mine.wait(["peer connected"])
    if how == "finish":
        mine.say_done()  # as its exit hook does
        helper.finish()
    else:
        os._exit(1)  # killed: neither done nor finish
""")


def _creator(expected: int, how: str) -> tuple[store.StoreClient, int]:
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
        helper = store.start_helper("127.0.0.1", 0, SECRET, expected=1, linger=30)
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
    with pytest.raises(store.PortTaken, match=f"port {server.port} on 127.0.0.1 is taken"):
        store.start_helper("127.0.0.1", server.port, SECRET, expected=2, linger=30)
    assert time.monotonic() - started < 10


SERVE_WITH_FEW_FILES = textwrap.dedent("""
    import resource, sys
    from xrt2pjrt.shim import store
    soft, hard = int(sys.argv[1]), int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard if hard > 0 else resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    server = store.StoreServer(store.listen("127.0.0.1", 0), sys.argv[3].encode())
    print(server.port, flush=True)
    sys.stdin.read()
""")


@pytest.mark.parametrize("hard", ["unchanged", "the same"])
def test_more_processes_than_the_soft_open_file_limit_all_get_in(hard):
    """A store whose process may open 48 files, met by 80 processes at once. With a higher
    hard limit it raises its own (Linux's usual soft limit of 1,024 is below a pod of 1,024
    processes); at the hard limit, the processes beyond it wait until others close. Before,
    the first connection over the limit ended the store's accept loop: every later process
    of the job was shut out ('did not answer as an xrt2pjrt store')."""
    served = subprocess.Popen([sys.executable, "-c", SERVE_WITH_FEW_FILES, "48", "48" if hard == "the same" else "0",
                               SECRET.decode()], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": ROOT})
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
            except (store.StoreError, threading.BrokenBarrierError) as error:
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
    if hard == "the same":
        assert "out of open files" in served.stderr.read()


def test_importing_the_store_imports_neither_torch_nor_yaml():
    code = "import sys; import xrt2pjrt.shim.store; print('torch' in sys.modules, 'yaml' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT})
    assert done.stdout.split() == ["False", "False"]
