"""``torch_xla.core.xla_model`` as XRT-era programs call it, correct on the PJRT runtime.

``import xrt2pjrt.shim.xla_model as xm`` and an XRT-era program keeps working:

* every public name of the installed ``torch_xla.core.xla_model`` passes through
  (module ``__getattr__``), and ``from xrt2pjrt.shim.xla_model import *`` gives them all;
* the names torch_xla removed or changed come back with their XRT-era signatures:
  ``xrt_world_size(defval=1)``, ``get_ordinal(defval=0)``, ``get_local_ordinal(defval=0)``,
  ``is_master_ordinal(local=True)``, ``master_print``, ``xla_device(n=None, devkind=None)``,
  ``get_xla_supported_devices(devkind=None, max_devices=None)``, ``mark_step()``,
  ``rendezvous(tag, payload=b'', replicas=[])``, ``mesh_reduce``, ``do_on_ordinals``,
  ``save`` (which ends with a rendezvous again, as before torch_xla 2.1), and the
  collectives with their XRT-era positional arguments, string reduce types, lists of
  tensors, ``groups=``, ``pin_layout=`` and ``cctx=`` (``CollectiveContext``),
  ``parse_xla_device``, ``send_cpu_data_to_device(data, device)``;
* none of them calls a torch_xla function that emits a DeprecationWarning.

Semantics (the seeds' asks):

* ``get_ordinal()`` is the replica id XLA uses for this thread's device,
  ``xrt_world_size()`` the replica count, ``get_local_ordinal()`` the index among this
  host's replicas. Before the runtime starts they return ``defval`` without starting it
  where no job is described (the parent of ``xmp.spawn`` on one host, as XRT did), and
  raise where the environment says this process is one of several (torchrun, PJRT's
  process variables, a TPU slice of several hosts: see ``job``): there ``defval`` would
  make every process replica 0.
* Under SPMD (``xr.use_spmd()``) one process drives all its devices, so ordinals count
  processes: ``get_ordinal()`` is the process index, ``xrt_world_size()`` the process count,
  ``get_local_ordinal()`` the process's index on its host; ``is_master_ordinal``,
  ``master_print``, ``do_on_ordinals``, ``save`` and ``rendezvous(replicas=...)`` follow. The
  collectives are torch_xla's own there (their groups name devices of the SPMD program).
* Every collective's result is ordered by ordinal: the shim always sends explicit replica
  groups listed in ordinal order (see ``collective_args``), so all_gather returns shards in
  ordinal order (pinned and unpinned), reduce_scatter gives ordinal i shard i, all_to_all
  sends chunk j to ordinal j; with ``groups`` the order follows each group as listed.
* ``rendezvous`` is a real barrier with payload exchange, tag check and timeout.

Rendezvous transports. ``host`` (the default) is ``xrt2pjrt.shim.rendezvous``: the job's
store (``job``, ``store``), on worker 0, open only to the job's processes. ``xla`` is an all_gather of the payloads on the
devices, like upstream's ``xla_rendezvous``. The default is ``host`` because it is what
XRT's mesh rendezvous was: it leaves the user's lazy graph alone (no ``mark_step`` inside
a rendezvous, so no extra compilation or graph cut), lets a subset of replicas meet,
names the replicas that never arrived when it times out instead of hanging, and works
under SPMD, where an XLA collective does not synchronise processes. The ``xla``
transport needs no free port, no network path to worker 0 and no secret; choose it with
``transport='xla'`` or ``XRT2PJRT_RENDEZVOUS_TRANSPORT=xla``. It also checks tags (the tag
travels with the payload) but joins every replica and cannot time out.

With one replica (and no store), ``rendezvous`` returns ``[payload]`` and ``mesh_reduce``
``reduce_fn([data])``, as for any world size (and as torch_xla 2.x does). XRT without a mesh
returned ``[]`` and ``data`` unreduced; code written for N replicas gets the same shapes
from one.
"""

from __future__ import annotations

import functools
import inspect
import io
import os
import sys
import traceback
from typing import Any, Callable, Protocol, Sequence, TextIO

import torch
import torch_xla
import torch_xla.core.xla_model as _xm
import torch_xla.runtime as _xr

