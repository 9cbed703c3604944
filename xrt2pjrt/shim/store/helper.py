"""A store served by a small process of its own, which outlives the process that starts it.

A job's store must stay up while any of its processes may still need it, on every host,
although the process that started it (worker 0's spawn parent, a replica) may finish
first or die. So :func:`start_helper` serves it from a new process that watches the job:
each process says ``done`` as it exits, and the helper ends once the job's last one has,
or once nobody is connected after the job failed or its starter ended.

Anyone who can reach the port can connect, though only the job can use its keys: so an
open connection keeps the store up after its starter ended only while the job still does
something with it (a stranger's idle connection does not keep the port for good); what
TCPStore's engine logs of a stranger's malformed requests (a warning with a C++ stack) is
not printed into the job's output; and when what the store holds grows past
``HELD_VALUES`` values of the largest size it takes, the job is aborted, saying so, and the
store ends, before it takes the host's memory.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
import time

from xrt2pjrt.shim.store.protocol import PortTaken, StoreError, max_value_bytes
from xrt2pjrt.shim.store.server import HELD_VALUES, StoreServer, listen


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
    process ended without finishing, or finished as the job's last. It ignores SIGHUP, so a
    closed ssh session on the store's host does not take the store from the other hosts.
    Raises :class:`PortTaken` when the port is in use.
    """
    package_root = os.path.abspath(__file__)
    for _ in __name__.split("."):  # up from this file to the folder that holds the top package
        package_root = os.path.dirname(package_root)
    code = f"import sys; sys.path.insert(0, {package_root!r}); from {__name__} import main; main()"
    process = subprocess.Popen(
        [sys.executable, "-I", "-c", code, host, str(port), str(expected), str(linger), str(max_value_bytes())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        close_fds=True,
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


def main() -> None:
    """The helper process (see :func:`start_helper`): serve, watch, end."""
    host, port, expected, linger, max_bytes = (
        sys.argv[1],
        int(sys.argv[2]),
        int(sys.argv[3]),
        float(sys.argv[4]),
        int(sys.argv[5]),
    )
    # Read by torch's C++ logging as it loads (the engine warns, with its stack, on each
    # malformed request a stranger sends): warnings go nowhere, errors still show.
    os.environ["TORCH_CPP_LOG_LEVEL"] = "ERROR"
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

    threading.Thread(target=read_creator, daemon=True).start()
    idle_since, seen = None, None
    while True:
        time.sleep(_LOOK_SECONDS)
        done = server.done()
        if done >= expected:
            _let_the_last_answers_out(server)
            return
        held = server.held
        if held > server.max_held:
            message = (
                f"the job's store on {host}:{server.port} took {held >> 20} MiB, more than its "
                f"{server.max_held >> 20} MiB ({HELD_VALUES} values of the largest size it takes): "
                "someone is filling it; it ends"
            )
            server.abort(message)
            print(f"xrt2pjrt: {message}", file=sys.stderr, flush=True)
            _let_the_last_answers_out(server)
            return
        ended, aborted = creator["finished"] or creator["gone"], server.aborted is not None
        if not (ended or aborted):
            idle_since = None
            continue
        if creator["last"]:  # its processes, all of the job's, have ended: no connection left is the job's
            _let_the_last_answers_out(server)
            return
        connected = server.connections  # counted late: it costs the most
        if not connected and (aborted or (creator["gone"] and not creator["finished"])):
            return
        # The job's processes still connected move its keys or its done count; a connection
        # that does neither for ``linger`` (a wait's whole length) is none of theirs, or stuck.
        now = (done, server.keys)
        if now != seen:
            idle_since, seen = time.monotonic(), now
        elif time.monotonic() - idle_since >= linger:
            held = f" ({connected} connection{'s' * (connected > 1)} still open)" if connected else ""
            print(
                f"xrt2pjrt store on {host}:{server.port}: {done} of {expected} processes said "
                f"done; ending after {linger:g}s in which the job did nothing{held}",
                file=sys.stderr,
                flush=True,
            )
            return


_LOOK_SECONDS = 0.2  # how often the helper looks at the job's bookkeeping
_LAST_ANSWER_SECONDS = 2.0


def _let_the_last_answers_out(server: StoreServer) -> None:
    """Every process said done; the last one's answer may still be on its way out of the
    engine's loop. Ending now could reset it ('the store went away' at that process's exit):
    wait until the job's processes closed their connections, a moment at most."""
    deadline = time.monotonic() + _LAST_ANSWER_SECONDS
    while server.connections and time.monotonic() < deadline:
        time.sleep(0.02)
