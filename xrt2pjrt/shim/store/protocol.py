"""What the store's two ends say to each other, and the errors a caller sees.

A connection starts with a handshake in which each end proves it holds the job's secret
without sending it: the client sends the magic, a fresh nonce and its process token; the
server answers with the magic, a nonce of its own and HMAC-SHA256(secret, "server" +
client nonce + server nonce); the client answers with HMAC(secret, "client" + server
nonce + client nonce + token), and the server says OK or why it refuses. Then each
request is one frame (an operation byte and its fields) and each answer one frame (a
status and its fields). A field is at most the store's value limit (:func:`max_value_bytes`).
"""

from __future__ import annotations

import hashlib
import hmac
import socket
import struct
from collections.abc import Sequence

from xrt2pjrt.shim import settings

MAGIC = b"xrt2pjrt-store/1"
NONCE_BYTES = 32
MAC_BYTES = 32
HANDSHAKE_SECONDS = 10.0
RETRY_SECONDS = 0.1

OK, TIMEOUT, ABORTED, ERROR = 0, 1, 2, 3  # an answer's status
_HEADER = struct.Struct(">BI")  # op or status, field count
_LENGTH = struct.Struct(">Q")
FRAME_SLACK = 4096  # what a frame may carry beyond its largest value (its key, a deadline)


class StoreError(RuntimeError):
    """The store could not do what was asked."""


class StoreUnavailable(StoreError):
    """No store answered at the address, or it went away during a call."""


class StoreAuthenticationError(StoreError):
    """The other end does not hold this job's secret."""


class StoreTimeout(StoreError):
    """A wait reached its deadline."""


class StoreAborted(StoreError):
    """Some process of the job posted an abort; the message says why."""


class PortTaken(StoreError):
    """The store's port is already in use on this host."""


def max_value_bytes() -> int:
    """The largest value the store takes: ``XRT2PJRT_STORE_MAX_BYTES``, else 1 GiB."""
    try:
        return settings.STORE_MAX_BYTES.read()
    except settings.SettingError as error:
        raise StoreError(str(error)) from None


def describe_limit(limit: int) -> str:
    return f"{limit} bytes ({limit / (1 << 20):g} MiB; {settings.STORE_MAX_BYTES.name} sets it)"


def mac(secret: bytes, role: bytes, *parts: bytes) -> bytes:
    return hmac.new(secret, role + b"".join(parts), hashlib.sha256).digest()


def send(sock: socket.socket, code: int, fields: Sequence[bytes]) -> None:
    parts = [_HEADER.pack(code, len(fields))]
    for field in fields:
        parts += [_LENGTH.pack(len(field)), field]
    sock.sendall(b"".join(parts))


def read_exactly(sock: socket.socket, count: int) -> bytes:
    chunks, left = [], count
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionResetError("the other end closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _discard(sock: socket.socket, count: int) -> None:
    while count:
        chunk = sock.recv(min(count, 1 << 20))
        if not chunk:
            raise ConnectionResetError("the other end closed the connection")
        count -= len(chunk)


class TooLarge(Exception):
    """A frame held a field over the limit; it was read and dropped."""

    def __init__(self, length: int):
        super().__init__(length)
        self.length = length


def receive(sock: socket.socket, limit: int) -> tuple[int, list[bytes]]:
    """One frame. A field over ``limit`` is read and dropped, and the whole frame with it
    (:class:`TooLarge`): the connection stays in step, so the sender, still sending,
    gets the answer that says why rather than a reset connection."""
    code, count = _HEADER.unpack(read_exactly(sock, _HEADER.size))
    fields, too_large = [], 0
    for _ in range(count):
        (length,) = _LENGTH.unpack(read_exactly(sock, _LENGTH.size))
        if length > limit:
            _discard(sock, length)
            too_large = too_large or length
        else:
            fields.append(read_exactly(sock, length))
    if too_large:
        raise TooLarge(too_large)
    return code, fields