from xrt2pjrt.shim import collective_args as _args
from xrt2pjrt.shim.cpu import collectives as _cpu_collectives
from xrt2pjrt.shim.cpu import placement as _cpu_placement
from xrt2pjrt.shim import job as _job
from xrt2pjrt.shim import rendezvous as _host
from xrt2pjrt.shim import settings as _settings
from xrt2pjrt.shim.rendezvous import (  # noqa: F401  (the two unused here are in _OWN: re-exported)
    RendezvousAborted,
    RendezvousError,
    RendezvousTagMismatch,
    RendezvousTimeout,
)

# The shim's own names; ``__all__`` (at the end) adds every public name of torch_xla's xm,
# so ``from xrt2pjrt.shim.xla_model import *`` gives what ``from ... xla_model import *`` gave.
_OWN = [
    "RendezvousError",
    "RendezvousTagMismatch",
    "RendezvousTimeout",
    "RendezvousAborted",
    "xrt_world_size",
    "get_ordinal",
    "get_local_ordinal",
    "is_master_ordinal",
    "master_print",
    "xla_device",
    "get_xla_supported_devices",
    "parse_xla_device",
    "send_cpu_data_to_device",
    "mark_step",
    "CollectiveContext",
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "collective_permute",
    "collective_broadcast",
    "broadcast_master_param",
    "rendezvous",
    "mesh_reduce",
    "do_on_ordinals",
    "reduce_gradients",
    "optimizer_step",
    "save",
]

# Spellings that moved within torch_xla 2.x: torch_xla.device arrived in 2.3 and
# torch_xla.sync in 2.5; before them xm's own (not yet deprecated) functions did the job.
_device = getattr(torch_xla, "device", None) or _xm.xla_device
_sync = getattr(torch_xla, "sync", None) or _xm.mark_step

# --- backends --------------------------------------------------------------------------
# A backend answers the nine calls of ``Backend`` with exactly those signatures. Two
# exist: this module's PJRT backend (torch_xla's XLA collectives) and the module
# ``xrt2pjrt.shim.cpu.collectives`` (N CPU processes joined over gloo), chosen while
# ``cpu.placement.active()`` is true. The shim normalises arguments before it dispatches:
# ``reduce_type`` is one of collective_args.REDUCE_TYPES, ``groups`` an explicit list of
# lists of ordinals (never None), ``pairs`` a checked list of [source, target],
# ``payload`` bytes; a list given to all_gather with ``pin_layout=True`` arrives one
# tensor at a time; optional arguments come by keyword; XRT's ``cctx`` stops at the shim.
# Everything else here (mesh_reduce, reduce_gradients, optimizer_step, is_master_ordinal,
# save, ...) is built on these nine, so it follows the backend too.


class Backend(Protocol):
    def get_ordinal(self, defval: int = 0) -> int: ...
    def xrt_world_size(self, defval: int = 1) -> int: ...
    def get_local_ordinal(self, defval: int = 0) -> int: ...
    def all_reduce(self, reduce_type, inputs, scale=1.0, groups=None, pin_layout=True): ...
    def all_gather(self, value, dim=0, groups=None, output=None, pin_layout=True): ...
    def reduce_scatter(
        self, reduce_type, input, scale, scatter_dim, shard_count, groups=None, output=None, pin_layout=True
    ): ...
    def all_to_all(self, value, split_dimension, concat_dimension, split_count, groups=None, pin_layout=True): ...
    def collective_permute(self, value, pairs): ...
    def rendezvous(self, tag, payload=b"", replicas=[], *, timeout=None) -> list[bytes]: ...


def _runtime_started() -> bool:
    return torch_xla._XLAC._xla_runtime_is_initialized()


class _DeviceTouch:
    """Remembers the first shim call that started torch_xla's runtime in this process.

    ``xmp.spawn`` cannot run once the runtime is up; its error names this call.
    """

    def __init__(self):
        self.before_import = _runtime_started()
        self.first: str | None = None
        self._settled = self.before_import

    def note(self, call: str) -> None:
        """``call`` (e.g. 'xm.xla_device()') is about to use the device."""
        if self._settled:
            return
        if _runtime_started():
            self._settled = True
        elif self.first is None:
            self.first = f"{call} at {_caller()}"

    def describe(self) -> str:
        if self.first:
            return self.first
        if self.before_import:
            return "code that ran before xrt2pjrt.shim.xla_model was imported"
        return "a call outside the shim (torch_xla.device(), tensor.to(device), torch_xla.runtime.world_size(), ...)"


