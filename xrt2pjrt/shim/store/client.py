"""A client of the job's store, with TCPStore's calls, and the store as a ``torch.distributed.Store``.

It speaks TCPStore's wire protocol itself (standard library only; ``protocol``), so that
every call is bounded by its timeout, connecting included: a client retries while nobody
listens (the store's host may start later), and gives up at the deadline. A wait ends at
once when the job aborts: each process keeps one connection per store waiting on the
abort key (:class:`_AbortWatch`), and every wait of the process watches that one, so an
abort costs the store one answer per process and waiting costs it nothing.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import select
import socket
import struct
import threading
import time
import weakref
from collections.abc import Sequence

from xrt2pjrt.shim import settings
from xrt2pjrt.shim.store.protocol import (
    CHUNKS_PER_READ,
    HELLO_GRACE_SECONDS,
    RETRY_SECONDS,
    KeySpace,
    StoreAborted,
    StoreAuthenticationError,
    StoreError,
    StoreTimeout,
    StoreUnavailable,
    Wire,
    max_value_bytes,
    over_limit,
)
from xrt2pjrt.shim.store.secret import job_secret

_HELLO_MAX_BYTES = 4096  # more is not an xrt2pjrt store's hello
_FOREVER = 10.0 * 365 * 86400  # seconds: how long the abort watch waits


def _seconds(timeout) -> float:
    return timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)


class _WaitEnded(Exception):
    """A wait ended before its keys were set (its connection is then out of step)."""


class _Link:
    """One connection to the store during one call: requests, answers, the call's deadline."""

    def __init__(self, sock: socket.socket, deadline: float):
        self.sock, self.deadline = sock, deadline
        self._unread = bytearray()  # answers arrive together: one recv for several

    def send(self, request: bytes) -> None:
        self.sock.settimeout(max(0.001, self.deadline - time.monotonic()))
        self.sock.sendall(request)

    def read(self, count: int) -> bytes:
        while len(self._unread) < count:
            self.sock.settimeout(max(0.001, self.deadline - time.monotonic()))
            chunk = self.sock.recv(max(1 << 16, min(count - len(self._unread), 1 << 24)))
            if not chunk:
                raise ConnectionResetError("the store closed the connection")
            self._unread += chunk
        data = bytes(self._unread[:count])
        del self._unread[:count]
        return data

    def number(self) -> int:
        return struct.unpack("<q", self.read(8))[0]

    def vector(self, limit: int | None = None) -> bytes:
        (size,) = struct.unpack("<Q", self.read(8))
        if limit is not None and size > limit:
            raise _NotAStore(f"an answer of {size} bytes")
        return self.read(size)

    def values(self, names: Sequence[bytes]) -> list[bytes]:
        """What the store holds under ``names`` (b"" where nothing), without waiting."""
        self.send(Wire.keys(Wire.MULTI_GET, names))
        return [self.vector() for _ in names]

    def wait(self, names: Sequence[bytes], watch: _AbortWatch | None) -> None:
        """Until every key of ``names`` is set, the deadline passes or the job aborts."""
        if watch is not None and watch.message is not None:
            raise _WaitEnded(watch.message)
        self.send(Wire.keys(Wire.WAIT, names))
        poller = select.poll()
        poller.register(self.sock, select.POLLIN)
        if watch is not None:
            poller.register(watch.fd, select.POLLIN)
        while not self._unread:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise _WaitEnded(None)
            ready = {fd for fd, _ in poller.poll(remaining * 1000)}
            if self.sock.fileno() in ready:
                break
            if watch is not None and watch.fd in ready:
                raise _WaitEnded(watch.message)
        if self.read(1)[0] != Wire.STOP_WAITING:
            raise _NotAStore("an answer out of step")


class _NotAStore(Exception):
    """The other end does not answer as a TCPStore does."""


