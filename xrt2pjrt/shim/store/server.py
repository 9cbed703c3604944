"""The store's server: an authenticated key-value store with waits on the server side.

One thread per connection (daemons). A connection first proves it holds the job's secret
(``protocol``); then each request is served under one lock, and a request that waits
(``get``, ``wait``) waits here until its keys are set, its deadline passes or the job is
aborted, so a client's timeout is a deadline for the whole call. :func:`listen` binds
exactly the address it is given (loopback when every replica is local) and fails at once,
naming the port, when the port is taken: a second job on the same port never shares the
first one's store.
"""

from __future__ import annotations

import errno
import hmac
import resource
import secrets
import socket
import struct
import sys
import threading
import time
from collections.abc import Sequence

from xrt2pjrt.shim import settings
from xrt2pjrt.shim.store.protocol import (ABORTED, ERROR, FRAME_SLACK, HANDSHAKE_SECONDS, MAC_BYTES, MAGIC,
                                          NONCE_BYTES, OK, RETRY_SECONDS, TIMEOUT, PortTaken, StoreError, TooLarge,
                                          describe_limit, mac, max_value_bytes, read_exactly, receive, send)


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port`` (port 0: one the OS picks), for :class:`StoreServer`.

    ``host`` is bound as given: 127.0.0.1 when every replica is on this machine, the
    host's own address on a pod. An address this machine does not have (a name that
    resolves elsewhere, behind NAT) falls back to every interface: the store still lets
    in only the job's processes.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for address in (host, ""):
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT only; never two listeners
        try:
            sock.bind((address, port))
        except OSError as error:
            sock.close()
            if error.errno == errno.EADDRINUSE:
                raise PortTaken(f"port {port} on {host} is taken (another job's store, or another program): "
                                f"give this job its own port with {settings.RENDEZVOUS_PORT.name}, the same "
                                "on every host") from None
            if address and error.errno == errno.EADDRNOTAVAIL:  # not one of this machine's addresses
                continue
            raise StoreError(f"cannot listen on {host}:{port}: {error}") from None
        sock.listen(1024)
        return sock
    raise AssertionError("unreachable")