def _caller() -> str:
    """file:line of the innermost frame outside the shim and torch_xla."""
    inside = (os.path.dirname(__file__), os.path.dirname(torch_xla.__file__))
    for frame in reversed(traceback.extract_stack()):
        if not frame.filename.startswith(inside):
            return f"{frame.filename}:{frame.lineno} (in {frame.name})"
    return "an unknown place"


DEVICE_TOUCH = _DeviceTouch()


def _spmd() -> bool:
    """Under ``xr.use_spmd()`` (read from the environment: no runtime needed)."""
    return _xr.is_spmd()


def _spmd_world() -> tuple[int, int, int]:
    """(process index, process count, local process index): what the shim's ordinals mean
    under SPMD, where one process drives all its devices. From the job's environment
    (``job``: the index equals ``CLOUD_TPU_TASK_ID``, which torch_xla's process index is),
    else from the runtime, else a process alone."""
    job = _job.current()
    if job.processes > 1:
        return job.process, job.processes, job.local_process
    if _runtime_started():
        return _xr.process_index(), _xr.process_count(), 0
    return 0, 1, 0


def _not_yet(call: str, defval: int) -> int:
    """Before the runtime starts: XRT's ``defval`` where no job is described (the parent of
    ``xmp.spawn`` on one host); an error where the environment says this process is one of
    several, since ``defval`` would make every one of them the same replica."""
    job = _job.current()
    if job.processes > 1:
        raise RuntimeError(
            f"{call} before torch_xla's runtime started in this process, which is {job.describe()}: "
            f"the replica's ordinal is known once the runtime runs, and XRT's default ({defval}) would "
            "give every process the same answer. Inside the function given to xmp.spawn it is known; "
            "in a process that drives its devices itself, call xm.xla_device() first (under torchrun: "
            "after dist.init_process_group('xla', init_method='xla://'))."
        )
    return defval


class _PjrtBackend:
    """The XLA collectives of the installed torch_xla, called with explicit groups."""

    def get_ordinal(self, defval: int = 0) -> int:
        if _spmd():
            return _spmd_world()[0]
        return _xr.global_ordinal() if self._runtime_joined() else _not_yet("xm.get_ordinal()", defval)

    def xrt_world_size(self, defval: int = 1) -> int:
        if _spmd():
            return _spmd_world()[1]
        return _xr.world_size() if self._runtime_joined() else _not_yet("xm.xrt_world_size()", defval)

    def get_local_ordinal(self, defval: int = 0) -> int:
        if _spmd():
            return _spmd_world()[2]
        return _xr.local_ordinal() if self._runtime_joined() else _not_yet("xm.get_local_ordinal()", defval)

    _checked_in: int | None = None  # the process whose runtime world was found to match its job

    def _runtime_joined(self) -> bool:
        """The runtime runs and its world holds this process's job (checked once per process)."""
        if not _runtime_started():
            return False
        if self._checked_in == os.getpid():
            return True
        world, job = _xr.world_size(), _job.current()
        if world < job.processes:
            # e.g. torchrun's processes under PJRT_DEVICE=CPU: each one a world of its own
            raise RuntimeError(
                f"this is {job.describe()}, but torch_xla's runtime here sees a world of {world} "
                f"replica(s): every process would call itself ordinal 0 of {world}. Under PJRT each "
                "process must join its job's runtime (torchrun: dist.init_process_group('xla', "
                "init_method='xla://') before touching the device; PJRT_DEVICE=CPU runs each process "
                "alone: use the shim's xmp.spawn for several CPU replicas)."
            )
        self._checked_in = os.getpid()
        return True

    def all_reduce(self, reduce_type, inputs, scale=1.0, groups=None, pin_layout=True):
        DEVICE_TOUCH.note("xm.all_reduce()")
        return _xm.all_reduce(reduce_type, inputs, scale=scale, groups=groups, pin_layout=pin_layout)

    def all_gather(self, value, dim=0, groups=None, output=None, pin_layout=True):
        DEVICE_TOUCH.note("xm.all_gather()")
        return _xm.all_gather(value, dim=dim, groups=groups, output=output, pin_layout=pin_layout)

    def reduce_scatter(
        self, reduce_type, input, scale, scatter_dim, shard_count, groups=None, output=None, pin_layout=True
    ):
        DEVICE_TOUCH.note("xm.reduce_scatter()")
        return _xm.reduce_scatter(
            reduce_type, input, scale, scatter_dim, shard_count, groups=groups, output=output, pin_layout=pin_layout
        )

    def all_to_all(self, value, split_dimension, concat_dimension, split_count, groups=None, pin_layout=True):
        DEVICE_TOUCH.note("xm.all_to_all()")
        return _xm.all_to_all(
            value, split_dimension, concat_dimension, split_count, groups=groups, pin_layout=pin_layout
        )

    def collective_permute(self, value, pairs):
        DEVICE_TOUCH.note("xm.collective_permute()")
        return _xm.collective_permute(value, pairs)

    def rendezvous(self, tag, payload=b"", replicas=[], *, timeout=None, transport=None):
        transport = _transport(transport)
        ordinal, world = self.get_ordinal(), self.xrt_world_size()
        if world == 1:
            _host.participants_of(replicas, world)  # still reject ordinals outside the world
            return [payload]
        if transport == "xla":
            if _spmd():
                raise RendezvousError(
                    "the xla rendezvous transport does not synchronise processes "
                    "under SPMD (pytorch/xla#9479); use transport='host'"
                )
            return _xla_rendezvous(tag, payload, replicas)
        return _host.host_rendezvous(tag, payload, replicas, ordinal=ordinal, world_size=world, timeout=timeout)


