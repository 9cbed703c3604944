"""torch_xla's own API inside a CPU replica: one table of replacements, applied in one place.

A CPU replica (:mod:`xrt2pjrt.shim.cpu_replicas`) is a real single-device PJRT CPU
process, so torch_xla on its own sees a world of one: ``xr.world_size()`` is 1,
``xm.all_reduce`` clones, ``SyncBatchNorm`` normalises by the local batch. :data:`WORLD`
lists every torch_xla name whose answer comes from that world, with what it answers inside
a replica instead: the replica's place in the N-replica world for ``torch_xla.runtime``,
the world's device names (``CPU:<ordinal>`` for its own) for ``torch_xla._XLAC``, the CPU
replica mode's collectives for ``torch_xla.core.xla_model`` and for the XLA kernels of
torch.distributed's functional collectives (DTensor, traced code), a real barrier for the
``xla`` backend of ``torch.distributed``, and the replica mode's store for ``xla://``.
Everything else in torch_xla is built on these names and follows: the bucketized
collectives, ``rendezvous``, ``mesh_reduce``, ``reduce_gradients``, ``optimizer_step``,
``torch_xla.core.functions`` (forward and backward) and every ``ProcessGroupXla``
collective call them by module attribute at call time (``xm.all_reduce(...)``,
``runtime.world_size()``), which is where the table replaces them.

:func:`enter` applies the table in a replica process, before the replica's function runs,
and only there (``cpu_replicas`` calls it; nothing changes on a TPU or in any other
process). It modifies no file: it sets module attributes of this process. A name written
into some module before the replica started (``from torch_xla.runtime import world_size``
at the top of a user's module, imported before the fork) is a binding of its own; enter
rebinds every module-level binding of a replaced function in every loaded module. A target
torch_xla does not have fails loudly (:class:`MissingTarget`), here and in
tests/test_replica_world.py against the installed torch_xla.

:data:`LAUNCH` is the second, smaller table, applied by ``xrt2pjrt run`` in the process
that runs the user's script: torch_xla's own spawn (``xmp.spawn``, ``torch_xla.launch``)
starts the CPU replicas. :func:`guard_launching_process` stops, at once, a script there
that is about to run as one process rather than start its replicas.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import os
import re
import site
import sys
import sysconfig
import traceback
import types
from collections.abc import Callable
from typing import Any

from xrt2pjrt.shim import cpu_replicas, spawn_targets


class MissingTarget(LookupError):
    """A name the table replaces is not in the installed torch_xla (renamed or removed)."""


@dataclasses.dataclass(frozen=True)
class Replacement:
    """``target`` answers with ``replica`` once the table is applied. A target is a module
    attribute ("module:attribute", "module:Class.method", "module:mapping['key']") or the
    XLA kernel of a torch operator ("kernel:namespace::operator")."""

    target: str
    replica: Callable
    why: str  # what the torch_xla name does in a one-replica world
    # False: torch.compile calls it (a graph break) rather than trace it, since it talks to
    # the other replicas. True for the ordinals, which are constants of the process.
    traceable: bool = False

    def applied(self) -> Callable:
        if self.traceable or self.target.startswith("kernel:"):  # kernels: see _not_in_a_graph
            return self.replica
        import torch._dynamo

        return torch._dynamo.disable(self.replica)

    def slot(self) -> _Slot | _Kernel:
        module_name, _, path = self.target.partition(":")
        if module_name == "kernel":
            return _Kernel.of(path, self.target)
        try:
            owner: Any = importlib.import_module(module_name)
        except ImportError as error:
            raise MissingTarget(f"{self.target}: cannot import {module_name} ({error})") from error
        *parents, last = path.split(".")
        for name in parents:
            owner = _attribute(owner, name, self.target)
        keyed = re.fullmatch(r"(\w+)\['(\w+)'\]", last)
        if keyed:
            mapping = _attribute(owner, keyed.group(1), self.target)
            if keyed.group(2) not in mapping:
                raise MissingTarget(f"{self.target}: {keyed.group(1)} has no entry {keyed.group(2)!r}")
            return _Slot(mapping, keyed.group(2), item=True)
        _attribute(owner, last, self.target)
        return _Slot(owner, last, item=False)


def _attribute(owner: Any, name: str, target: str) -> Any:
    try:
        return getattr(owner, name)
    except AttributeError:
        raise MissingTarget(f"{target}: {owner!r} has no attribute {name!r}") from None


@dataclasses.dataclass(frozen=True)
class _Slot:
    owner: Any
    name: str
    item: bool

    def get(self) -> Any:
        return self.owner[self.name] if self.item else getattr(self.owner, self.name)

    def set(self, value: Any) -> None:
        if self.item:
            self.owner[self.name] = value
        else:
            setattr(self.owner, self.name, value)


@dataclasses.dataclass(frozen=True)
class _Kernel:
    """The XLA kernel of a torch operator; torch.library takes a Python one in its place."""

    namespace: str
    operator: str

    @classmethod
    def of(cls, name: str, target: str) -> _Kernel:
        import torch

        namespace, _, operator = name.partition("::")
        if not torch._C._dispatch_has_kernel_for_dispatch_key(name, "XLA"):
            raise MissingTarget(f"{target}: torch_xla registers no XLA kernel for {name}")
        return cls(namespace, operator)

    def schema(self):
        import torch

        return getattr(getattr(torch.ops, self.namespace), self.operator).default._schema

    def get(self) -> None:
        return None  # a C++ kernel: nothing in Python is bound to it

    def set(self, value: Callable) -> None:
        import warnings

        import torch

        library = _libraries.setdefault(self.namespace, torch.library.Library(self.namespace, "IMPL"))
        with warnings.catch_warnings():  # "Overriding a previously registered kernel": the point
            warnings.simplefilter("ignore", UserWarning)
            library.impl(self.operator, value, "XLA")


_libraries: dict[str, Any] = {}  # kept alive: a torch.library.Library unregisters when collected

# table name -> {id(original): (original, replacement)}; the originals are kept alive so
# that their ids stay theirs.
_applied: dict[str, dict[int, tuple[Any, Callable]]] = {}
_originals: dict[str, Any] = {}  # target -> what it was before a table replaced it


def apply(name: str, table: tuple[Replacement, ...]) -> None:
    """Replace every target of ``table`` in this process (once), then rebind early bindings."""
    if name in _applied:
        return
    slots = [(replacement, replacement.slot()) for replacement in table]  # all found, or nothing changes
    replaced: dict[int, tuple[Any, Callable]] = {}
    for replacement, slot in slots:
        original, value = slot.get(), replacement.applied()
        if original is not None:
            replaced[id(original)] = (original, value)
            _originals.setdefault(replacement.target, original)
        slot.set(value)
    _applied[name] = replaced
    _rebind(replaced)


def _rebind(replaced: dict[int, tuple[Any, Callable]]) -> None:
    """Every module-level name bound to a replaced function now names its replacement."""
    this = sys.modules[__name__]  # holds LAUNCH's functions, which WORLD replaces in a forked replica
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if module is this or not isinstance(module, types.ModuleType) or not isinstance(namespace, dict):
            continue
        for key, value in list(namespace.items()):
            if id(value) in replaced and replaced[id(value)][0] is value:
                namespace[key] = replaced[id(value)][1]


def enter() -> None:
    """Make torch_xla's own API answer as one replica of the N-replica world (in a replica),
    and have the replica's DataLoader workers say that they are none (:class:`WorkerInit`)."""
    if not cpu_replicas.active():
        raise RuntimeError("replica_world.enter() outside a CPU replica")
    apply("world", WORLD)
    _hand_workers_their_init()