def _open_file_limit() -> int:
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def _raise_open_file_limit() -> None:
    """Let a store hold a socket for every process of a pod: the soft limit on open files
    goes up to the hard one (as Go's runtime does for every program). A soft limit of 1,024,
    common on Linux, leaves a store about 1,000 connections, fewer than a pod of 1,024
    processes needs."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            pass  # some systems refuse an unlimited soft limit: the store keeps what it has


class StoreServer:
    """Serves the store on a listening socket with one thread per connection (daemons)."""

    def __init__(self, listening: socket.socket, secret: bytes, *, max_bytes: int | None = None,
                 log=None):
        self._listening = listening
        self._secret = secret
        self.max_bytes = max_value_bytes() if max_bytes is None else max_bytes
        self._log = log
        self._lock = threading.Lock()
        self._data: dict[bytes, bytes] = {}
        self._events: dict[bytes, threading.Event] = {}
        self.aborted: str | None = None
        self.joined: set[bytes] = set()
        self.done: set[bytes] = set()
        self.connections = 0
        self.changed = threading.Event()  # set on every join, done, abort or closed connection
        self._closed = False
        _raise_open_file_limit()
        threading.Thread(target=self._accept, name="xrt2pjrt-store", daemon=True).start()

    @property
    def port(self) -> int:
        return self._listening.getsockname()[1]

    def close(self) -> None:
        self._closed = True
        try:
            self._listening.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listening.close()

    def abort(self, message: str) -> None:
        with self._lock:
            if self.aborted is None:
                self.aborted = message
            events, self._events = self._events, {}
        for event in events.values():
            event.set()
        self.changed.set()

    def _accept(self) -> None:
        out_of_files = False
        while not self._closed:
            try:
                conn, peer = self._listening.accept()
            except OSError as error:
                if error.errno not in (errno.EMFILE, errno.ENFILE) or self._closed:
                    return
                # Out of file descriptors: the connection waits in the backlog until one closes
                # (ending this loop would shut out every later process of the job).
                if not out_of_files:
                    print(f"xrt2pjrt store on port {self.port}: out of open files at {self.connections} "
                          f"connections ({error.strerror}; the limit is {_open_file_limit()}): later "
                          "processes wait until one closes; raise it with ulimit -n",
                          file=self._log or sys.stderr, flush=True)
                out_of_files = True
                time.sleep(RETRY_SECONDS)
                continue
            out_of_files = False
            threading.Thread(target=self._serve, args=(conn, peer), daemon=True).start()

    def _serve(self, conn: socket.socket, peer) -> None:
        with self._lock:
            self.connections += 1
        try:
            token = self._authenticate(conn, peer)
            if token is None:
                return
            conn.settimeout(None)
            while True:
                try:
                    op, fields = receive(conn, self.max_bytes + FRAME_SLACK)
                except TooLarge as error:
                    send(conn, ERROR, [f"a value of {error.length} bytes is over the store's limit of "
                                         f"{describe_limit(self.max_bytes)}".encode()])
                    continue
                send(conn, *self._handle(op, fields, token))
                if op == ord("F"):
                    self._said_done(token)  # once answered: the last one may end the helper's process
        except (OSError, struct.error):
            pass  # the client went away
        finally:
            conn.close()
            with self._lock:
                self.connections -= 1
            self.changed.set()

    def _authenticate(self, conn: socket.socket, peer) -> bytes | None:
        conn.settimeout(HANDSHAKE_SECONDS)
        try:
            hello = read_exactly(conn, len(MAGIC) + NONCE_BYTES + 1)
        except OSError:
            hello = b""
        if not hello.startswith(MAGIC):
            self._refused(peer, "it does not speak this store's protocol")
            return None
        client_nonce = hello[len(MAGIC):-1]
        server_nonce = secrets.token_bytes(NONCE_BYTES)
        try:
            token = read_exactly(conn, hello[-1])
            conn.sendall(MAGIC + server_nonce + mac(self._secret, b"server", client_nonce, server_nonce))
            proof = read_exactly(conn, MAC_BYTES)
        except OSError:  # a client of another job leaves here: this store could not prove its secret
            self._refused(peer, "it left without proving it holds this job's secret")
            return None
        if not hmac.compare_digest(proof, mac(self._secret, b"client", server_nonce, client_nonce, token)):
            self._refused(peer, "it does not hold this job's secret")
            send(conn, ERROR, [b"refused: this process does not hold the job's secret"])
            return None
        send(conn, OK, [])
        with self._lock:
            self.joined.add(token)
        self.changed.set()
        return token

    def _refused(self, peer, why: str) -> None:
        print(f"xrt2pjrt store on port {self.port}: refused a connection from {peer[0]}:{peer[1]}: {why}",
              file=self._log or sys.stderr, flush=True)

    def _handle(self, op: int, fields: list[bytes], token: bytes) -> tuple[int, list[bytes]]:
        try:
            return OK, self._run(chr(op), fields, token)
        except _Timeout:
            return TIMEOUT, []
        except _Aborted:
            return ABORTED, [self.aborted.encode()]
        except (ValueError, IndexError, KeyError) as error:
            return ERROR, [f"bad request {chr(op)!r}: {error}".encode()]

    def _run(self, op: str, fields: list[bytes], token: bytes) -> list[bytes]:
        if op == "S":
            key, value = fields
            with self._lock:
                self._data[key] = value
                event = self._events.pop(key, None)
            if event:
                event.set()
            return []
        if op == "G":  # every key's value, once every key is there
            self._wait(fields[1:], time.monotonic() + int(fields[0]) / 1000)
            with self._lock:
                return [self._data[key] for key in fields[1:]]
        if op == "W":
            self._wait(fields[1:], time.monotonic() + int(fields[0]) / 1000)
            return []
        if op == "C":
            with self._lock:
                return [b"1" if all(key in self._data for key in fields) else b"0"]
        if op == "A":
            key, delta = fields
            with self._lock:
                value = int(self._data.get(key, b"0")) + int(delta)
                self._data[key] = str(value).encode()
                event = self._events.pop(key, None)
            if event:
                event.set()
            return [str(value).encode()]
        if op == "D":
            with self._lock:
                return [str(sum(self._data.pop(key, None) is not None for key in fields)).encode()]
        if op == "N":
            with self._lock:
                return [str(len(self._data)).encode()]
        if op == "X":
            self.abort(fields[0].decode("utf-8", "replace"))
            return []
        if op == "F":
            return []  # counted by _serve once answered: see _said_done
        raise ValueError("unknown operation")

    def _said_done(self, token: bytes) -> None:
        with self._lock:
            self.done.add(token)
        self.changed.set()

    def _wait(self, keys: Sequence[bytes], deadline: float) -> None:
        for key in keys:
            while True:
                with self._lock:
                    if self.aborted is not None:
                        raise _Aborted
                    if key in self._data:
                        break
                    event = self._events.setdefault(key, threading.Event())
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise _Timeout
                event.wait(remaining)


class _Timeout(Exception):
    pass


class _Aborted(Exception):
    pass

