"""Start a host's CPU replicas and join them: the CPU replica mode's parent.

:func:`spawn` serves the job's store (on host 0), starts one process per local replica
(``replica.main``) and joins them. A replica that raises or dies makes the parent end the
others and raise :class:`ReplicaFailed` naming the replica and its exit code; across hosts
the failure is posted to the store, so the other hosts' parents end theirs too, and a host
whose launcher dies without a word is noticed by its silence (``replica.HostsAlive``).
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from xrt2pjrt.shim import settings
from xrt2pjrt.shim.cpu import replica as replica_process
from xrt2pjrt.shim.cpu.launch_guard import lift_launch_guard
from xrt2pjrt.shim.cpu.placement import Hosts, Placement, active, local_address_towards, replica_count, store_address
from xrt2pjrt.shim.cpu.replica import (
    ABORT_KEY,
    ALIVE_KEY,
    FINISHED_KEY,
    POLL_SECONDS,
    HostsAlive,
    Outcome,
    ReplicaState,
)
from xrt2pjrt.shim.store import client as store_client
from xrt2pjrt.shim.store.protocol import StoreAborted
from xrt2pjrt.shim.store.secret import job_secret, new_secret
from xrt2pjrt.shim.store.server import StoreServer, listen

_BEAT_SECONDS = 1.0
_TERMINATE_GRACE_SECONDS = 2.0


class ReplicaFailed(RuntimeError):
    """A replica raised, exited non-zero or was killed; the others were ended."""

    def __init__(self, message: str, ordinal: int, exitcode: int | None):
        super().__init__(message)
        self.ordinal = ordinal
        self.exitcode = exitcode


_spawns = 0  # spawn calls in this process: `xrt2pjrt run` tells a script that never spawned


def spawn_count() -> int:
    return _spawns


def run_multiprocess(fn: Callable, *args, start_method: str = "spawn", **kwargs) -> dict[int, Any]:
    """torch_xla's ``run_multiprocess`` over the CPU replicas: ``{ordinal: fn(*args, **kwargs)}``."""
    return spawn(_WithoutIndex(fn, args, kwargs), start_method=start_method)


@dataclasses.dataclass(frozen=True)
class _WithoutIndex:
    """``fn(*args, **kwargs)`` as a spawn target, which is called with the ordinal first."""

    fn: Callable
    args: tuple
    kwargs: dict

    def __call__(self, index: int) -> Any:
        return self.fn(*self.args, **self.kwargs)


def spawn(fn: Callable, args: tuple = (), nprocs: int | None = None, start_method: str = "spawn") -> dict[int, Any]:
    """Run ``fn(ordinal, *args)`` in ``nprocs`` replica processes on this host; join them.

    Returns ``{ordinal: fn's return value}`` for this host's replicas (None where a value
    could not be pickled). Raises :class:`ReplicaFailed` when any replica, here or on
    another host, fails.
    """
    global _spawns
    if active():
        raise RuntimeError("spawn called inside a CPU replica: nested spawn is not supported")
    lift_launch_guard()  # under `xrt2pjrt run`: the launching process starts its replicas
    if start_method == "fork":
        _refuse_initialised_runtime()
    count = replica_count(nprocs)
    _spawns += 1
    hosts = Hosts.from_env()
    timeout = settings.RENDEZVOUS_TIMEOUT.read()
    if hosts.count == 1:
        # A free port picked by the OS: two runs on one machine never collide. The replicas
        # inherit the job's secret from this process's environment.
        os.environ.setdefault(settings.JOB_SECRET.name, new_secret())
        listening = listen("127.0.0.1", 0)
        store_host, store_port, gloo_addr = "127.0.0.1", listening.getsockname()[1], "127.0.0.1"
    else:
        if job_secret() is None:
            raise RuntimeError(
                f"{hosts.count} CPU hosts meet in a store that lets in only the job's processes: "
                f"set {settings.JOB_SECRET.name} to the same random value on every host "
                "(python -c 'import secrets; print(secrets.token_hex(16))')"
            )
        store_host, store_port = store_address()
        listening = listen(store_host, store_port) if hosts.index == 0 else None
        gloo_addr = settings.CPU_HOST_ADDR.text() or local_address_towards(store_host)

    context = multiprocessing.get_context(start_method)
    replicas = []
    for local in range(count):
        where = Placement(
            ordinal=hosts.index * count + local,
            world_size=hosts.count * count,
            local_ordinal=local,
            local_world_size=count,
            host=hosts.index,
            hosts=hosts.count,
            store_host=store_host,
            store_port=store_port,
            gloo_addr=gloo_addr,
        )
        reader, writer = context.Pipe(duplex=False)
        process = context.Process(
            target=replica_process.main, args=(fn, args, where, writer), name=f"xrt2pjrt-cpu-replica-{where.ordinal}"
        )
        process.start()
        writer.close()
        replicas.append(_Replica(where, process, reader))
    # The store's server and client start threads; forking after that can hand a child a
    # lock held by one of them (the resolver lock, inside a store client's connect). So the
    # store comes up only after the last fork; the replicas retry until it answers.
    try:
        if listening is not None:
            _SERVED.append(StoreServer(listening, job_secret()))  # up while this process runs
        store = store_client.for_this_job(store_host, store_port, timeout=timeout)
    except BaseException:
        _Supervisor(replicas, None, hosts).end_all()
        raise
    return _Supervisor(replicas, store, hosts, timeout).join()


