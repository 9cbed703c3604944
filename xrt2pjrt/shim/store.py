"""The key-value store every rendezvous of the shim meets in: authenticated, standard library only.

Why not torch.distributed's TCPStore, which the shim used before: it accepts any
connection (a stranger's forged arrival came back from a rendezvous as a payload), lets a
second job on the same port read and write the first job's keys, resets the connection on
values over 8 MiB, overran a 30 s timeout to 126 s with its reconnect back-off, and its C++
client warns on every call once the server is gone. This store:

* authenticates both ends of every connection with the job's secret (HMAC-SHA256 over fresh
  nonces from each side; the secret never travels), so a process without it can neither
  read nor write a key, and a client never talks to another job's store;
* binds exactly the address it is given (loopback when every replica is local) and fails
  at once, naming the port, when the port is taken;
* waits on the server side, so a client's timeout is a deadline for the whole call,
  connecting included;
* takes values up to ``XRT2PJRT_STORE_MAX_BYTES`` (default 1 GiB) and names that limit when a
  value is larger;
* carries the job's fate: ``abort(message)`` ends every wait at once with that message, and
  each process says ``done`` as it exits, so a store started by :func:`start_helper` (a
  small process of its own) stays up until the job's last process has finished with it.

Payloads travel unencrypted, like gloo's and XLA's own traffic between hosts.
"""

from __future__ import annotations

import datetime
import errno
import hashlib
import hmac
import os
import resource
import secrets
import select
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

from xrt2pjrt.shim import settings

MIN_SECRET_CHARS = 16

_MAGIC = b"xrt2pjrt-store/1"
_NONCE_BYTES = 32
_MAC_BYTES = 32
_HANDSHAKE_SECONDS = 10.0
_RETRY_SECONDS = 0.1
_REPLY_SLACK_SECONDS = 2.0  # a server that waits until a deadline answers just after it

_OK, _TIMEOUT, _ABORTED, _ERROR = 0, 1, 2, 3
_HEADER = struct.Struct(">BI")  # op or status, field count
_LENGTH = struct.Struct(">Q")


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


# --- the job's secret ------------------------------------------------------------------
def job_secret(env=None) -> bytes | None:
    """The secret from ``XRT2PJRT_JOB_SECRET`` or the file ``XRT2PJRT_JOB_SECRET_FILE``
    names (which only its owner may read); None when neither is set."""
    text = settings.JOB_SECRET.text(env)
    where = settings.JOB_SECRET.name
    path = settings.JOB_SECRET_FILE.text(env)
    if not text and path:
        where = f"{settings.JOB_SECRET_FILE.name}={path}"
        text = _read_private_file(path).strip()
    if not text:
        return None
    if len(text) < MIN_SECRET_CHARS:
        raise StoreError(f"{where}: the job secret has {len(text)} characters; use at least "
                         f"{MIN_SECRET_CHARS} random ones (python -c 'import secrets; print(secrets.token_hex(16))')")
    return text.encode()


def _read_private_file(path: str) -> str:
    where = f"{settings.JOB_SECRET_FILE.name}={path}"
    try:
        info = os.stat(path)
        if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise StoreError(f"{where}: the file is mode {stat.S_IMODE(info.st_mode):04o}; "
                             "others could read the job secret: chmod 600 it")
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as error:
        raise StoreError(f"{where}: cannot read the job secret: {error.strerror}") from None


def new_secret() -> str:
    return secrets.token_hex(32)


def _mac(secret: bytes, role: bytes, *parts: bytes) -> bytes:
    return hmac.new(secret, role + b"".join(parts), hashlib.sha256).digest()


def max_value_bytes() -> int:
    """The largest value the store takes: ``XRT2PJRT_STORE_MAX_BYTES``, else 1 GiB."""
    try:
        return settings.STORE_MAX_BYTES.read()
    except settings.SettingError as error:
        raise StoreError(str(error)) from None


# --- framing -----------------------------------------------------------------------------
def _send(sock: socket.socket, code: int, fields: Sequence[bytes]) -> None:
    parts = [_HEADER.pack(code, len(fields))]
    for field in fields:
        parts += [_LENGTH.pack(len(field)), field]
    sock.sendall(b"".join(parts))


def _read_exactly(sock: socket.socket, count: int) -> bytes:
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


def _receive(sock: socket.socket, limit: int) -> tuple[int, list[bytes]]:
    """One frame. A field over ``limit`` is read and dropped, and the whole frame with it
    (:class:`_TooLarge`): the connection stays in step, so the sender, still sending,
    gets the answer that says why rather than a reset connection."""
    code, count = _HEADER.unpack(_read_exactly(sock, _HEADER.size))
    fields, too_large = [], 0
    for _ in range(count):
        (length,) = _LENGTH.unpack(_read_exactly(sock, _LENGTH.size))
        if length > limit:
            _discard(sock, length)
            too_large = too_large or length
        else:
            fields.append(_read_exactly(sock, length))
    if too_large:
        raise _TooLarge(too_large)
    return code, fields