class StoreClient:
    """One connection to the store, made on first use; calls are serialised.

    The method names and meanings are TCPStore's (set, get, add, check, wait, multi_get,
    delete_key, num_keys, set_timeout), so the rendezvous and the CPU mode's supervisor use
    either. Each call gives up after the timeout, connecting included.
    """

    def __init__(self, host: str, port: int, secret: bytes, *, timeout: float = 300.0):
        self.host, self.port = host, port
        self._secret = secret
        self._space = KeySpace(secret)
        self.timeout = _seconds(timeout)
        self._sock: socket.socket | None = None
        self._pid = 0
        self._server_limit = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"StoreClient({self.host}:{self.port})"

    def clone(self) -> StoreClient:
        return StoreClient(self.host, self.port, self._secret, timeout=self.timeout)

    def set_timeout(self, timeout) -> None:
        self.timeout = _seconds(timeout)

    def close(self) -> None:
        with self._lock:
            self._drop()
        _AbortWatch.release(self)

    # TCPStore's calls
    def set(self, key: str, value) -> None:
        value = _bytes(value)
        with self._call() as link:
            self._check_size(len(value))
            for name, stored in self._space.seal(self._space.name(_bytes(key)), value):
                link.send(Wire.one_key(Wire.SET, name, stored))

    def get(self, key: str) -> bytes:
        return self.multi_get([key])[0]

    def multi_get(self, keys: Sequence[str]) -> list[bytes]:
        """The values of ``keys``, once all of them are set."""
        if not keys:
            return []
        names = [self._space.name(_bytes(k)) for k in keys]
        with self._call() as link:
            while True:
                link.wait(names, self._watch())
                stored = link.values(names)
                if all(stored):  # else one was deleted between the wait and the read: wait again
                    break
            return [self._open(link, name, value) for name, value in zip(names, stored)]

    def add(self, key: str, delta: int) -> int:
        with self._call() as link:
            link.send(Wire.add(self._space.name(_bytes(key)), int(delta)))
            return link.number()

    def check(self, keys: Sequence[str]) -> bool:
        with self._call() as link:
            link.send(Wire.keys(Wire.CHECK, [self._space.name(_bytes(k)) for k in keys]))
            return link.read(1)[0] == Wire.READY

    def wait(self, keys: Sequence[str], timeout=None) -> None:
        with self._call(None if timeout is None else _seconds(timeout)) as link:
            link.wait([self._space.name(_bytes(k)) for k in keys], self._watch())

    def delete_key(self, key: str) -> bool:
        return self.delete_keys([key]) == 1

    def delete_keys(self, keys: Sequence[str]) -> int:
        """Delete ``keys`` (and the chunks of those stored in chunks); the number that were there."""
        if not keys:
            return 0
        names = [self._space.name(_bytes(k)) for k in keys]
        with self._call() as link:
            chunks = [
                chunk
                for name, stored in zip(names, link.values(names))
                for chunk in self._space.chunk_names(name, stored)
            ]
            link.send(b"".join(Wire.one_key(Wire.DELETE_KEY, name) for name in [*names, *chunks]))
            return sum([link.number() for _ in range(len(names) + len(chunks))][: len(names)])

    def num_keys(self) -> int:
        """The keys the job set (a value stored in chunks counts each); not the store's own."""
        with self._call() as link:
            link.send(
                bytes([Wire.GETNUMKEYS])
                + b"".join(Wire.keys(Wire.CHECK, [name]) for name in (self._space.abort, self._space.done))
            )
            total = link.number()
            return total - 1 - sum(link.read(1)[0] == Wire.READY for _ in range(2))  # 1: the hello

    # the job's fate
    def abort(self, message: str) -> None:
        """End every wait of the job with ``message`` (the first abort's message stays)."""
        ((name, stored),) = self._space.seal(self._space.abort, message.encode("utf-8", "replace")[:65536])
        with self._call() as link:
            link.send(Wire.one_key(Wire.COMPARE_SET, name, b"", stored))
            link.vector()

    def say_done(self) -> None:
        with self._call() as link:
            link.send(Wire.add(self._space.done, 1))
            link.number()

    # the connection
    @contextlib.contextmanager
    def _call(self, timeout: float | None = None):
        """This client's connection for one call, bounded by ``timeout`` (else the client's)."""
        seconds = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + seconds
        where = f"{self.host}:{self.port}"
        with self._lock:
            sock = self._connected(deadline, seconds)
            try:
                yield _Link(sock, deadline)
            except _WaitEnded as ended:
                self._drop()  # its wait is still registered with the store: the connection is out of step
                if ended.args[0] is not None:
                    raise StoreAborted(ended.args[0]) from None
                raise StoreTimeout(f"waited {seconds:g}s at the store at {where}") from None
            except (OSError, struct.error, _NotAStore) as error:
                self._drop()
                if isinstance(error, TimeoutError):
                    raise StoreTimeout(f"the store at {where} did not answer within {seconds:g}s") from None
                raise StoreUnavailable(
                    f"the store at {where} went away during a call (its process ended or its host died): {error}"
                ) from None
            except BaseException:
                self._drop()
                raise

    def _check_size(self, size: int) -> None:
        limit = min(max_value_bytes(), self._server_limit)
        if size > limit:
            raise over_limit(size, limit)

    def _open(self, link: _Link, name: bytes, stored: bytes) -> bytes:
        chunk_names = self._space.chunk_names(name, stored)
        chunks = []
        for at in range(0, len(chunk_names), CHUNKS_PER_READ):
            chunks += link.values(chunk_names[at : at + CHUNKS_PER_READ])
        return self._space.open(name, stored, chunks)

    def _watch(self) -> _AbortWatch:
        return _AbortWatch.of(self)

    def _drop(self) -> None:
        if self._sock is not None and self._pid == os.getpid():
            self._sock.close()
        self._sock = None

    def _connected(self, deadline: float, seconds: float) -> socket.socket:
        if self._sock is not None and self._pid != os.getpid():
            self._sock = None  # inherited through fork: the parent's connection, not ours
        if self._sock is None:
            self._sock, self._server_limit = self._connect(deadline, seconds)
            self._pid = os.getpid()
        return self._sock

    def _connect(self, deadline: float, seconds: float) -> tuple[socket.socket, int]:
        """Connect (retrying while nobody listens or lets in: the store's host may start
        later, or be out of open files) and find the job's hello; the server's value limit."""
        where = f"{self.host}:{self.port}"
        while True:
            try:
                sock = socket.create_connection(
                    (self.host, self.port), timeout=max(0.05, min(5.0, deadline - time.monotonic()))
                )
            except OSError as error:
                if time.monotonic() + RETRY_SECONDS >= deadline:
                    raise StoreUnavailable(
                        f"no store answered at {where} within {seconds:g}s ({error.strerror or error})"
                    ) from None
                time.sleep(RETRY_SECONDS)
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                return sock, self._hello(_Link(sock, deadline), where)
            except ConnectionError:  # let in and dropped: a store out of open files does that
                sock.close()
                if time.monotonic() + RETRY_SECONDS >= deadline:
                    raise StoreUnavailable(f"the store at {where} kept closing the connection") from None
                time.sleep(RETRY_SECONDS)
            except TimeoutError:
                sock.close()
                raise StoreTimeout(f"the program at {where} did not answer within {seconds:g}s") from None
            except _NotAStore as error:
                sock.close()
                raise StoreAuthenticationError(
                    f"the program at {where} is not an xrt2pjrt store ({error}): another program uses the port; "
                    f"choose another with {settings.RENDEZVOUS_PORT.name}"
                ) from None
            except BaseException:
                sock.close()
                raise

    def _hello(self, link: _Link, where: str) -> int:
        """The server's value limit, from the hello its store wrote under the job's namespace."""
        hello = self._space.hello
        link.send(Wire.validate() + Wire.one_key(Wire.GET, hello))
        stored = link.vector(_HELLO_MAX_BYTES)
        if not stored:  # a store that has just started may not have written it yet
            link.deadline, deadline = min(link.deadline, time.monotonic() + HELLO_GRACE_SECONDS), link.deadline
            try:
                link.wait([hello], None)
            except _WaitEnded:
                raise StoreAuthenticationError(
                    f"the store at {where} does not hold this job's secret: it is another job's store on the "
                    f"same port. Give each job its own port ({settings.RENDEZVOUS_PORT.name}) and its own "
                    "secret"
                ) from None
            link.deadline = deadline
            stored = link.values([hello])[0]
        return int(self._space.open(hello, stored).decode())

    def _await_abort(self) -> str:
        """Block until the job's abort is posted; its message. For :class:`_AbortWatch`."""
        with self._call(_FOREVER) as link:
            link.send(Wire.keys(Wire.WAIT, [self._space.abort]))
            link.read(1)
            return self._space.open(self._space.abort, link.values([self._space.abort])[0]).decode("utf-8", "replace")