PJRT = _PjrtBackend()


def backend() -> Backend:
    """The backend serving this call: CPU replicas while that mode is on, else PJRT."""
    return _cpu_collectives if _cpu_placement.active() else PJRT


# --- ordinals ---------------------------------------------------------------------------
def xrt_world_size(defval: int = 1) -> int:
    """The number of replicas; ``defval`` before the runtime has started."""
    return backend().xrt_world_size(defval)


def get_ordinal(defval: int = 0) -> int:
    """This thread's replica id; ``defval`` before the runtime has started."""
    return backend().get_ordinal(defval)


def get_local_ordinal(defval: int = 0) -> int:
    """This thread's index among this host's replicas; ``defval`` before the runtime starts."""
    return backend().get_local_ordinal(defval)


def is_master_ordinal(local: bool = True) -> bool:
    return (get_local_ordinal() if local else get_ordinal()) == 0


def master_print(*args: Any, fd: TextIO = sys.stdout, local: bool = False, flush: bool = False) -> None:
    if is_master_ordinal(local=local):
        print(*args, file=fd, flush=flush)


# --- devices ----------------------------------------------------------------------------
def xla_device(n: int | None = None, devkind: str | None = None) -> torch.device:
    """The XLA device of this thread (or device ``n``). ``devkind`` is accepted and ignored:
    PJRT serves one device kind per process (``PJRT_DEVICE``)."""
    DEVICE_TOUCH.note("xm.xla_device()")
    return _device(n)


# XRT's name for a device kind -> PJRT_DEVICE's (XRT called CUDA devices GPU).
_DEVICE_KINDS = {"GPU": "CUDA"}


def get_xla_supported_devices(devkind: str | None = None, max_devices: int | None = None) -> list[str] | None:
    """['xla:0', ...]; None when ``devkind`` names a kind this process does not run (as XRT)."""
    if devkind:
        wanted = _DEVICE_KINDS.get(devkind.upper(), devkind.upper())
        if wanted != _DEVICE_KINDS.get((_xr.device_type() or "").upper(), (_xr.device_type() or "").upper()):
            return None
    DEVICE_TOUCH.note("xm.get_xla_supported_devices()")
    return _xm.get_xla_supported_devices(max_devices=max_devices)


def parse_xla_device(device: str) -> tuple[str, int] | None:
    """'TPU:3' -> ('TPU', 3), as XRT's; None for anything else."""
    kind, _, index = device.partition(":")
    if kind in ("CPU", "TPU", "GPU", "CUDA") and index.isdigit():
        return kind, int(index)
    return None


