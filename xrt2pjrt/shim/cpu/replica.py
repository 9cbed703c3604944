"""Inside a CPU replica process: run the replica's function, report its outcome, and leave
only when the whole world may.

The supervisor starts each replica with :func:`main`. The replica dies with its parent,
takes its share of the cores, answers torch_xla's own API as one replica of the world
(``world.enter``), runs the function in a thread (as torch_xla runs it on a TPU), waits
until every replica's function has returned, and sends its :class:`Outcome` up its pipe.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import enum
import multiprocessing
import os
import pickle
import signal
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

from xrt2pjrt.shim import settings
from xrt2pjrt.shim.cpu import transport, world
from xrt2pjrt.shim.cpu.placement import Placement, placement

# The job's keys in the store, which the replicas and the supervisors of every host share.
ABORT_KEY = "xrt2pjrt/cpu_replicas/abort"
RETURNED_KEY = "xrt2pjrt/cpu_replicas/returned"  # replicas whose function returned
FINISHED_KEY = "xrt2pjrt/cpu_replicas/finished"  # replicas done with the store, about to exit
ALIVE_KEY = "xrt2pjrt/cpu_replicas/alive"  # /host: each host's supervisor counts up as it polls
POLL_SECONDS = 0.2


class ReplicaState(enum.Enum):
    """How a replica ended, as its supervisor learns it (torch elastic's ``WorkerState``)."""

    SUCCEEDED = "succeeded"  # its function returned (or called sys.exit(0))
    FAILED = "failed"  # it raised, and said so
    DIED = "died"  # it ended without a word: killed, os._exit, or its pipe broke


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What a replica tells its supervisor as it ends (torch elastic's ``RunResult``, for one)."""

    state: ReplicaState
    value: Any = None  # SUCCEEDED: what the function returned (None where pickle refused it)
    traceback: str = ""  # FAILED: the error, as Python prints it
    failed_at: float = 0.0  # FAILED: time.time(); the first failure caused the others


def _wait_for_every_replica(world_size: int) -> None:
    """Leave only once every replica's function has returned, so that no replica closes its
    gloo sockets while a peer still reads from them. With no deadline: on a pod a replica
    that returned waits for nobody, and the master's own work after the last collective
    (a final evaluation, an upload) may take longer than any rendezvous timeout. A replica
    that dies instead ends the run through the supervisor, which ends this one too."""
    where = placement()
    store = transport.current().store
    alive = HostsAlive(store, where.hosts, transport.current().timeout)
    store.add(RETURNED_KEY, 1)
    while int(store.add(RETURNED_KEY, 0)) < world_size and not store.check([ABORT_KEY]):
        if (host := alive.dead()) is not None:
            raise RuntimeError(alive.says(host))
        time.sleep(POLL_SECONDS)


class HostsAlive:
    """Whether every host's supervisor still polls: a host whose launcher ended without a
    word (SIGKILL, the OOM killer, a lost machine) posts no abort, and who waits for its
    replicas with no deadline would wait for ever. A host whose count has not moved for the
    rendezvous timeout is taken for gone (counts, not clocks: hosts' clocks differ)."""

    def __init__(self, store, hosts: int, timeout: float):
        self.store, self.hosts, self.timeout = store, hosts, timeout
        self.seen: dict[int, tuple[int, float]] = {}  # host -> its count, and when it last moved

    def dead(self) -> int | None:
        if self.hosts == 1:
            return None  # one host: its replicas die with its launcher
        now = time.monotonic()
        for host in range(self.hosts):
            count = int(self.store.add(f"{ALIVE_KEY}/{host}", 0))
            if host not in self.seen or self.seen[host][0] != count:
                self.seen[host] = (count, now)
            elif now - self.seen[host][1] > self.timeout:
                return host
        return None

    def says(self, host: int) -> str:
        return (
            f"CPU host {host} stopped answering for {self.timeout:g}s: its launcher ended without a word "
            f"(killed, or its machine lost); set {settings.RENDEZVOUS_TIMEOUT.name} to wait longer"
        )


def main(fn: Callable, args: tuple, where: Placement, report) -> None:
    """Entry point of a replica process; ``report`` is the pipe to its supervisor."""
    _die_with_parent()
    os.environ.update(PJRT_DEVICE="CPU", CPU_NUM_DEVICES="1", **{settings.CPU_REPLICA.name: where.to_env()})
    try:
        _share_the_cores(where.local_world_size)
        world.enter()  # torch_xla's own API now sees the N replicas too
        try:
            result = _in_a_thread(fn, where.ordinal, *args)
        except SystemExit as stop:
            if stop.code not in (0, None):
                raise
            result = None  # sys.exit(0): a replica that finished
        _wait_for_every_replica(where.world_size)
        transport.current().store.add(FINISHED_KEY, 1)  # tell host 0 this replica is done with its store
    except BaseException as error:  # noqa: BLE001 -- reported to the parent, then a non-zero exit
        _send(report, Outcome(ReplicaState.FAILED, traceback=traceback.format_exc(), failed_at=time.time()))
        report.close()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_exit_code(error))
    try:
        _send(report, Outcome(ReplicaState.SUCCEEDED, result))
    except (pickle.PicklingError, TypeError, AttributeError):
        _send(report, Outcome(ReplicaState.SUCCEEDED))
    report.close()


def _in_a_thread(fn: Callable, *args: Any) -> Any:
    """``fn(*args)`` in a thread of its own, as torch_xla's spawn runs the replica's function
    on a TPU (a thread per device, even for one): code that needs the main thread there
    (``signal.signal`` raises ValueError) fails here too, rather than pass in the main thread."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="xrt2pjrt-replica") as pool:
        return pool.submit(fn, *args).result()


def _share_the_cores(local_replicas: int) -> None:
    """torch's CPU threads: this replica's share of the cores unless OMP_NUM_THREADS says
    otherwise, as torchrun does. N replicas each running a thread per core spin in OpenMP's
    waits: on 2 cores, 4 replicas took 70 ms to fold 1 MB (0.1 ms with one thread each)."""
    if os.environ.get("OMP_NUM_THREADS"):
        return
    import torch

    torch.set_num_threads(max(1, (os.cpu_count() or 1) // local_replicas))


def _exit_code(error: BaseException) -> int:
    """sys.exit(n)'s n (an int from 1 to 255); 1 for anything else, as Python exits."""
    if isinstance(error, SystemExit) and isinstance(error.code, int) and 0 < error.code < 256:
        return error.code
    return 1


def _die_with_parent() -> None:
    """Ask Linux to kill this replica when the supervising parent dies, however it dies
    (a killed test runner must not leave replicas blocked in a collective)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return  # not Linux: the parent's own cleanup still ends replicas on failures
    parent = multiprocessing.parent_process()
    if parent is not None and os.getppid() != parent.pid:  # it died before prctl took effect
        os._exit(1)


def _send(report, outcome: Outcome) -> None:
    try:
        report.send(outcome)
    except (BrokenPipeError, OSError):
        pass  # the parent is gone or ending us: nothing left to tell