def _refuse_initialised_runtime() -> None:
    torch_xla = sys.modules.get("torch_xla")
    if torch_xla is not None and torch_xla._XLAC._xla_runtime_is_initialized():
        raise RuntimeError(
            "the XLA runtime was initialised in the parent before spawn (something called "
            "xm.xla_device() or moved a tensor to the device at import time); forked CPU "
            "replicas cannot use it: touch the device only inside the spawned function, or "
            "use start_method='spawn'"
        )


@dataclasses.dataclass
class _Replica:
    """A local replica as its supervisor sees it."""

    placement: Placement
    process: multiprocessing.process.BaseProcess
    reader: multiprocessing.connection.Connection
    outcome: Outcome | None = None  # None until the replica's report is read

    def describe(self) -> str:
        where = self.placement
        host = f" on host {where.host}" if where.hosts > 1 else ""
        return f"CPU replica {where.ordinal}{host} (pid {self.process.pid})"


_SERVED: list[StoreServer] = []  # the stores this process serves: referenced, they stay up


class _Supervisor:
    """Joins the local replicas; on the first failure ends them all and raises."""

    def __init__(self, replicas: list[_Replica], store, hosts: Hosts, timeout: float = 0.0):
        self.replicas = replicas
        self.store = store
        self.hosts = hosts
        # the rendezvous timeout: what the others get to end by themselves after a failure,
        # and how long a host may go silent (HostsAlive)
        self.timeout = timeout
        self._beaten = 0.0  # when this host last counted up in the store (HostsAlive)

    def _beat(self) -> None:
        if self.hosts.count == 1 or time.monotonic() - self._beaten < _BEAT_SECONDS:
            return
        self._beaten = time.monotonic()
        try:
            self.store.add(f"{ALIVE_KEY}/{self.hosts.index}", 1)
        except Exception:  # noqa: BLE001 -- host 0's store is gone: its replicas report it
            pass

    def join(self) -> dict[int, Any]:
        try:
            while any(r.process.exitcode is None for r in self.replicas):
                waitables = [r.process.sentinel for r in self.replicas if r.process.exitcode is None]
                waitables += [r.reader for r in self.replicas if r.outcome is None]
                multiprocessing.connection.wait(waitables, timeout=POLL_SECONDS)
                self._beat()
                # another host's failure first: it aborts the store, and the local replicas
                # waiting in it then fail because of it (its key is set before the abort)
                failure = self._remote_failure() or self._local_failure()
                if failure:
                    raise failure
            failure = self._remote_failure() or self._local_failure()
            if failure:
                raise failure
            if self.hosts.count > 1 and self.hosts.index == 0:
                self._wait_for_other_hosts()
            return {r.placement.ordinal: r.outcome.value for r in self.replicas}
        except BaseException as error:
            try:
                if not isinstance(error, ReplicaFailed) or error.ordinal in self._local_ordinals():
                    self._post_abort(str(error))
                if isinstance(error, ReplicaFailed):
                    self._let_the_others_end()
            finally:  # (a Ctrl-C while the others end must not leave them running)
                self.end_all()
            raise
        finally:
            for replica in self.replicas:
                replica.reader.close()

    def _read_reports(self) -> None:
        for replica in self.replicas:
            if replica.outcome is None and replica.reader.poll():
                try:
                    replica.outcome = replica.reader.recv()
                except (EOFError, OSError):
                    replica.outcome = Outcome(ReplicaState.DIED)

    def _local_failure(self) -> ReplicaFailed | None:
        exited = [r for r in self.replicas if r.process.exitcode is not None]
        self._read_reports()  # after looking at exit codes: a replica reports before it exits
        # A replica that died without a report (killed, os._exit) caused whatever errors
        # its peers then reported, so it is named first; else the first reported error.
        for replica in exited:
            code = replica.process.exitcode
            if replica.outcome is None or replica.outcome.state is ReplicaState.DIED:
                if code < 0:
                    how = f"was killed by {signal.Signals(-code).name}"
                else:
                    how = f"exited with code {code}" + (" without a result" if code == 0 else "")
                return ReplicaFailed(f"{replica.describe()} {how}", replica.placement.ordinal, code)
        raised = [r for r in self.replicas if r.outcome is not None and r.outcome.state is ReplicaState.FAILED]
        if not raised:
            return None
        first = min(raised, key=lambda r: r.outcome.failed_at)  # peers' errors follow the first one
        first.process.join(_TERMINATE_GRACE_SECONDS)
        return ReplicaFailed(
            f"{first.describe()} exited with code {first.process.exitcode} after raising:\n{first.outcome.traceback}",
            first.placement.ordinal,
            first.process.exitcode,
        )

    def _remote_failure(self) -> ReplicaFailed | None:
        if self.hosts.count == 1:
            return None
        try:
            if not self.store.check([ABORT_KEY]):
                return None
            message = self.store.get(ABORT_KEY).decode("utf-8", "replace")
        except StoreAborted as aborted:  # the store's abort came first: its message is the same
            message = str(aborted)
        except Exception:  # noqa: BLE001 -- host 0's store is gone: its replicas report it
            return None
        return ReplicaFailed(f"another host failed: {message}", -1, None)

    def _post_abort(self, message: str) -> None:
        """Say in the store that the job failed: every wait in it ends at once (a rendezvous
        with the failed replica), and the other hosts and the replicas' exit wait see it."""
        try:
            self.store.set(ABORT_KEY, message)
            self.store.abort(message)
        except Exception:  # noqa: BLE001 -- best effort: the store may be gone
            pass

    def _let_the_others_end(self) -> None:
        """As torch_xla's spawn on a pod, which waits for every process before it raises:
        a replica that waits on nobody (the master writing its last checkpoint) finishes,
        and one waiting for the failed replica ends by itself (its rendezvous is aborted,
        its collective's peer sockets close), within the rendezvous timeout; end_all then
        ends what is left."""
        deadline = time.monotonic() + self.timeout
        while any(r.process.exitcode is None for r in self.replicas) and time.monotonic() < deadline:
            waitables = [r.process.sentinel for r in self.replicas if r.process.exitcode is None]
            waitables += [r.reader for r in self.replicas if r.outcome is None]  # a report may fill the pipe
            multiprocessing.connection.wait(waitables, timeout=min(POLL_SECONDS, max(0.0, deadline - time.monotonic())))
            self._read_reports()
            self._beat()

    def _wait_for_other_hosts(self) -> None:
        """Host 0 serves the store: keep it up until every replica on every host is done.
        With no deadline, as its replicas wait (``replica._wait_for_every_replica``): a replica of
        another host may work on alone; a host that fails says so in the store."""
        world = self.replicas[0].placement.world_size
        alive = HostsAlive(self.store, self.hosts.count, self.timeout)
        while int(self.store.add(FINISHED_KEY, 0)) < world:
            failure = self._remote_failure()
            if failure:
                raise failure
            if (host := alive.dead()) is not None:
                raise ReplicaFailed(alive.says(host), -1, None)
            self._beat()
            time.sleep(POLL_SECONDS)

    def _local_ordinals(self) -> set[int]:
        return {r.placement.ordinal for r in self.replicas}

    def end_all(self) -> None:
        alive = [r.process for r in self.replicas if r.process.is_alive()]
        for process in alive:
            process.terminate()
        deadline = time.monotonic() + _TERMINATE_GRACE_SECONDS
        for process in alive:
            process.join(max(0.0, deadline - time.monotonic()))
        for process in alive:
            if process.is_alive():
                process.kill()
                process.join()