# --- torch_xla.runtime: this replica's place in the world ---------------------------------
def _where() -> cpu_replicas.Placement:
    return cpu_replicas.placement()


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
    return _originals[f"torch_xla:_XLAC.{name}"]


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
            f"attributes {own}, and those of the other replicas' devices are unknown here")
    return [{**own[0], "name": name} for name in _world_names()]


def _xla_set_replication_devices(arg0) -> None:
    """xm.set_replication hands over every device of the world (xm.xla_replication_devices):
    the C++ runtime gets this replica's device in their place, so its graphs stay those of one
    replica (the replica mode's collectives span the world instead)."""
    names = list(arg0)
    if names and names != _world_names():
        raise ValueError(f"replication devices {names} in the CPU replica mode: only the whole world "
                         f"{_world_names()} (xm.set_replication's list) or none")
    _original("_xla_set_replication_devices")([_local_device()] if names else [])


def _xla_get_replication_devices() -> list[str]:
    return _world_names() if _original("_xla_get_replication_devices")() else []


def _xla_get_replication_devices_count() -> int:
    return world_size() if _original("_xla_get_replication_devices_count")() else 0


# --- torch_xla.core.xla_model: the CPU replica mode's collectives --------------------------
# channel_id and use_global_device_ids change no result here: one device per replica, so a
# global device id is the ordinal, and the exchange needs no channel.
def all_gather(value, dim=0, groups=None, output=None, pin_layout=True, channel_id=None,
               use_global_device_ids=None):
    return cpu_replicas.all_gather(value, dim, groups, output, pin_layout)


