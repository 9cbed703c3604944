"""A client of the job's store, with TCPStore's calls, and the store as a ``torch.distributed.Store``.

Every call is bounded by its timeout, connecting included: a client retries while nobody
listens (the store's host may start later), and gives up at the deadline.
"""

from __future__ import annotations

import datetime
import hmac
import os
import secrets
import socket
import struct
import threading
import time
from collections.abc import Sequence

from xrt2pjrt.shim import settings
from xrt2pjrt.shim.store.protocol import (ABORTED, FRAME_SLACK, HANDSHAKE_SECONDS, MAC_BYTES, MAGIC, NONCE_BYTES, OK,
                                          RETRY_SECONDS, TIMEOUT, StoreAborted, StoreAuthenticationError, StoreError,
                                          StoreTimeout, StoreUnavailable, TooLarge, describe_limit, mac,
                                          max_value_bytes, read_exactly, receive, send)
from xrt2pjrt.shim.store.secret import job_secret

_REPLY_SLACK_SECONDS = 2.0  # a server that waits until a deadline answers just after it


def _seconds(timeout) -> float:
    return timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)


def process_token() -> bytes:
    return f"{socket.gethostname()}:{os.getpid()}".encode()[:255]


class StoreClient:
    """One connection to the store, made on first use; calls are serialised.

    The method names and meanings are TCPStore's (set, get, add, check, wait, multi_get,
    delete_key, num_keys, set_timeout), so the rendezvous and the CPU mode's supervisor use
    either. Each call gives up after the timeout, connecting included.
    """

    def __init__(self, host: str, port: int, secret: bytes, *, timeout: float = 300.0):
        self.host, self.port = host, port
        self._secret = secret
        self.timeout = _seconds(timeout)
        self._sock: socket.socket | None = None
        self._pid = 0
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

    # TCPStore's calls
    def set(self, key: str, value) -> None:
        self._call("S", [_bytes(key), _bytes(value)])

    def get(self, key: str) -> bytes:
        return self._call("G", [_bytes(key)], waits=True)[0]

    def add(self, key: str, delta: int) -> int:
        return int(self._call("A", [_bytes(key), str(int(delta)).encode()])[0])

    def check(self, keys: Sequence[str]) -> bool:
        return self._call("C", [_bytes(k) for k in keys])[0] == b"1"

    def wait(self, keys: Sequence[str], timeout=None) -> None:
        self._call("W", [_bytes(k) for k in keys], waits=True,
                   timeout=None if timeout is None else _seconds(timeout))

    def multi_get(self, keys: Sequence[str]) -> list[bytes]:
        """The values of ``keys``, once all of them are set (one round trip)."""
        return self._call("G", [_bytes(k) for k in keys], waits=True) if keys else []

    def delete_key(self, key: str) -> bool:
        return self.delete_keys([key]) == 1

    def delete_keys(self, keys: Sequence[str]) -> int:
        """Delete ``keys`` in one round trip; the number that were there."""
        return int(self._call("D", [_bytes(k) for k in keys])[0])

    def num_keys(self) -> int:
        return int(self._call("N", [])[0])

    # the job's fate
    def abort(self, message: str) -> None:
        self._call("X", [message.encode("utf-8", "replace")])

    def say_done(self) -> None:
        self._call("F", [])

    def _call(self, op: str, fields: list[bytes], *, waits: bool = False, timeout: float | None = None):
        seconds = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + seconds
        limit = max_value_bytes()
        for field in fields:
            if len(field) > limit:
                raise StoreError(f"a value of {len(field)} bytes is over the store's limit of {describe_limit(limit)}")
        with self._lock:
            sock = self._connected(deadline, seconds)
            if waits:  # the server waits until the deadline, then answers
                fields = [str(max(0, int((deadline - time.monotonic()) * 1000))).encode(), *fields]
            try:
                sock.settimeout(max(0.0, deadline - time.monotonic()) + _REPLY_SLACK_SECONDS)
                send(sock, ord(op), fields)
                status, answer = receive(sock, limit + FRAME_SLACK)
            except (OSError, struct.error, TooLarge) as error:
                self._drop()
                if isinstance(error, socket.timeout):
                    raise StoreTimeout(f"the store at {self.host}:{self.port} did not answer within "
                                       f"{seconds:g}s") from None
                raise StoreUnavailable(f"the store at {self.host}:{self.port} went away during a call "
                                       f"(its process ended or its host died): {error}") from None
        if status == OK:
            return answer
        if status == TIMEOUT:
            raise StoreTimeout(f"waited {seconds:g}s at the store at {self.host}:{self.port}")
        if status == ABORTED:
            raise StoreAborted(answer[0].decode("utf-8", "replace"))
        raise StoreError(f"the store at {self.host}:{self.port}: {answer[0].decode('utf-8', 'replace')}")

    def _drop(self) -> None:
        if self._sock is not None and self._pid == os.getpid():
            self._sock.close()
        self._sock = None

    def _connected(self, deadline: float, seconds: float) -> socket.socket:
        if self._sock is not None and self._pid != os.getpid():
            self._sock = None  # inherited through fork: the parent's connection, not ours
        if self._sock is None:
            self._sock = self._connect(deadline, seconds)
            self._pid = os.getpid()
        return self._sock

    def _connect(self, deadline: float, seconds: float) -> socket.socket:
        """Connect (retrying while nobody listens: the store's host may start later) and prove
        to each other that both ends hold the job's secret."""
        while True:
            try:
                sock = socket.create_connection((self.host, self.port),
                                                timeout=max(0.05, min(5.0, deadline - time.monotonic())))
                break
            except OSError as error:
                if time.monotonic() + RETRY_SECONDS >= deadline:
                    raise StoreUnavailable(f"no store answered at {self.host}:{self.port} within {seconds:g}s "
                                           f"({error.strerror or error})") from None
                time.sleep(RETRY_SECONDS)
        try:
            sock.settimeout(max(0.05, min(HANDSHAKE_SECONDS, deadline - time.monotonic())))
            self._handshake(sock)
        except BaseException:
            sock.close()
            raise
        return sock

    def _handshake(self, sock: socket.socket) -> None:
        where = f"{self.host}:{self.port}"
        client_nonce = secrets.token_bytes(NONCE_BYTES)
        token = process_token()
        try:
            sock.sendall(MAGIC + client_nonce + bytes([len(token)]) + token)
            reply = read_exactly(sock, len(MAGIC) + NONCE_BYTES + MAC_BYTES)
        except OSError as error:
            raise StoreUnavailable(f"the program at {where} did not answer as an xrt2pjrt store ({error})") from None
        if not reply.startswith(MAGIC):
            raise StoreAuthenticationError(f"the program at {where} is not an xrt2pjrt store: another program "
                                           f"uses the port; choose another with {settings.RENDEZVOUS_PORT.name}")
        server_nonce = reply[len(MAGIC):len(MAGIC) + NONCE_BYTES]
        if not hmac.compare_digest(reply[-MAC_BYTES:], mac(self._secret, b"server", client_nonce, server_nonce)):
            raise StoreAuthenticationError(
                f"the store at {where} does not hold this job's secret: it is another job's store on the "
                f"same port. Give each job its own port ({settings.RENDEZVOUS_PORT.name}) and its own secret")
        sock.sendall(mac(self._secret, b"client", server_nonce, client_nonce, token))
        status, answer = receive(sock, FRAME_SLACK)
        if status != OK:
            raise StoreAuthenticationError(f"the store at {where} refused this process: "
                                           f"{answer[0].decode('utf-8', 'replace') if answer else 'no reason'}")


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
