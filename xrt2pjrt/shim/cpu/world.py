"""torch_xla's own API inside a CPU replica: the ``world`` table of replacements.

A CPU replica is a real single-device PJRT CPU process, so torch_xla on its own sees a
world of one: ``xr.world_size()`` is 1, ``xm.all_reduce`` clones, ``SyncBatchNorm``
normalises by the local batch. :data:`WORLD` lists every torch_xla name whose answer comes
from that world, with what it answers inside a replica instead: the replica's place in the
N-replica world for ``torch_xla.runtime``, the world's device names (``CPU:<ordinal>`` for
its own) for ``torch_xla._XLAC``, the CPU replica mode's collectives for
``torch_xla.core.xla_model`` and for the XLA kernels of torch.distributed's functional
collectives (DTensor, traced code), a real barrier for the ``xla`` backend of
``torch.distributed``, and the replica mode's store for ``xla://``. Everything else in
torch_xla is built on these names and follows: the bucketized collectives, ``rendezvous``,
``mesh_reduce``, ``reduce_gradients``, ``optimizer_step``, ``torch_xla.core.functions``
(forward and backward) and every ``ProcessGroupXla`` collective call them by module
attribute at call time (``xm.all_reduce(...)``, ``runtime.world_size()``), which is where
the table replaces them.

:func:`enter` applies the table (``replacements``) in a replica process, before the
replica's function runs, and only there: nothing changes on a TPU or in any other process.
Every target is checked against the installed torch_xla in tests/shim/cpu/test_cpu_world.py.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

from xrt2pjrt.shim.cpu import collectives, transport
from xrt2pjrt.shim.cpu.placement import Placement, active, placement
from xrt2pjrt.shim.cpu.replacements import Replacement, apply, originals


def enter() -> None:
    """Make torch_xla's own API answer as one replica of the N-replica world (in a replica),
    and have the replica's DataLoader workers say that they are none (:class:`WorkerInit`)."""
    if not active():
        raise RuntimeError("world.enter() outside a CPU replica")
    apply("world", WORLD)
    _hand_workers_their_init()


# --- torch_xla.runtime: this replica's place in the world ---------------------------------
def _where() -> Placement:
    return placement()


def world_size() -> int:
    return _where().world_size


def global_ordinal() -> int:
    return _where().ordinal


def local_ordinal() -> int:
    return _where().local_ordinal


def local_process_count() -> int:
    return _where().local_world_size


def host_index() -> int:
    return _where().host


def get_master_ip() -> str:
    return _where().store_host


# --- torch_xla._XLAC: device names, as a pod's runtime names them ----------------------------
# A PJRT client names a device by its global ordinal ('TPU:k' on replica k) and lists every
# device of the world; a replica's own client knows one device, 'CPU:0'. These rows answer
# with the world's names (xm.xla_real_devices, torch_xla.real_devices, xm.xla_device_hw,
# xm.xla_replication_devices, xr.global_device_count and xr.global_runtime_device_attributes
# follow) and hand the C++ runtime its own name back where a name goes in.
def _original(name: str) -> Callable:
    return originals[f"torch_xla:_XLAC.{name}"]


def _local_device() -> str:
    local = _original("_xla_get_devices")()
    if len(local) != 1:
        raise RuntimeError(f"a CPU replica has one device, not {local}")
    return local[0]


def _platform() -> str:
    return _local_device().partition(":")[0]


def _own_name() -> str:
    return f"{_platform()}:{global_ordinal()}"


def _world_names() -> list[str]:
    return [f"{_platform()}:{ordinal}" for ordinal in range(world_size())]


def _as_in_the_world(names) -> list[str]:
    local, own = _local_device(), _own_name()
    return [own if name == local else name for name in names]


def _xla_get_devices() -> list[str]:
    return _as_in_the_world(_original("_xla_get_devices")())


def _xla_get_runtime_devices() -> list[str]:
    return _as_in_the_world(_original("_xla_get_runtime_devices")())


def _xla_real_devices(devices=None) -> list[str]:
    return _as_in_the_world(_original("_xla_real_devices")(devices))


def _xla_get_all_devices() -> list[str]:
    return _world_names()


def _xla_num_global_devices() -> int:
    return world_size()