class _TooLarge(Exception):
    def __init__(self, length: int):
        super().__init__(length)
        self.length = length


def describe_limit(limit: int) -> str:
    return f"{limit} bytes ({limit / (1 << 20):g} MiB; {settings.STORE_MAX_BYTES.name} sets it)"


# --- listening -----------------------------------------------------------------------------
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


# --- the server ------------------------------------------------------------------------------
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
                # (ending this loop here stopped the store for every later process).
                if not out_of_files:
                    print(f"xrt2pjrt store on port {self.port}: out of open files at {self.connections} "
                          f"connections ({error.strerror}; the limit is {_open_file_limit()}): later "
                          "processes wait until one closes; raise it with ulimit -n",
                          file=self._log or sys.stderr, flush=True)
                out_of_files = True
                time.sleep(_RETRY_SECONDS)
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
                    op, fields = _receive(conn, self.max_bytes + 4096)
                except _TooLarge as error:
                    _send(conn, _ERROR, [f"a value of {error.length} bytes is over the store's limit of "
                                         f"{describe_limit(self.max_bytes)}".encode()])
                    continue
                _send(conn, *self._handle(op, fields, token))
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
        conn.settimeout(_HANDSHAKE_SECONDS)
        try:
            hello = _read_exactly(conn, len(_MAGIC) + _NONCE_BYTES + 1)
        except OSError:
            hello = b""
        if not hello.startswith(_MAGIC):
            self._refused(peer, "it does not speak this store's protocol")
            return None
        client_nonce = hello[len(_MAGIC):-1]
        server_nonce = secrets.token_bytes(_NONCE_BYTES)
        try:
            token = _read_exactly(conn, hello[-1])
            conn.sendall(_MAGIC + server_nonce + _mac(self._secret, b"server", client_nonce, server_nonce))
            proof = _read_exactly(conn, _MAC_BYTES)
        except OSError:  # a client of another job leaves here: this store could not prove its secret
            self._refused(peer, "it left without proving it holds this job's secret")
            return None
        if not hmac.compare_digest(proof, _mac(self._secret, b"client", server_nonce, client_nonce, token)):
            self._refused(peer, "it does not hold this job's secret")
            _send(conn, _ERROR, [b"refused: this process does not hold the job's secret"])
            return None
        _send(conn, _OK, [])
        with self._lock:
            self.joined.add(token)
        self.changed.set()
        return token

    def _refused(self, peer, why: str) -> None:
        print(f"xrt2pjrt store on port {self.port}: refused a connection from {peer[0]}:{peer[1]}: {why}",
              file=self._log or sys.stderr, flush=True)

    def _handle(self, op: int, fields: list[bytes], token: bytes) -> tuple[int, list[bytes]]:
        try:
            return _OK, self._run(chr(op), fields, token)
        except _Timeout:
            return _TIMEOUT, []
        except _Aborted:
            return _ABORTED, [self.aborted.encode()]
        except (ValueError, IndexError, KeyError) as error:
            return _ERROR, [f"bad request {chr(op)!r}: {error}".encode()]

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


# --- the client --------------------------------------------------------------------------------
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
                _send(sock, ord(op), fields)
                status, answer = _receive(sock, limit + 4096)
            except (OSError, struct.error, _TooLarge) as error:
                self._drop()
                if isinstance(error, socket.timeout):
                    raise StoreTimeout(f"the store at {self.host}:{self.port} did not answer within "
                                       f"{seconds:g}s") from None
                raise StoreUnavailable(f"the store at {self.host}:{self.port} went away during a call "
                                       f"(its process ended or its host died): {error}") from None
        if status == _OK:
            return answer
        if status == _TIMEOUT:
            raise StoreTimeout(f"waited {seconds:g}s at the store at {self.host}:{self.port}")
        if status == _ABORTED:
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
                if time.monotonic() + _RETRY_SECONDS >= deadline:
                    raise StoreUnavailable(f"no store answered at {self.host}:{self.port} within {seconds:g}s "
                                           f"({error.strerror or error})") from None
                time.sleep(_RETRY_SECONDS)
        try:
            sock.settimeout(max(0.05, min(_HANDSHAKE_SECONDS, deadline - time.monotonic())))
            self._handshake(sock)
        except BaseException:
            sock.close()
            raise
        return sock

    def _handshake(self, sock: socket.socket) -> None:
        where = f"{self.host}:{self.port}"
        client_nonce = secrets.token_bytes(_NONCE_BYTES)
        token = process_token()
        try:
            sock.sendall(_MAGIC + client_nonce + bytes([len(token)]) + token)
            reply = _read_exactly(sock, len(_MAGIC) + _NONCE_BYTES + _MAC_BYTES)
        except OSError as error:
            raise StoreUnavailable(f"the program at {where} did not answer as an xrt2pjrt store ({error})") from None
        if not reply.startswith(_MAGIC):
            raise StoreAuthenticationError(f"the program at {where} is not an xrt2pjrt store: another program "
                                           f"uses the port; choose another with {settings.RENDEZVOUS_PORT.name}")
        server_nonce = reply[len(_MAGIC):len(_MAGIC) + _NONCE_BYTES]
        if not hmac.compare_digest(reply[-_MAC_BYTES:], _mac(self._secret, b"server", client_nonce, server_nonce)):
            raise StoreAuthenticationError(
                f"the store at {where} does not hold this job's secret: it is another job's store on the "
                f"same port. Give each job its own port ({settings.RENDEZVOUS_PORT.name}) and its own secret")
        sock.sendall(_mac(self._secret, b"client", server_nonce, client_nonce, token))
        status, answer = _receive(sock, 4096)
        if status != _OK:
            raise StoreAuthenticationError(f"the store at {where} refused this process: "
                                           f"{answer[0].decode('utf-8', 'replace') if answer else 'no reason'}")


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