def send_cpu_data_to_device(data=None, device=None, input_sharding=None, *, datas=None):
    """Copy the CPU tensors in ``data`` (any nesting) to ``device``. As under XRT a tensor
    comes back as a tensor (torch_xla 2.x returns a one-element list); ``datas=`` (the 2.x
    keyword) gets torch_xla's own result."""
    if (data is None) == (datas is None):
        raise TypeError("send_cpu_data_to_device() takes the data once: data= (XRT) or datas= (torch_xla 2.x)")
    if device is None:
        raise TypeError("send_cpu_data_to_device() missing the device")
    moved = _xm.send_cpu_data_to_device(data if datas is None else datas, device, input_sharding)
    return moved[0] if datas is None and isinstance(data, torch.Tensor) else moved


def mark_step(wait: bool = False, reset_scope: bool = True) -> None:
    DEVICE_TOUCH.note("xm.mark_step()")
    if reset_scope:
        _sync(wait)
    else:  # only torch_xla >= 2.8 knows reset_scope
        _sync(wait, reset_scope)


# --- collectives ------------------------------------------------------------------------
class CollectiveContext:
    """XRT's precomputed context for collectives (``xm.CollectiveContext(groups)``).

    XRT used it to split a reduction between the devices of a host and torch.distributed
    across hosts. Under PJRT every collective is one XLA op across all replicas, so what is
    left is the groups: a collective given ``cctx=`` and no ``groups`` runs over
    ``cctx.intercore_group``, as XRT's all_reduce did.
    """

    def __init__(self, groups=None):
        self.world_size = xrt_world_size()
        self.ordinal = get_ordinal()
        self.replica_devcount = self.world_size
        self.intercore_group = _args.replica_groups(groups, self.world_size) if groups else []
        self.requires_intercore_reduce = self.world_size > 1
        self.requires_interhost_reduce = False  # XLA reduces across hosts itself


def _groups(groups, cctx: CollectiveContext | None = None) -> list[list[int]]:
    if groups is None and cctx is not None:
        groups = cctx.intercore_group or None
    return _args.replica_groups(groups, xrt_world_size())


def _torch_xlas_own_under_spmd(function):
    """Under SPMD a collective's groups name devices of the one SPMD program, not replicas:
    the call goes to torch_xla's function as it is (``cctx`` dropped)."""
    upstream = getattr(_xm, function.__name__)
    signature = inspect.signature(function)

    @functools.wraps(function)
    def call(*args, **kwargs):
        if not _spmd():
            return function(*args, **kwargs)
        arguments = signature.bind(*args, **kwargs)
        arguments.apply_defaults()
        passed = {name: value for name, value in arguments.arguments.items() if name != "cctx"}
        return upstream(**passed)

    return call


@_torch_xlas_own_under_spmd
def all_reduce(reduce_type: str, inputs, scale: float = 1.0, groups=None, cctx=None, pin_layout: bool = True):
    """Reduce ``inputs`` (a tensor, returned reduced; or a list, reduced in place and
    returned) across each replica group (``cctx``'s when ``groups`` is None)."""
    return backend().all_reduce(
        _args.reduce_type(reduce_type), inputs, scale=scale, groups=_groups(groups, cctx), pin_layout=pin_layout
    )


@_torch_xlas_own_under_spmd
def all_gather(value, dim: int = 0, groups=None, output=None, pin_layout: bool = True, *, cctx=None):
    """Concatenate every group member's ``value`` along ``dim``, in ordinal (group) order.
    ``value`` may be a list of tensors (one result per tensor)."""
    explicit = _groups(groups, cctx)
    if isinstance(value, (list, tuple)) and pin_layout and output is None:
        # torch_xla has no pinned coalesced all_gather: gather each tensor pinned.
        return [backend().all_gather(v, dim=dim, groups=explicit, pin_layout=True) for v in value]
    return backend().all_gather(value, dim=dim, groups=explicit, output=output, pin_layout=pin_layout)


@_torch_xlas_own_under_spmd
def reduce_scatter(
    reduce_type: str,
    input,
    scale: float,
    scatter_dim: int,
    shard_count: int,
    groups=None,
    output=None,
    pin_layout: bool = True,
    *,
    cctx=None,
):
    """Reduce across the group, then give the k-th member of the group shard k."""
    explicit = _groups(groups, cctx)
    size = _args.uniform_group_size(explicit)
    if shard_count != size:
        raise _args.CollectiveArgumentError(
            f"reduce_scatter shard_count={shard_count} but each replica group has {size} members"
        )
    return backend().reduce_scatter(
        _args.reduce_type(reduce_type),
        input,
        scale,
        scatter_dim,
        shard_count,
        groups=explicit,
        output=output,
        pin_layout=pin_layout,
    )