def _xla_get_all_device_attributes() -> list[dict]:
    """This device's attributes, named for each device of the world; refused where the
    attributes say more than the name (a TPU's coordinates), which no replica knows of another."""
    own = _original("_xla_get_all_device_attributes")()
    if len(own) != 1 or set(own[0]) != {"name"}:
        raise NotImplementedError(
            f"xr.global_runtime_device_attributes() in the CPU replica mode: this replica's device has the "
            f"attributes {own}, and those of the other replicas' devices are unknown here"
        )
    return [{**own[0], "name": name} for name in _world_names()]


def _xla_set_replication_devices(arg0) -> None:
    """xm.set_replication hands over every device of the world (xm.xla_replication_devices):
    the C++ runtime gets this replica's device in their place, so its graphs stay those of one
    replica (the replica mode's collectives span the world instead)."""
    names = list(arg0)
    if names and names != _world_names():
        raise ValueError(
            f"replication devices {names} in the CPU replica mode: only the whole world "
            f"{_world_names()} (xm.set_replication's list) or none"
        )
    _original("_xla_set_replication_devices")([_local_device()] if names else [])


def _xla_get_replication_devices() -> list[str]:
    return _world_names() if _original("_xla_get_replication_devices")() else []


def _xla_get_replication_devices_count() -> int:
    return world_size() if _original("_xla_get_replication_devices_count")() else 0


# --- torch_xla.core.xla_model: the CPU replica mode's collectives --------------------------
# channel_id and use_global_device_ids change no result here: one device per replica, so a
# global device id is the ordinal, and the exchange needs no channel.
def all_gather(value, dim=0, groups=None, output=None, pin_layout=True, channel_id=None, use_global_device_ids=None):
    return collectives.all_gather(value, dim, groups, output, pin_layout)


def reduce_scatter(
    reduce_type,
    input,
    scale,
    scatter_dim,
    shard_count,
    groups=None,
    output=None,
    pin_layout=True,
    channel_id=None,
    use_global_device_ids=None,
):
    return collectives.reduce_scatter(reduce_type, input, scale, scatter_dim, shard_count, groups, output, pin_layout)


def xla_rendezvous(payload: bytes = b"", ordinals=None, tag=None) -> list[bytes]:
    """torch_xla's checks and graph sync, then the replica mode's barrier with payloads."""
    import torch_xla

    if ordinals and len(ordinals) != world_size():
        raise ValueError("Only global rendezvous is supported")
    if not isinstance(payload, bytes):
        raise TypeError(f"`payload` must be bytes, not {type(payload)}")
    torch_xla.sync()
    return collectives.rendezvous(tag or "torch_xla.core.xla_model.xla_rendezvous", payload)


def _unsupported(what: str) -> Callable:
    def refuse(*args, **kwargs):
        raise NotImplementedError(f"{what} is not supported in the CPU replica mode")

    refuse.__name__ = what.rsplit(".", 1)[-1]
    return refuse


def _nested_spawn(*args, **kwargs):
    raise RuntimeError(
        "xmp.spawn / torch_xla.launch called inside a CPU replica: replicas cannot start "
        "replicas (under `xrt2pjrt run --per-process` the script is already one replica: "
        "call the function directly, or run without --per-process)"
    )


# --- torch.distributed's xla backend ---------------------------------------------------------
def _barrier(self, opts):
    """ProcessGroupXla.barrier: a real barrier among the group's members (torch_xla's returns at once)."""
    import torch
    import torch.distributed as dist

    collectives.rendezvous("torch.distributed.barrier", b"", dist.get_process_group_ranks(self))
    future = torch.futures.Future()
    future.set_result([])
    return torch._C._distributed_c10d._create_work_from_future(future)


def _xla_init_method(url: str, timeout=..., **kwargs):
    """``init_method='xla://'``: rank and world size of this replica, over the replica mode's store
    (torch_xla's handler serves a TCPStore of its own on MASTER_PORT)."""
    from torch.distributed import PrefixStore

    yield PrefixStore("xrt2pjrt/torch.distributed", transport.store()), global_ordinal(), world_size()


