"""SIMULATION of a TPU pod's runtime on a machine without TPUs, for tests/test_pod_simulation.py.

A program imports this module first. It stands in for exactly the parts of torch_xla that
need TPU chips, and nothing else:

* how many processes torch_xla's spawn starts on a host (``tpu.num_local_processes`` reads
  the PCI bus): ``SIM_LOCAL_PROCESSES``;
* torch_xla's ``run_multiprocess``, which would start the TPU runtime in each child: here
  each child runs torch_xla's real ``tpu.configure_topology`` (from the TPU environment the
  test sets, as on a TPU VM with ``TPU_SKIP_MDS_QUERY``) and then a stand-in runtime;
* the runtime's answers (``global_ordinal``, ``world_size``, ``local_ordinal``,
  ``process_index``, ``process_count``): task id t runs ordinal ``SIM_ORDER[t]`` (PJRT gives
  ordinals no fixed link to workers; a test can put ordinal 0 on any host);
* the XLA collectives and graph syncs a rendezvous must not use (``get_master_ip``,
  ``torch_xla.sync``): they raise, so a test fails if the shim reaches for them.

Everything else is real: the shim, its store and helper processes, sockets on loopback
addresses (host h is 127.0.0.(h+1)), process lifetimes, signals.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os

import torch_xla
import torch_xla.runtime as xr
from torch_xla._internal import pjrt, tpu

import xrt2pjrt.shim.xla_model as shim_xm

_started = {"on": False}


def _order() -> list[int]:
    return [int(o) for o in os.environ["SIM_ORDER"].split(",")]


def start_runtime() -> None:
    """SIMULATED: what the first device use does in a process of the pod."""
    _started["on"] = True


def _task() -> int:
    return int(os.environ.get("CLOUD_TPU_TASK_ID") or os.environ.get("TPU_WORKER_ID", "0"))


def _never(name):
    def call(*args, **kwargs):
        raise AssertionError(f"SIMULATION: {name} was called (an XLA collective or graph sync)")

    return call


def _child(rank: int, count: int, fn, args, kwargs):
    os.environ.setdefault("PJRT_LOCAL_PROCESS_RANK", str(rank))
    os.environ.setdefault("PJRT_LOCAL_PROCESS_COUNT", str(count))
    tpu.configure_topology(rank, count)  # torch_xla's own: CLOUD_TPU_TASK_ID, TPU_VISIBLE_CHIPS, ...
    start_runtime()
    return {xr.global_ordinal(): fn(*args, **kwargs)}


def run_multiprocess(fn, *args, start_method="spawn", **kwargs):
    """SIMULATED torch_xla._internal.pjrt.run_multiprocess: one process per (simulated) chip."""
    count = int(os.environ["SIM_LOCAL_PROCESSES"])
    context = multiprocessing.get_context(start_method)
    with concurrent.futures.ProcessPoolExecutor(max_workers=count, mp_context=context) as pool:
        results = list(pool.map(_child, range(count), [count] * count, [fn] * count, [args] * count, [kwargs] * count))
    return {ordinal: value for result in results for ordinal, value in result.items()}


def install() -> None:
    tpu.num_local_processes = lambda: int(os.environ["SIM_LOCAL_PROCESSES"])
    pjrt.run_multiprocess = run_multiprocess
    shim_xm._runtime_started = lambda: _started["on"]
    xr.global_ordinal = lambda: _order()[_task()]
    xr.world_size = lambda: len(_order())
    xr.local_ordinal = lambda: int(os.environ.get("PJRT_LOCAL_PROCESS_RANK", 0))
    xr.process_index = _task
    xr.process_count = lambda: len(_order())
    xr.get_master_ip = _never("torch_xla.runtime.get_master_ip")
    torch_xla.sync = shim_xm._sync = _never("torch_xla.sync")


install()