class _AbortWatch:
    """One connection per process and store that waits on the job's abort key; a pipe
    every wait of the process watches, which becomes readable when the abort is posted.
    It closes once every client that waited has closed (a store's helper ends when no
    connection is left); the next wait starts another."""

    _watches: dict[tuple, _AbortWatch] = {}
    _pid = 0
    _lock = threading.Lock()

    def __init__(self, client: StoreClient, key: tuple):
        self.message: str | None = None
        self.fd, self._signal = os.pipe()
        self._client, self._key = client, key
        self._users: weakref.WeakSet = weakref.WeakSet()
        threading.Thread(target=self._run, name="xrt2pjrt-store-abort-watch", daemon=True).start()

    @classmethod
    def of(cls, client: StoreClient) -> _AbortWatch:
        key = (client.host, client.port, client._space.abort)
        with cls._lock:
            if cls._pid != os.getpid():  # forked: the parent's watches are not ours
                cls._watches, cls._pid = {}, os.getpid()
            if key not in cls._watches:
                cls._watches[key] = cls(client.clone(), key)
            watch = cls._watches[key]
            watch._users.add(client)
            return watch

    @classmethod
    def release(cls, client: StoreClient) -> None:
        """``client`` closed: close the watch it used if no other client uses it."""
        with cls._lock:
            watch = cls._watches.get((client.host, client.port, client._space.abort))
            if cls._pid != os.getpid() or watch is None:
                return
            watch._users.discard(client)
            if not watch._users:
                del cls._watches[watch._key]
                with contextlib.suppress(OSError, AttributeError):  # not connected yet, or closed already
                    watch._client._sock.shutdown(socket.SHUT_RDWR)

    def _run(self) -> None:
        try:
            self.message = self._client._await_abort()
            os.write(self._signal, b"!")
        except (StoreError, OSError, ValueError):  # the store went away: the next wait watches anew
            with self._lock:
                if self._watches.get(self._key) is self:
                    del self._watches[self._key]


def for_this_job(host: str, port: int, *, timeout: float) -> StoreClient:
    """A client of the store at host:port for the job whose secret the environment holds."""
    secret = job_secret()
    if secret is None:
        raise StoreError(f"no job secret: set {settings.JOB_SECRET.name}")
    return StoreClient(host, port, secret, timeout=timeout)


def _bytes(value) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


_C10D_STORES: list = []  # the C++ side holds these but does not keep their Python half alive


def c10d_store(client: StoreClient):
    """``client`` as a ``torch.distributed.Store`` (for gloo's process groups and PrefixStore)."""
    import torch.distributed as dist

    class _Store(dist.Store):
        def __init__(self):
            super().__init__()

        def set(self, key, value):
            client.set(key, value)

        def get(self, key):
            return client.get(key)

        def add(self, key, value):
            return client.add(key, value)

        def check(self, keys):
            return client.check(keys)

        def wait(self, keys, timeout=None):
            client.wait(keys, timeout)

        def delete_key(self, key):
            return client.delete_key(key)

        def num_keys(self):
            return client.num_keys()

    adapted = _Store()
    _C10D_STORES.append(adapted)
    return adapted
