"""``torch_xla.distributed.xla_multiprocessing`` as XRT-era programs call it.

``spawn(fn, args=(), nprocs=None, join=True, daemon=False, start_method='spawn')``
accepts the values XRT-era code passes. torch_xla 2.6+ accepts only ``nprocs`` None or
1 and raises ``ValueError`` for the rest; the shim maps them:

* ``None``, or at least the number of local devices (XRT code often says 8) -> every
  local device, with one note when the number was larger;
* ``1`` -> one device, in this process (as torch_xla does);
* between: under ``PJRT_DEVICE=CPU`` the shim sets ``CPU_NUM_DEVICES`` to that count
  before the runtime starts; on TPU torch_xla cannot run a subset from ``spawn``, so the
  error says which environment to set instead.

With ``PJRT_DEVICE=CPU`` and a request for several replicas, ``spawn`` hands over to the
CPU replica mode (``xrt2pjrt.shim.cpu``): N processes, each one real replica.

When the job spans several processes, ``spawn`` serves the job's rendezvous store (see
``job``) from a small process of its own: on one host at 127.0.0.1 on a free port, with a
fresh secret handed to the children in their environment; on a pod only on worker 0, at
worker 0's address, with the secret every host was given. The store outlives this process
until every replica process of every host has said it is done, and a replica that raises
ends every rendezvous of the job at once with its error.

``fn`` and ``args`` reach the replicas as under XRT (``spawn_targets``): with
``start_method='fork'`` by inheritance, so nested functions, lambdas and locks work (torch_xla's
own spawn pickles them even then); with ``'spawn'`` or ``'forkserver'`` by pickle, and a value
pickle refuses is an error naming it before any replica starts.

``join=False`` returns at once with a context whose ``join()`` waits for the replicas and
raises what they raised, as XRT's ``torch.multiprocessing`` context did.

A runtime already started in this process is an error that names the call that started
it (torch_xla's own message only says "Runtime is already initialized").
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from typing import Any, Callable

import torch_xla
import torch_xla.runtime as _xr
from torch_xla._internal import pjrt as _pjrt
from torch_xla._internal import tpu as _tpu
from torch_xla.distributed import xla_multiprocessing as _xmp

try:
    from torch_xla.experimental import plugins as _plugins
except ImportError:  # torch_xla < 2.3 has no device plugins
    _plugins = None

from xrt2pjrt.shim import job as _job
from xrt2pjrt.shim import settings as _settings
from xrt2pjrt.shim import spawn_targets
from xrt2pjrt.shim.cpu import placement as cpu_placement
from xrt2pjrt.shim.cpu import supervisor as cpu_supervisor
from xrt2pjrt.shim.job_store import JOB_STORE
from xrt2pjrt.shim.store import secret as _secret
from xrt2pjrt.shim.store.client import StoreClient
from xrt2pjrt.shim.store.helper import start_helper
from xrt2pjrt.shim.store.protocol import StoreError
from xrt2pjrt.shim import xla_model as _shim_xm

MpModelWrapper = _xmp.MpModelWrapper
MpSerialExecutor = _xmp.MpSerialExecutor

__all__ = [
    "spawn",
    "run_multiprocess",
    "MpModelWrapper",
    "MpSerialExecutor",
    "ShimNote",
    "RuntimeAlreadyStarted",
    "SpawnContext",
]


class ShimNote(UserWarning):
    """The shim adapted a legacy argument; the program runs."""


class RuntimeAlreadyStarted(RuntimeError):
    pass


def _refuse_started_runtime(api: str) -> None:
    if torch_xla._XLAC._xla_runtime_is_initialized():
        raise RuntimeAlreadyStarted(
            f"{api} cannot start replicas: torch_xla's runtime is already running in this "
            f"process, started by {_shim_xm.DEVICE_TOUCH.describe()}. Under PJRT each replica "
            "starts its own runtime, so create devices and tensors (xm.xla_device(), "
            ".to(device), collectives) only inside the function passed to spawn, or under "
            "`if __name__ == '__main__':` after it."
        )


def local_device_count() -> int | None:
    """Devices torch_xla would use on this host, found without starting the runtime
    (None where the device type does not say)."""
    device_type = _xr.device_type()
    if device_type == "CPU":
        return int(os.environ.get("CPU_NUM_DEVICES", "1"))
    if device_type == "TPU":
        return _tpu.num_local_processes() * _tpu.num_logical_cores_per_chip()
    return None


def _cpu_replicas_for(nprocs: int | None) -> int | None:
    """The replicas a spawn of ``nprocs`` starts in the CPU mode. ``XRT2PJRT_CPU_REPLICAS``
    (``xrt2pjrt run --nprocs N``) is the CPU host's device count: an XRT-era nprocs=8 above
    it runs every device, as on a TPU host (not 8 replicas where 2 were asked for); one below
    it runs that subset, as a CPU host can (a TPU host refuses it). Both say so."""
    host = cpu_placement.host_replicas()
    if nprocs is None or host is None or nprocs == host:
        return nprocs
    if nprocs > host:
        warnings.warn(
            f"nprocs={nprocs} but {_settings.CPU_REPLICAS.name} gives this host {host} CPU replicas: "
            f"running all {host} (PJRT runs one replica per local device)",
            ShimNote,
            stacklevel=3,
        )
        return None
    warnings.warn(
        f"nprocs={nprocs} runs {nprocs} of the {host} CPU replicas {_settings.CPU_REPLICAS.name} gives this "
        "host (a TPU host's spawn runs every device or one, and refuses a subset)",
        ShimNote,
        stacklevel=3,
    )
    return nprocs


def _devices_for(nprocs: int | None) -> int | None:
    """The ``nprocs`` torch_xla accepts (None = all, 1 = one) for a legacy value."""
    if nprocs is None or nprocs == 1:
        return nprocs
    if nprocs < 1:
        raise ValueError(f"nprocs={nprocs}: spawn needs at least one replica")
    available = local_device_count()
    if available is None:
        raise ValueError(
            f"nprocs={nprocs}: on PJRT_DEVICE={_xr.device_type()} torch_xla runs "
            "either every local device (nprocs=None) or one (nprocs=1)"
        )
    if nprocs >= available:
        if nprocs > available:
            warnings.warn(
                f"nprocs={nprocs} but this host has {available} XLA devices: running "
                f"on all {available} (PJRT runs one replica per local device)",
                ShimNote,
                stacklevel=3,
            )
        return None
    if _xr.device_type() == "CPU":
        os.environ["CPU_NUM_DEVICES"] = str(nprocs)
        return None
    raise ValueError(
        f"nprocs={nprocs} asks for fewer than the {available} TPU devices on this host, which "
        "torch_xla's spawn cannot do. Use nprocs=None for all devices or nprocs=1 for one; to "
        "run on a subset of chips, set TPU_PROCESS_BOUNDS and TPU_VISIBLE_CHIPS before the "
        "program starts (e.g. TPU_PROCESS_BOUNDS=1,1,1 TPU_VISIBLE_CHIPS=0 for one chip) and "
        "pass nprocs=None."
    )


def spawn(
    fn: Callable[..., Any],
    args: tuple = (),
    nprocs: int | None = None,
    join: bool = True,
    daemon: bool = False,
    start_method: str = "spawn",
):
    """Run ``fn(index, *args)`` once per replica; ``index`` is the replica's ordinal.

    ``join=False`` returns a :class:`SpawnContext` at once; ``daemon`` is accepted for
    XRT-era callers (PJRT's replicas are never daemons: they start processes of their own).
    """
    if not join:
        return SpawnContext(lambda: spawn(fn, args, nprocs, True, daemon, start_method))
    if cpu_placement.requested(nprocs):
        if start_method == "fork":  # a forked replica would inherit the started runtime
            _refuse_started_runtime("xmp.spawn")
        spawn_targets.refuse_unpicklable(fn, args, start_method=start_method)
        return cpu_supervisor.spawn(fn, args, _cpu_replicas_for(nprocs), start_method)
    _refuse_started_runtime("xmp.spawn")
    devices = _devices_for(nprocs)
    if devices == 1:
        _shim_xm.DEVICE_TOUCH.note("xmp.spawn(nprocs=1), which runs fn in this process,")
        return _pjrt.spawn(fn, nprocs=devices, start_method=start_method, args=args)
    handed_over = spawn_targets.handed_over(fn, args, start_method=start_method)
    with _store_for_replicas(_local_processes()), handed_over as (target, target_args, _):
        return _pjrt.spawn(_Replica(target), nprocs=devices, start_method=start_method, args=target_args)


def run_multiprocess(fn: Callable[..., Any], *args, start_method: str = "spawn", **kwargs) -> dict[int, Any]:
    """Run ``fn(*args, **kwargs)`` on every local device; return ``{ordinal: result}``.
    With ``PJRT_DEVICE=CPU`` and ``XRT2PJRT_CPU_REPLICAS=N``: on N CPU replicas."""
    _refuse_started_runtime("run_multiprocess")
    if cpu_placement.requested(None):
        spawn_targets.refuse_unpicklable(fn, args, kwargs, start_method=start_method, api="run_multiprocess")
        return cpu_supervisor.run_multiprocess(fn, *args, start_method=start_method, **kwargs)
    handed_over = spawn_targets.handed_over(fn, args, kwargs, start_method=start_method, api="run_multiprocess")
    with _store_for_replicas(_local_processes()), handed_over as (target, target_args, target_kwargs):
        return _pjrt.run_multiprocess(
            _Replica(target, with_index=False), *target_args, start_method=start_method, **target_kwargs
        )


class SpawnContext:
    """What ``spawn(..., join=False)`` returns: the replicas run while the caller goes on."""

    def __init__(self, run: Callable[[], Any]):
        self._outcome: list = []
        self._thread = threading.Thread(target=self._run, args=(run,), name="xrt2pjrt-spawn", daemon=True)
        self._thread.start()

    def _run(self, run) -> None:
        try:
            self._outcome.append(("ok", run()))
        except BaseException as error:  # noqa: BLE001 -- handed to join()
            self._outcome.append(("error", error))

    def join(self, timeout: float | None = None) -> bool:
        """Wait (at most ``timeout`` seconds); True once every replica has ended. Raises the
        error a replica (or the spawn) raised."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            return False
        kind, value = self._outcome[0]
        if kind == "error":
            raise value
        return True


def _local_processes() -> int:
    """The processes torch_xla's spawn starts on this host (as its run_multiprocess counts)."""
    if _plugins is not None and _plugins.using_dynamic_plugins():
        return _plugins.default().physical_chip_count()
    if _xr.device_type() == "TPU":
        return _tpu.num_local_processes()
    if _xr.device_type() == "NEURON":
        from torch_xla._internal import neuron

        return neuron.num_local_processes()
    return 1


@contextlib.contextmanager
def _store_for_replicas(local_processes: int):
    """Serve the job's store for the replicas this spawn starts (on worker 0) and hand its
    address and the job's secret to them; tell the store how the spawn ended."""
    job = _job.current()
    processes = job.hosts * local_processes
    if processes <= 1 or job.served_by_parent:
        yield
        return
    secret = _secret.job_secret() or (_secret.new_secret().encode() if job.hosts == 1 else _job.secret(job))
    helper = None
    if job.hosts == 1 or job.host == 0:
        explicit = _settings.RENDEZVOUS_ADDR.text() or _settings.RENDEZVOUS_PORT.text()
        port = job.store_port if job.hosts > 1 or explicit else 0  # one host: any free port
        helper = start_helper(
            job.store_host, port, secret, expected=processes, linger=_settings.RENDEZVOUS_TIMEOUT.read()
        )
    address = f"{job.store_host}:{helper.port if helper else job.store_port}"
    with _environment({_settings.SERVED_STORE.name: address, _settings.JOB_SECRET.name: secret.decode()}):
        try:
            yield
        except BaseException as error:
            message = f"xmp.spawn on host {job.host} failed: {type(error).__name__}: {error}"
            if helper is not None:
                helper.abort(message)
            else:
                with contextlib.suppress(StoreError):  # gone already: nobody left to tell
                    _store_client(address, secret).abort(message)
            raise
    if helper is not None:
        helper.finish(last=job.hosts == 1)  # on one host every replica was ours and has ended


def _store_client(address: str, secret: bytes) -> StoreClient:
    host, port = _settings.host_and_port(_settings.SERVED_STORE.name, address)
    return StoreClient(host, port, secret, timeout=3)


@contextlib.contextmanager
def _environment(values: dict[str, str]):
    """``values`` in os.environ while the replicas start (they inherit it), then as before."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class _Replica:
    """``fn`` as each replica runs it: the replica's process joins the job (it will say done
    at exit), and an error in ``fn`` ends the job's rendezvous everywhere at once."""

    def __init__(self, fn: Callable[..., Any], with_index: bool = True):
        self.fn = fn
        self.with_index = with_index

    def __call__(self, *args, **kwargs):
        JOB_STORE.join(_job.current())
        where = f"replica {args[0]}" if self.with_index and args else f"process {os.getpid()}"
        try:
            return self.fn(*args, **kwargs)
        except SystemExit as exit:
            # XRT ran fn as the replica's process: sys.exit ended that process alone, and a
            # status other than 0 failed the spawn. torch_xla's pool would hand SystemExit to
            # the launching process, which then exits at the spawn (with status 0, silently).
            if exit.code is None or exit.code == 0:
                return None
            error = ReplicaExited(f"{where} called sys.exit({exit.code!r})")
            JOB_STORE.abort(str(error))
            raise error from None
        except BaseException as error:
            JOB_STORE.abort(f"{where} raised {type(error).__name__}: {error}")
            raise


class ReplicaExited(RuntimeError):
    """A replica's function called sys.exit with a status other than 0: the spawn fails, as
    XRT's did when a replica's process exited so."""