@_torch_xlas_own_under_spmd
def all_to_all(
    value,
    split_dimension: int,
    concat_dimension: int,
    split_count: int,
    groups=None,
    pin_layout: bool = True,
    *,
    cctx=None,
):
    """Split ``value`` into ``split_count`` chunks; chunk j goes to the j-th group member."""
    explicit = _groups(groups, cctx)
    size = _args.uniform_group_size(explicit)
    if split_count != size:
        raise _args.CollectiveArgumentError(
            f"all_to_all split_count={split_count} but each replica group has {size} members"
        )
    return backend().all_to_all(
        value, split_dimension, concat_dimension, split_count, groups=explicit, pin_layout=pin_layout
    )


@_torch_xlas_own_under_spmd
def collective_permute(value, pairs: Sequence[Sequence[int]], *, cctx=None):
    """Send ``value`` from each source ordinal to its target ordinal; others receive zeros."""
    return backend().collective_permute(value, _args.source_target_pairs(pairs, xrt_world_size()))


@_torch_xlas_own_under_spmd
def collective_broadcast(
    tensors: list[torch.Tensor], root_ordinal: int = 0, groups=None, pin_layout: bool = True, *, cctx=None
) -> None:
    """Overwrite ``tensors`` in place with the values on ``root_ordinal``."""
    if not 0 <= root_ordinal < xrt_world_size():
        raise _args.CollectiveArgumentError(f"root_ordinal {root_ordinal} is outside a world of {xrt_world_size()}")
    with torch.no_grad():
        for tensor in tensors:
            # Same graph on every replica: multiply by a device value, 1 on the root, 0 elsewhere.
            # (sent as device data, not baked in as a constant that would differ per replica)
            keep = torch.tensor(1 if get_ordinal() == root_ordinal else 0, dtype=tensor.dtype)
            tensor.mul_(_xm.send_cpu_data_to_device(keep, tensor.device)[0])
    all_reduce("sum", tensors, groups=groups, cctx=cctx, pin_layout=pin_layout)


def broadcast_master_param(model: torch.nn.Module) -> None:
    """Give every replica ordinal 0's parameters and buffers (threads start from different
    random weights on v2/v3)."""
    collective_broadcast(list(model.parameters()) + list(model.buffers()))
    mark_step()


# --- training steps ---------------------------------------------------------------------
@_torch_xlas_own_under_spmd
def reduce_gradients(optimizer: torch.optim.Optimizer, groups=None, pin_layout: bool = True) -> None:
    """Average the gradients the optimizer holds across all replicas."""
    count = xrt_world_size()
    if count > 1:
        all_reduce("sum", _xm._fetch_gradients(optimizer), scale=1.0 / count, groups=groups, pin_layout=pin_layout)


@_torch_xlas_own_under_spmd
def optimizer_step(
    optimizer: torch.optim.Optimizer,
    barrier: bool = False,
    optimizer_args: dict = {},
    groups=None,
    pin_layout: bool = True,
):
    """reduce_gradients, then ``optimizer.step(**optimizer_args)``; ``barrier`` adds a mark_step."""
    reduce_gradients(optimizer, groups=groups, pin_layout=pin_layout)
    loss = optimizer.step(**optimizer_args)
    if barrier:
        mark_step()
    return loss


# --- host-side meeting points -----------------------------------------------------------
def rendezvous(
    tag: str,
    payload: bytes = b"",
    replicas: Sequence[int] = [],
    *,
    timeout: float | None = None,
    transport: str | None = None,
) -> list[bytes]:
    """Wait until every replica in ``replicas`` (all if empty) reached ``tag``; return their
    payloads in ordinal order.

    ``timeout`` seconds (default ``XRT2PJRT_RENDEZVOUS_TIMEOUT``, else 300) ends in
    ``RendezvousTimeout`` naming the replicas that never arrived; participants that gave
    different tags get ``RendezvousTagMismatch``. ``transport``: 'host' (default) or 'xla',
    see the module docstring; the CPU replica mode always meets on the host.
    """
    if isinstance(payload, str):
        payload = payload.encode()
    payload = bytes(payload)
    chosen = backend()
    if chosen is PJRT:
        return PJRT.rendezvous(tag, payload, replicas, timeout=timeout, transport=transport)
    return chosen.rendezvous(tag, payload, replicas, timeout=timeout)


