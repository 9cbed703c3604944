"""What the store's two ends say to each other, and the errors a caller sees.

The server is torch's ``TCPStore`` with its libuv engine; the client speaks its wire
protocol (:class:`Wire`): a request is a query byte, then keys and values, each a
little-endian 64-bit length and its bytes; nothing travels that TCPStore does not carry.

The job's secret makes the store the job's own (:class:`KeySpace`):

* every key lives under a namespace derived from the secret (an HMAC of it), so a process
  without the secret cannot name, and so neither read nor overwrite, any of the job's keys;
* every value is sealed: an HMAC-SHA256 over its key and its bytes, checked on every read,
  so a value the job did not write (a stranger who learnt the namespace from the wire) is
  refused as :class:`StoreAuthenticationError`, never returned;
* the server writes a sealed hello (its value limit) under the namespace when it starts; a
  client whose secret names another namespace finds none and is refused at once;
* a value over :data:`CHUNK_BYTES` (TCPStore resets the connection on values over 8 MiB) is
  stored as chunks under keys of their own and a sealed header under its key, written last.

Counters (``add``) are bare numbers, as TCPStore keeps them: they order a rendezvous, they
never carry a payload, and ``get`` refuses them (read a counter with ``add(key, 0)``).
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from collections.abc import Iterator, Sequence

from xrt2pjrt.shim import settings

MAC_BYTES = 32
RETRY_SECONDS = 0.1
HELLO_GRACE_SECONDS = 1.0  # a store that has just started writes its hello within this
CHUNK_BYTES = 4 << 20  # TCPStore's libuv engine drops a connection on a value over 8 MiB
CHUNKS_PER_READ = 16  # chunks fetched in one request: 64 MiB in flight at most


class StoreError(RuntimeError):
    """The store could not do what was asked."""


class StoreUnavailable(StoreError):
    """No store answered at the address, or it went away during a call."""


class StoreAuthenticationError(StoreError):
    """The other end, or a value, does not carry this job's secret."""


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


def over_limit(size: int, limit: int) -> StoreError:
    return StoreError(f"a value of {size} bytes is over the store's limit of {describe_limit(limit)}")


class Wire:
    """TCPStore's requests (torch/csrc/distributed/c10d/TCPStoreBackend.hpp: QueryType)."""

    VALIDATE, SET, COMPARE_SET, GET, ADD, CHECK, WAIT, GETNUMKEYS, DELETE_KEY = range(9)
    MULTI_GET = 10
    MAGIC = 0x3C85F7CE  # validationMagicNumber: a connection's first request
    READY = 0  # CheckResponseType
    STOP_WAITING = 0  # WaitResponseType

    @staticmethod
    def field(data: bytes) -> bytes:
        return struct.pack("<Q", len(data)) + data

    @classmethod
    def keys(cls, query: int, names: Sequence[bytes]) -> bytes:
        return bytes([query]) + struct.pack("<Q", len(names)) + b"".join(map(cls.field, names))

    @classmethod
    def validate(cls) -> bytes:
        return bytes([cls.VALIDATE]) + struct.pack("<I", cls.MAGIC)

    @classmethod
    def one_key(cls, query: int, name: bytes, *values: bytes) -> bytes:
        return bytes([query]) + cls.field(name) + b"".join(map(cls.field, values))

    @classmethod
    def add(cls, name: bytes, delta: int) -> bytes:
        return bytes([cls.ADD]) + cls.field(name) + struct.pack("<q", delta)


class KeySpace:
    """The job's keys and values as the store holds them (see the module docstring).

    Every name starts with "/", which TCPStore's own client puts before the key it is
    given: the server's engine reads and writes the same names through that client.
    """

    def __init__(self, secret: bytes):
        self._secret = secret
        root = b"/xrt2pjrt/" + hmac.new(secret, b"namespace", hashlib.sha256).hexdigest()[:32].encode()
        self._keys, self._chunks = root + b"/k/", root + b"/c/"
        self.hello, self.abort, self.done = (root + b"/s/" + name for name in (b"hello", b"abort", b"done"))

    def name(self, key: bytes) -> bytes:
        return self._keys + key

    def chunk(self, name: bytes, index: int) -> bytes:
        return self._chunks + name + b"/%d" % index

    def _mac(self, name: bytes, parts: Sequence[bytes]) -> bytes:
        digest = hmac.new(self._secret, struct.pack("<Q", len(name)) + name, hashlib.sha256)
        for part in parts:
            digest.update(part)
        return digest.digest()

    def seal(self, name: bytes, value: bytes) -> Iterator[tuple[bytes, bytes]]:
        """The (key, stored value) pairs that hold ``value`` under ``name``, its own last."""
        if len(value) <= CHUNK_BYTES:
            yield name, self._mac(name, [value]) + b"V" + value
            return
        chunks = [memoryview(value)[at : at + CHUNK_BYTES] for at in range(0, len(value), CHUNK_BYTES)]
        for index, chunk in enumerate(chunks):
            yield self.chunk(name, index), bytes(chunk)
        yield name, self._mac(name, [value]) + b"C" + struct.pack("<QI", len(value), len(chunks))

    def chunk_names(self, name: bytes, stored: bytes) -> list[bytes]:
        """The chunk keys a stored value's header names (none for a value stored whole)."""
        if stored[MAC_BYTES : MAC_BYTES + 1] != b"C" or len(stored) != MAC_BYTES + 13:
            return []
        _, count = struct.unpack("<QI", stored[MAC_BYTES + 1 :])
        return [self.chunk(name, index) for index in range(count)]

    def open(self, name: bytes, stored: bytes, chunks: Sequence[bytes] = ()) -> bytes:
        """The value ``stored`` (and its ``chunks``) hold, once its seal is the job's."""
        kind = stored[MAC_BYTES : MAC_BYTES + 1]
        value = stored[MAC_BYTES + 1 :] if kind == b"V" else b"".join(chunks)
        if kind == b"C" and len(value) != struct.unpack("<Q", stored[MAC_BYTES + 1 : MAC_BYTES + 9])[0]:
            kind = b""
        if kind not in (b"V", b"C") or not hmac.compare_digest(stored[:MAC_BYTES], self._mac(name, [value])):
            raise StoreAuthenticationError(
                f"the value of {name[len(self._keys) :].decode('utf-8', 'replace')!r} does not carry this job's "
                "secret: a process outside the job wrote it (or it is a counter: read those with add(key, 0))"
            )
        return value