def reduce_scatter(reduce_type, input, scale, scatter_dim, shard_count, groups=None, output=None,
                   pin_layout=True, channel_id=None, use_global_device_ids=None):
    return cpu_replicas.reduce_scatter(reduce_type, input, scale, scatter_dim, shard_count, groups, output,
                                       pin_layout)


def xla_rendezvous(payload: bytes = b"", ordinals=None, tag=None) -> list[bytes]:
    """torch_xla's checks and graph sync, then the replica mode's barrier with payloads."""
    import torch_xla

    if ordinals and len(ordinals) != world_size():
        raise ValueError("Only global rendezvous is supported")
    if not isinstance(payload, bytes):
        raise TypeError(f"`payload` must be bytes, not {type(payload)}")
    torch_xla.sync()
    return cpu_replicas.rendezvous(tag or "torch_xla.core.xla_model.xla_rendezvous", payload)


def _unsupported(what: str) -> Callable:
    def refuse(*args, **kwargs):
        raise NotImplementedError(f"{what} is not supported in the CPU replica mode")

    refuse.__name__ = what.rsplit(".", 1)[-1]
    return refuse


def _nested_spawn(*args, **kwargs):
    raise RuntimeError("xmp.spawn / torch_xla.launch called inside a CPU replica: replicas cannot start "
                       "replicas (under `xrt2pjrt run --per-process` the script is already one replica: "
                       "call the function directly, or run without --per-process)")


# --- torch.distributed's xla backend ---------------------------------------------------------
def _barrier(self, opts):
    """ProcessGroupXla.barrier: a real barrier among the group's members (torch_xla's returns at once)."""
    import torch
    import torch.distributed as dist

    cpu_replicas.rendezvous("torch.distributed.barrier", b"", dist.get_process_group_ranks(self))
    future = torch.futures.Future()
    future.set_result([])
    return torch._C._distributed_c10d._create_work_from_future(future)


def _xla_init_method(url: str, timeout=..., **kwargs):
    """``init_method='xla://'``: rank and world size of this replica, over the replica mode's store
    (torch_xla's handler serves a TCPStore of its own on MASTER_PORT)."""
    from torch.distributed import PrefixStore

    yield PrefixStore("xrt2pjrt/torch.distributed", cpu_replicas.store()), global_ordinal(), world_size()


