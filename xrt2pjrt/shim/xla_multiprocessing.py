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
CPU replica mode (``xrt2pjrt.shim.cpu_replicas``): N processes, each one real replica.

A runtime already started in this process is an error that names the call that started
it (torch_xla's own message only says "Runtime is already initialized").
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Callable

import torch_xla
import torch_xla.runtime as _xr
from torch_xla._internal import pjrt as _pjrt
from torch_xla._internal import tpu as _tpu
from torch_xla.distributed import xla_multiprocessing as _xmp

from xrt2pjrt.shim import cpu_replicas
from xrt2pjrt.shim import xla_model as _shim_xm

MpModelWrapper = _xmp.MpModelWrapper
MpSerialExecutor = _xmp.MpSerialExecutor

__all__ = ["spawn", "run_multiprocess", "MpModelWrapper", "MpSerialExecutor", "ShimNote",
           "RuntimeAlreadyStarted"]


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
            "`if __name__ == '__main__':` after it.")


def local_device_count() -> int | None:
    """Devices torch_xla would use on this host, found without starting the runtime
    (None where the device type does not say)."""
    device_type = _xr.device_type()
    if device_type == "CPU":
        return int(os.environ.get("CPU_NUM_DEVICES", "1"))
    if device_type == "TPU":
        return _tpu.num_local_processes() * _tpu.num_logical_cores_per_chip()
    return None


def _devices_for(nprocs: int | None) -> int | None:
    """The ``nprocs`` torch_xla accepts (None = all, 1 = one) for a legacy value."""
    if nprocs is None or nprocs == 1:
        return nprocs
    if nprocs < 1:
        raise ValueError(f"nprocs={nprocs}: spawn needs at least one replica")
    available = local_device_count()
    if available is None:
        raise ValueError(f"nprocs={nprocs}: on PJRT_DEVICE={_xr.device_type()} torch_xla runs "
                         "either every local device (nprocs=None) or one (nprocs=1)")
    if nprocs >= available:
        if nprocs > available:
            warnings.warn(f"nprocs={nprocs} but this host has {available} XLA devices: running "
                          f"on all {available} (PJRT runs one replica per local device)",
                          ShimNote, stacklevel=3)
        return None
    if _xr.device_type() == "CPU":
        os.environ["CPU_NUM_DEVICES"] = str(nprocs)
        return None
    raise ValueError(
        f"nprocs={nprocs} asks for fewer than the {available} TPU devices on this host, which "
        "torch_xla's spawn cannot do. Use nprocs=None for all devices or nprocs=1 for one; to "
        "run on a subset of chips, set TPU_PROCESS_BOUNDS and TPU_VISIBLE_CHIPS before the "
        "program starts (e.g. TPU_PROCESS_BOUNDS=1,1,1 TPU_VISIBLE_CHIPS=0 for one chip) and "
        "pass nprocs=None.")


def spawn(fn: Callable[..., Any], args: tuple = (), nprocs: int | None = None, join: bool = True,
          daemon: bool = False, start_method: str = "spawn"):
    """Run ``fn(index, *args)`` once per replica; ``index`` is the replica's ordinal.

    ``join`` and ``daemon`` are accepted for XRT-era callers; PJRT always joins.
    """
    if cpu_replicas.requested(nprocs):
        if start_method == "fork":  # a forked replica would inherit the started runtime
            _refuse_started_runtime("xmp.spawn")
        return cpu_replicas.spawn(fn, args, nprocs, start_method)
    _refuse_started_runtime("xmp.spawn")
    devices = _devices_for(nprocs)
    if devices == 1:
        _shim_xm.DEVICE_TOUCH.note("xmp.spawn(nprocs=1), which runs fn in this process,")
    return _pjrt.spawn(fn, nprocs=devices, start_method=start_method, args=args)


def run_multiprocess(fn: Callable[..., Any], *args, start_method: str = "spawn", **kwargs) -> dict[int, Any]:
    """Run ``fn(*args, **kwargs)`` on every local device; return ``{ordinal: result}``.
    With ``PJRT_DEVICE=CPU`` and ``XRT2PJRT_CPU_REPLICAS=N``: on N CPU replicas."""
    _refuse_started_runtime("run_multiprocess")
    if cpu_replicas.requested(None):
        return cpu_replicas.run_multiprocess(fn, *args, start_method=start_method, **kwargs)
    return _pjrt.run_multiprocess(fn, *args, start_method=start_method, **kwargs)