# --- torch.distributed's functional collectives (DTensor, traced collectives) on XLA tensors -----
# torch_xla's XLA kernels: the whole world, or ordinals 0 .. group_size-1; the group name unread.
def _not_in_a_graph(what: str) -> None:
    """torch.compile's openxla backend runs a graph's operators once, to build the XLA graph
    it then replays: a collective run there on the host would be replayed as a constant
    (the first step's sum at every step). So refuse it there, loudly."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_globals.get("__name__") == "torch_xla._dynamo.dynamo_bridge":
            raise NotImplementedError(
                f"{what} inside torch.compile is not supported in the CPU replica mode (its result "
                "would be compiled in as a constant): call it outside the compiled function, or "
                "use xm's collectives, which torch.compile calls rather than compiles there"
            )
        frame = frame.f_back


def _functional_all_reduce(input, reduce_op: str, group_name: str):
    _not_in_a_graph("a functional all_reduce")
    return collectives.all_reduce(reduce_op, input)


def _functional_all_gather(input, group_size: int, group_name: str):
    _not_in_a_graph("a functional all_gather")
    return collectives.all_gather(input, 0, [list(range(group_size))], None, False)


def _functional_reduce_scatter(input, reduce_op: str, group_size: int, group_name: str):
    _not_in_a_graph("a functional reduce_scatter")
    return collectives.reduce_scatter(reduce_op, input, 1.0, 0, group_size, [list(range(group_size))])


def _functional_all_to_all(input, output_split_sizes, input_split_sizes, group_name: str):
    _not_in_a_graph("a functional all_to_all")
    world = world_size()
    if any(size != input.size(0) // world for size in [*output_split_sizes, *input_split_sizes]):
        raise RuntimeError("torch_xla does not support arbitrary split sizes for all_to_all")
    return collectives.all_to_all(input, 0, 0, world, pin_layout=False)


def _runtime(name: str, replica: Callable, why: str) -> Replacement:
    """A row for torch_xla.runtime: a constant of the process, which torch.compile may trace."""
    return Replacement(f"torch_xla.runtime:{name}", replica, why, traceable=True)


def _device_names(name: str, replica: Callable, why: str) -> Replacement:
    """A row for torch_xla._XLAC's device names: constants of the process, as _runtime's."""
    return Replacement(f"torch_xla:_XLAC.{name}", replica, why, traceable=True)


WORLD: tuple[Replacement, ...] = (
    _runtime("world_size", world_size, "1: the XLA replication count of this process"),
    _runtime("global_ordinal", global_ordinal, "0: the default device's ordinal"),
    _runtime("local_ordinal", local_ordinal, "0: PJRT_LOCAL_PROCESS_RANK unset"),
    _runtime("process_index", global_ordinal, "0: one PJRT process"),
    _runtime("process_count", world_size, "1: one PJRT process"),
    _runtime("local_process_count", local_process_count, "1: PJRT_LOCAL_PROCESS_COUNT unset"),
    _runtime("host_index", host_index, "0 on CPU"),
    _runtime("global_device_count", world_size, "1: this process's devices"),
    _runtime("global_runtime_device_count", world_size, "1: this process's devices"),
    _runtime("get_master_ip", get_master_ip, "RuntimeError: no IP discovery on CPU"),
    _device_names("_xla_get_devices", _xla_get_devices, "['CPU:0']: this process's device, named CPU:0"),
    _device_names("_xla_get_runtime_devices", _xla_get_runtime_devices, "['CPU:0']"),
    _device_names("_xla_real_devices", _xla_real_devices, "CPU:0 for this process's device"),
    _device_names("_xla_get_all_devices", _xla_get_all_devices, "['CPU:0']: one device in the world"),
    _device_names("_xla_get_all_runtime_devices", _xla_get_all_devices, "['CPU:0']: one device in the world"),
    _device_names("_xla_num_global_devices", _xla_num_global_devices, "1: one device in the world"),
    _device_names("_xla_get_all_device_attributes", _xla_get_all_device_attributes, "one device's attributes"),
    _device_names(
        "_xla_set_replication_devices",
        _xla_set_replication_devices,
        "takes CPU:0 only: CPU:1.. are no devices of this process",
    ),
    _device_names("_xla_get_replication_devices", _xla_get_replication_devices, "['CPU:0'] or []"),
    _device_names("_xla_get_replication_devices_count", _xla_get_replication_devices_count, "1 or 0"),
    Replacement("torch_xla.core.xla_model:all_reduce", collectives.all_reduce, "a clone (world size 1)"),
    Replacement("torch_xla.core.xla_model:all_gather", all_gather, "the value itself"),
    Replacement("torch_xla.core.xla_model:reduce_scatter", reduce_scatter, "XLA's op over one replica"),
    Replacement("torch_xla.core.xla_model:all_to_all", collectives.all_to_all, "XLA's op over one replica"),
    Replacement(
        "torch_xla.core.xla_model:collective_permute", collectives.collective_permute, "XLA's op over one replica"
    ),
    Replacement("torch_xla.core.xla_model:xla_rendezvous", xla_rendezvous, "all_gather over one replica"),
    Replacement("torch_xla.core.xla_model:send", _unsupported("xm.send"), "an XLA Send no replica receives"),
    Replacement("torch_xla.core.xla_model:recv", _unsupported("xm.recv"), "an XLA Recv no replica sends"),
    Replacement("torch_xla.distributed.xla_backend:ProcessGroupXla.barrier", _barrier, "returns at once"),
    Replacement(
        "torch.distributed.rendezvous:_rendezvous_handlers['xla']",
        _xla_init_method,
        "a TCPStore on MASTER_PORT with world size and rank from torch_xla.runtime",
    ),
    Replacement("kernel:_c10d_functional::all_reduce", _functional_all_reduce, "XLA's op over one replica"),
    Replacement("kernel:_c10d_functional::all_gather_into_tensor", _functional_all_gather, "XLA's op over one replica"),
    Replacement(
        "kernel:_c10d_functional::reduce_scatter_tensor", _functional_reduce_scatter, "XLA's op over one replica"
    ),
    Replacement("kernel:_c10d_functional::all_to_all_single", _functional_all_to_all, "XLA's op over one replica"),
    Replacement(
        "torch_xla.distributed.xla_multiprocessing:spawn",
        _nested_spawn,
        "a one-replica world of its own in a new process",
    ),
    Replacement(
        "torch_xla._internal.pjrt:run_multiprocess", _nested_spawn, "a one-replica world of its own in a new process"
    ),
)


# --- a replica's DataLoader workers -------------------------------------------------------------
# torch_xla's spawn starts replicas with the spawn method, and their DataLoader workers start so
# too: new processes, where torch_xla is not the replica's. On a TPU, asking its runtime there
# starts one of its own on chips the replica holds; a fresh import here answered as a world of
# one (ordinal 0, world size 1, on every replica's workers), with no error. So a worker says it
# is none. A forked worker (multiprocessing_context='fork') keeps the replica's answers, as a
# forked process keeps the runtime's on a TPU.
class WorkerInit:
    """A replica's DataLoader ``worker_init_fn``: in a worker that is a new process, torch_xla's
    ordinals and world size raise :class:`NotAReplica`; then the loader's own ``fn`` runs."""

    def __init__(self, fn: Callable[[int], Any] | None):
        self.fn = fn

    def __call__(self, worker_id: int) -> Any:
        import torch_xla.runtime as runtime

        if runtime.world_size is not world_size:  # a new process: not the replica's torch_xla
            apply("worker", WORKER)
        return self.fn(worker_id) if self.fn is not None else None


