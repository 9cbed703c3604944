"""The store's server: torch's ``TCPStore`` with its libuv engine, on a socket bound here.

One thread, an event loop (C++), serves every connection: a barrier of 1,024 processes
costs it about as much as it costs a bare TCPStore. :func:`listen` binds exactly the
address it is given (loopback when every replica is local) and fails at once, naming the
port, when the port is taken: a second job on the same port never shares the first one's
store. The engine takes that socket as it is (``master_listen_fd``). What makes the store
the job's own (a namespace and sealed values, from the secret) lives in ``protocol``; the
server writes the hello by which the job's clients know it.
"""

from __future__ import annotations

import datetime
import errno
import os
import resource
import socket

from xrt2pjrt.shim import settings
from xrt2pjrt.shim.store.protocol import KeySpace, PortTaken, StoreError, max_value_bytes


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port`` (port 0: one the OS picks), for :class:`StoreServer`.

    ``host`` is bound as given: 127.0.0.1 when every replica is on this machine, the
    host's own address on a pod. An address this machine does not have (a name that
    resolves elsewhere, behind NAT) is refused, naming it: the store never listens on every
    interface in its stead.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT only; never two listeners
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        if error.errno == errno.EADDRINUSE:
            raise PortTaken(
                f"port {port} on {host} is taken (another job's store, or another program): "
                f"give this job its own port with {settings.RENDEZVOUS_PORT.name}, the same "
                "on every host"
            ) from None
        if error.errno == errno.EADDRNOTAVAIL:
            raise StoreError(
                f"cannot listen on {host}:{port}: {host} is no address of this machine; give the store "
                f"one of its own with {settings.RENDEZVOUS_ADDR.name} (host:port)"
            ) from None
        raise StoreError(f"cannot listen on {host}:{port}: {error}") from None
    sock.listen(1024)
    return sock


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
    """Serves the job's store on a listening socket (from :func:`listen`) while it lives.

    Imports torch (the engine is TCPStore's); the client does not.
    """

    def __init__(self, listening: socket.socket, secret: bytes, *, max_bytes: int | None = None):
        import torch.distributed as dist

        host, self.port = listening.getsockname()[:2]
        self.max_bytes = max_value_bytes() if max_bytes is None else max_bytes
        self.max_held = max(HELD_VALUES * self.max_bytes, HELD_FLOOR)
        self._space = KeySpace(secret)
        _raise_open_file_limit()
        own = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)  # where this process reaches it
        # The engine owns the socket from here on (it closes it): detached, Python never does.
        self._store = dist.TCPStore(
            own,
            self.port,
            is_master=True,
            wait_for_workers=False,
            use_libuv=True,
            master_listen_fd=listening.detach(),
            timeout=datetime.timedelta(seconds=30),
        )
        self._put(self._space.hello, str(self.max_bytes).encode())
        self._own_sockets = _open_sockets()
        self._own_memory = _resident_bytes()

    @property
    def held(self) -> int:
        """The memory the store took since it started (Linux; 0 elsewhere): its keys and
        values, the job's and any stranger's (who can write names of its own, though never
        the job's), and their connections' buffers."""
        return max(0, _resident_bytes() - self._own_memory)

    @property
    def keys(self) -> int:
        """How many keys the store holds: a number that moves while the job works."""
        return self._store.num_keys()

    @property
    def connections(self) -> int:
        """How many connections the job's processes hold open now."""
        return max(0, _open_sockets() - self._own_sockets)

    @property
    def aborted(self) -> str | None:
        """The job's abort message, once one was posted."""
        name = self._space.abort
        if not self._store.check([_engine_key(name)]):
            return None
        return self._space.open(name, self._store.get(_engine_key(name))).decode("utf-8", "replace")

    def done(self) -> int:
        """How many of the job's processes said done."""
        return self._store.add(_engine_key(self._space.done), 0)

    def abort(self, message: str) -> None:
        """End every wait of the job with ``message`` (unless an abort was posted before)."""
        ((name, stored),) = self._space.seal(self._space.abort, message.encode("utf-8", "replace")[:65536])
        self._store.compare_set(_engine_key(name), "", stored)

    def close(self) -> None:
        self._store = None  # the engine stops and closes its connections

    def _put(self, name: bytes, value: bytes) -> None:
        ((name, stored),) = self._space.seal(name, value)
        self._store.set(_engine_key(name), stored)


def _engine_key(name: bytes) -> str:
    """``name`` as TCPStore's own client takes it: it puts the leading "/" back itself."""
    return name[1:].decode()


# The memory a store may take for what it holds, in values of the largest size it takes:
# the job's rendezvous need a few such at once; more is someone filling it (a stranger's
# names are not the job's, but they take the host's memory all the same). Never less than
# HELD_FLOOR bytes: the engine's own buffers grow with the connections.
HELD_VALUES = 4
HELD_FLOOR = 64 << 20


def _resident_bytes() -> int:
    """This process's resident memory (Linux: /proc/self/statm); 0 where it cannot be read."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _open_sockets() -> int:
    """The sockets this process has open (Linux): the engine's connections and its own."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            pass  # closed meanwhile
    return count