# --- a store in a process of its own -----------------------------------------------------------
class Helper:
    """The handle a process keeps on the store it started with :func:`start_helper`."""

    def __init__(self, process: subprocess.Popen, host: str, port: int):
        self.process = process
        self.host, self.port = host, port

    def finish(self, *, last: bool = False) -> None:
        """This process is done; the store stays until the job's other processes are.
        ``last``: no process of the job can still come (they were all this one's children,
        and have ended), so the store ends as soon as no connection is open."""
        self._tell("finish last" if last else "finish")

    def abort(self, message: str) -> None:
        self._tell("abort " + message.replace("\n", "\\n"))

    def _tell(self, line: str) -> None:
        try:
            self.process.stdin.write((line + "\n").encode("utf-8", "replace"))
            self.process.stdin.flush()
        except (OSError, ValueError):
            pass  # the helper has ended already


def start_helper(host: str, port: int, secret: bytes, *, expected: int, linger: float) -> Helper:
    """Serve the store at ``host:port`` from a new process and return once it listens.

    The helper ends when ``expected`` processes have said done; or, once this process
    finished or ended, when no connection has been open for ``linger`` seconds (processes
    that never came); or at once when no connection is open and the job aborted, or this
    process ended without finishing, or finished as the job's last. It ignores SIGHUP, so a closed ssh session on the
    store's host does not take the store from the other hosts. Raises :class:`PortTaken`
    when the port is in use.
    """
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code = f"import sys; sys.path.insert(0, {package_root!r}); from xrt2pjrt.shim.store import _helper_main; _helper_main()"
    process = subprocess.Popen(
        [sys.executable, "-I", "-c", code, host, str(port), str(expected), str(linger), str(max_value_bytes())],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True,
    )
    process.stdin.write(secret + b"\n")  # never on a command line: others can read those
    process.stdin.flush()
    ready, _, _ = select.select([process.stdout], [], [], 60)
    line = process.stdout.readline().decode("utf-8", "replace").strip() if ready else ""
    process.stdout.close()
    word, _, rest = line.partition(" ")
    if word == "listening":
        return Helper(process, host, int(rest))
    process.kill()
    process.wait()
    if word == "taken":
        raise PortTaken(rest)
    raise StoreError(f"the store for {host}:{port} did not start: {rest or 'no answer within 60 s'}")


def _helper_main() -> None:
    host, port, expected, linger, max_bytes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
        float(sys.argv[4]), int(sys.argv[5])
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    signal.signal(signal.SIGINT, lambda *_: os._exit(0))
    secret = sys.stdin.buffer.readline().rstrip(b"\n")
    try:
        server = StoreServer(listen(host, port), secret, max_bytes=max_bytes)
    except PortTaken as error:
        print("taken", error, flush=True)
        return
    except StoreError as error:
        print("error", error, flush=True)
        return
    print("listening", server.port, flush=True)
    sys.stdout.close()
    _watch(server, host, expected, linger)
    sys.stderr.flush()
    os._exit(0)  # not a normal exit: the reader thread holds stdin, and interpreter shutdown would wait on it


def _watch(server: StoreServer, host: str, expected: int, linger: float) -> None:
    """Return when the store should end (see :func:`start_helper`)."""
    creator = {"finished": False, "gone": False, "last": False}

    def read_creator():
        for raw in sys.stdin.buffer:
            word, _, rest = raw.decode("utf-8", "replace").rstrip("\n").partition(" ")
            if word == "finish":
                creator["finished"] = True
                creator["last"] = rest == "last"
            elif word == "abort":
                server.abort(rest.replace("\\n", "\n"))
        creator["gone"] = True
        server.changed.set()

    threading.Thread(target=read_creator, daemon=True).start()
    idle_since = None
    while True:
        server.changed.wait(0.2)
        server.changed.clear()
        if len(server.done) >= expected:
            return
        quiet = server.connections == 0
        if quiet and (server.aborted is not None or creator["last"] or (creator["gone"] and not creator["finished"])):
            return
        if quiet and (creator["finished"] or creator["gone"]):
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since >= linger:
                print(f"xrt2pjrt store on {host}:{server.port}: {len(server.done)} of {expected} processes said "
                      f"done; ending after {linger:g}s with no connection", file=sys.stderr, flush=True)
                return
        else:
            idle_since = None