class NotAReplica(RuntimeError):
    """torch_xla's ordinal, world size or device names asked for in a replica's DataLoader worker."""


def _not_a_replica(name: str) -> Callable:
    def refuse(*args, **kwargs):
        raise NotAReplica(
            f"{name}() in a DataLoader worker of CPU replica {global_ordinal()}: the worker is a "
            "process of its own, started by spawn, and no replica; on a TPU, torch_xla would start a runtime of its "
            "own there (on the chips the replica holds) rather than answer the replica's. Ask in the replica and "
            "hand the answer over: worker_init_fn=functools.partial(fn, rank=xr.global_ordinal())"
        )

    return refuse


WORKER: tuple[Replacement, ...] = tuple(
    Replacement(
        row.target, _not_a_replica(row.target.replace(":", ".")), "the answer of a world of one", traceable=True
    )
    for row in WORLD
    if row.target.startswith(("torch_xla.runtime:", "torch_xla:_XLAC."))
)


def _hand_workers_their_init() -> None:
    """Each DataLoader of this replica starts its workers with its init run through
    WorkerInit. Only while its workers start (``_get_iterator``, where torch makes them):
    ``loader.worker_init_fn`` stays what the program set, as code that tests it for None
    (Lightning, to add its own seeding) expects."""
    import torch.utils.data

    loader = torch.utils.data.DataLoader
    start = loader._get_iterator  # an AttributeError here is one for tests/shim/cpu/test_cpu_world.py

    @functools.wraps(start)
    def _get_iterator(self):
        fn = self.worker_init_fn
        if self.num_workers == 0 or isinstance(fn, WorkerInit):
            return start(self)
        self.worker_init_fn = WorkerInit(fn)
        try:
            return start(self)
        finally:
            self.worker_init_fn = fn

    loader._get_iterator = _get_iterator