def mesh_reduce(tag: str, data, reduce_fn: Callable[[list], Any]):
    """Exchange ``data`` (tensors moved to the CPU) with every replica and return
    ``reduce_fn(list of every replica's data, in ordinal order)``."""
    cpu_data = _xm._maybe_convert_to_cpu(data)
    buffer = io.BytesIO()
    torch.save(cpu_data, buffer)
    received = rendezvous(tag, buffer.getvalue())
    # The payloads come from this job's own replicas: full unpickling is safe and needed
    # for the numbers and numpy values mesh_reduce is typically given.
    return reduce_fn([torch.load(io.BytesIO(raw), weights_only=False) for raw in received])


def do_on_ordinals(target: Callable[..., Any], data=(), ordinals=(0,)):
    """Run ``target(*data)`` on ``ordinals`` only (tensors moved to the CPU), then meet."""
    running = get_ordinal() in ({ordinals} if isinstance(ordinals, int) else set(ordinals))
    cpu_data = _xm._maybe_convert_to_cpu(data, convert=running)
    result = target(*cpu_data) if running else None
    rendezvous("torch_xla.core.xla_model.do_on_ordinals")
    return result


def save(data, file_or_path, master_only: bool = True, global_master: bool = False) -> None:
    """Save ``data`` (moved to the CPU) from the master, then meet every replica, as XRT
    did: readers that load the file after ``xm.save`` returns find it complete."""
    writes = not master_only or is_master_ordinal(local=not global_master)
    cpu_data = _xm._maybe_convert_to_cpu(data, convert=writes)
    if writes:
        torch.save(cpu_data, file_or_path)
    rendezvous("torch_xla.core.xla_model.save")


# --- rendezvous transports --------------------------------------------------------------
def _transport(requested: str | None) -> str:
    """``transport=`` when given, else ``XRT2PJRT_RENDEZVOUS_TRANSPORT``, else 'host'."""
    setting = _settings.RENDEZVOUS_TRANSPORT
    return setting.parse(setting.name, requested) if requested else setting.read()


def _xla_rendezvous(tag: str, payload: bytes, replicas: Sequence[int]) -> list[bytes]:
    """Payload exchange by two all_gathers on the devices (sizes, then padded messages).

    Like upstream's ``xla_rendezvous`` it syncs the graph and joins every replica; unlike
    it the results are in ordinal order by construction and the tags are compared.
    """
    world = xrt_world_size()
    if replicas and sorted(replicas) != list(range(world)):
        raise RendezvousError(
            f"the xla rendezvous transport joins every replica; replicas={list(replicas)} needs transport='host'"
        )
    message = _host._encode(tag, payload)
    mark_step()
    device = xla_device()
    size = torch.tensor([len(message)], dtype=torch.int32, device=device)
    sizes = all_gather(size).cpu().tolist()
    data = torch.zeros(max(sizes), dtype=torch.uint8)
    data[: len(message)] = torch.frombuffer(bytearray(message), dtype=torch.uint8)
    gathered = all_gather(data.to(device)).cpu().view(world, max(sizes))
    mark_step()
    arrivals = [_host._decode(bytes(row[:n].tolist())) for row, n in zip(gathered, sizes)]
    tags = {ordinal: arrived_tag for ordinal, (arrived_tag, _) in enumerate(arrivals)}
    if len(set(tags.values())) > 1:
        raise RendezvousTagMismatch(_host._describe_mismatch(tags, get_ordinal()))
    return [arrived_payload for _, arrived_payload in arrivals]


# --- everything else passes through -----------------------------------------------------
def __getattr__(name: str):
    try:
        return getattr(_xm, name)
    except AttributeError:
        raise AttributeError(
            f"module {__name__!r} has no attribute {name!r}, and neither has "
            f"torch_xla.core.xla_model {torch_xla.__version__}"
        ) from None


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(dir(_xm)))


__all__ = sorted(set(_OWN) | {name for name in dir(_xm) if not name.startswith("_")})