# --- torch.distributed's functional collectives (DTensor, traced collectives) on XLA tensors -----
# torch_xla's XLA kernels: the whole world, or ordinals 0 .. group_size-1; the group name unread.
def _not_in_a_graph(what: str) -> None:
    """torch.compile's openxla backend runs a graph's operators once, to build the XLA graph
    it then replays: a collective run there on the host would be replayed as a constant
    (seen: the first step's sum, every step). So refuse it there, loudly."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_globals.get("__name__") == "torch_xla._dynamo.dynamo_bridge":
            raise NotImplementedError(
                f"{what} inside torch.compile is not supported in the CPU replica mode (its result "
                "would be compiled in as a constant): call it outside the compiled function, or "
                "use xm's collectives, which torch.compile calls rather than compiles there")
        frame = frame.f_back


def _functional_all_reduce(input, reduce_op: str, group_name: str):
    _not_in_a_graph("a functional all_reduce")
    return cpu_replicas.all_reduce(reduce_op, input)


def _functional_all_gather(input, group_size: int, group_name: str):
    _not_in_a_graph("a functional all_gather")
    return cpu_replicas.all_gather(input, 0, [list(range(group_size))], None, False)


def _functional_reduce_scatter(input, reduce_op: str, group_size: int, group_name: str):
    _not_in_a_graph("a functional reduce_scatter")
    return cpu_replicas.reduce_scatter(reduce_op, input, 1.0, 0, group_size, [list(range(group_size))])


def _functional_all_to_all(input, output_split_sizes, input_split_sizes, group_name: str):
    _not_in_a_graph("a functional all_to_all")
    world = world_size()
    if any(size != input.size(0) // world for size in [*output_split_sizes, *input_split_sizes]):
        raise RuntimeError("torch_xla does not support arbitrary split sizes for all_to_all")
    return cpu_replicas.all_to_all(input, 0, 0, world, pin_layout=False)


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
    _device_names("_xla_set_replication_devices", _xla_set_replication_devices,
                  "takes CPU:0 only: CPU:1.. are no devices of this process"),
    _device_names("_xla_get_replication_devices", _xla_get_replication_devices, "['CPU:0'] or []"),
    _device_names("_xla_get_replication_devices_count", _xla_get_replication_devices_count, "1 or 0"),
    Replacement("torch_xla.core.xla_model:all_reduce", cpu_replicas.all_reduce, "a clone (world size 1)"),
    Replacement("torch_xla.core.xla_model:all_gather", all_gather, "the value itself"),
    Replacement("torch_xla.core.xla_model:reduce_scatter", reduce_scatter, "XLA's op over one replica"),
    Replacement("torch_xla.core.xla_model:all_to_all", cpu_replicas.all_to_all, "XLA's op over one replica"),
    Replacement("torch_xla.core.xla_model:collective_permute", cpu_replicas.collective_permute,
                "XLA's op over one replica"),
    Replacement("torch_xla.core.xla_model:xla_rendezvous", xla_rendezvous, "all_gather over one replica"),
    Replacement("torch_xla.core.xla_model:send", _unsupported("xm.send"), "an XLA Send no replica receives"),
    Replacement("torch_xla.core.xla_model:recv", _unsupported("xm.recv"), "an XLA Recv no replica sends"),
    Replacement("torch_xla.distributed.xla_backend:ProcessGroupXla.barrier", _barrier, "returns at once"),
    Replacement("torch.distributed.rendezvous:_rendezvous_handlers['xla']", _xla_init_method,
                "a TCPStore on MASTER_PORT with world size and rank from torch_xla.runtime"),
    Replacement("kernel:_c10d_functional::all_reduce", _functional_all_reduce, "XLA's op over one replica"),
    Replacement("kernel:_c10d_functional::all_gather_into_tensor", _functional_all_gather,
                "XLA's op over one replica"),
    Replacement("kernel:_c10d_functional::reduce_scatter_tensor", _functional_reduce_scatter,
                "XLA's op over one replica"),
    Replacement("kernel:_c10d_functional::all_to_all_single", _functional_all_to_all, "XLA's op over one replica"),
    Replacement("torch_xla.distributed.xla_multiprocessing:spawn", _nested_spawn,
                "a one-replica world of its own in a new process"),
    Replacement("torch_xla._internal.pjrt:run_multiprocess", _nested_spawn,
                "a one-replica world of its own in a new process"),
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
            "hand the answer over: worker_init_fn=functools.partial(fn, rank=xr.global_ordinal())")
    return refuse


WORKER: tuple[Replacement, ...] = tuple(
    Replacement(row.target, _not_a_replica(row.target.replace(":", ".")), "the answer of a world of one",
                traceable=True)
    for row in WORLD if row.target.startswith(("torch_xla.runtime:", "torch_xla:_XLAC.")))


def _hand_workers_their_init() -> None:
    """Each DataLoader of this replica starts its workers with its init run through
    WorkerInit. Only while its workers start (``_get_iterator``, where torch makes them):
    ``loader.worker_init_fn`` stays what the program set, as code that tests it for None
    (Lightning, to add its own seeding) expects."""
    import torch.utils.data

    loader = torch.utils.data.DataLoader
    start = loader._get_iterator  # an AttributeError here is one for tests/test_replica_world.py

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


# --- LAUNCH: torch_xla's spawn starts CPU replicas under `xrt2pjrt run` --------------------------
def spawn(fn, nprocs=None, start_method="spawn", args=()):
    """torch_xla's spawn (``xmp.spawn`` and ``torch_xla.launch`` call it, and the shim's
    ``xmp.spawn`` for ``nprocs=1``): ``nprocs=None`` (every device) starts the CPU replicas,
    once pickle has taken ``fn`` and ``args`` as torch_xla's pool would on a TPU; other values
    go to torch_xla (1 runs ``fn`` here, anything else is its ValueError).
    Before the run's first spawn, ``nprocs=1`` is a run of one replica: see
    :func:`guard_launching_process`."""
    guard = lift_launch_guard()
    torch_xla_spawn = _originals["torch_xla._internal.pjrt:spawn"]
    if cpu_replicas.active():
        return torch_xla_spawn(fn, nprocs, start_method, args)
    if nprocs == 1 and guard is not None:
        guard.stop("one replica", _caller())
    if nprocs is None and cpu_replicas.requested(None):
        # the replicas are forked, but on a TPU torch_xla's pool pickles fn and args even under
        # fork: fail here, as there, rather than run what a pod cannot
        spawn_targets.require_picklable(
            fn, args, why=f"torch_xla's spawn (xmp.spawn, torch_xla.launch) sends fn and args to its replica "
            f"processes by pickle, even with start_method={start_method!r}, as it does on a TPU",
            remedy="or use the shim's xmp.spawn (xrt2pjrt.shim.xla_multiprocessing) with start_method='fork', "
            "which hands them to the replicas unpickled as XRT did")
        cpu_replicas.spawn(fn, args, None, start_method)
        return None
    return torch_xla_spawn(fn, nprocs, start_method, args)


LAUNCH: tuple[Replacement, ...] = (
    Replacement("torch_xla._internal.pjrt:spawn", spawn, "one replica on CPU (xmp.spawn and torch_xla.launch call it)"),
)


# --- the launching process under `xrt2pjrt run`: it starts replicas, or it stops ------------------
@dataclasses.dataclass(frozen=True)
class _LaunchGuard:
    stop: Callable[[str, str], Any]
    module: types.ModuleType  # torch_xla._XLAC
    originals: dict[str, Callable]  # name in it -> its function


_launch_guard: _LaunchGuard | None = None


def guard_launching_process(stop: Callable[[str, str], Any]) -> None:
    """Until this process first spawns, a script about to run as one process calls
    ``stop(what, where)``, which is expected to end it: ``what`` is "runtime" when a call
    into torch_xla (through its C++ module, which its whole Python API calls) finds the XLA
    runtime started, "one replica" at a spawn with ``nprocs=1``; ``where`` is the caller's
    file:line and source.

    Nothing that could still start replicas is stopped: torch_xla's spawn refuses a runtime
    already started in its process ("Runtime is already initialized"), and so does the
    shim's on a TPU. A script that never spawns, torchrun style, starts the runtime at its first
    device or ordinal call (2.9's ``xr.world_size()`` starts it), so it stops there, not
    after training for its whole length as one process."""
    global _launch_guard
    import torch_xla

    module = torch_xla._XLAC
    started = module._xla_runtime_is_initialized

    def guarded(original: Callable) -> Callable:
        @functools.wraps(original)
        def call(*args, **kwargs):
            result = original(*args, **kwargs)
            if _launch_guard is not None and started():
                guard = lift_launch_guard()
                if guard is not None:
                    guard.stop("runtime", _caller())
            return result

        return call

    originals = {name: value for name, value in vars(module).items() if isinstance(value, types.BuiltinFunctionType)}
    for name, original in originals.items():
        setattr(module, name, guarded(original))
    _launch_guard = _LaunchGuard(stop, module, originals)


def lift_launch_guard() -> _LaunchGuard | None:
    """End the guard (the process is starting its replicas, or stopping): torch_xla's own
    functions again, so that forked replicas inherit them. Returns the guard there was."""
    global _launch_guard
    guard, _launch_guard = _launch_guard, None
    if guard is not None:
        for name, original in guard.originals.items():
            setattr(guard.module, name, original)
    return guard


def _caller() -> str:
    """file:line and source of the innermost frame of the user's own code: outside the
    standard library, installed packages (torch, torch_xla, Lightning, ...) and xrt2pjrt."""
    inside = [os.path.dirname(sys.modules[name].__file__) for name in ("torch", "torch_xla", "xrt2pjrt")]
    inside += [sysconfig.get_paths()["stdlib"], *site.getsitepackages(), site.getusersitepackages()]
    inside = tuple(os.path.join(folder, "") for folder in inside)
    for frame in reversed(traceback.extract_stack()):
        if not frame.filename.startswith(inside) and not frame.filename.startswith("<"):
            return f"{frame.filename}:{frame.lineno}: {frame.line}"
    return "a call inside torch_xla"
