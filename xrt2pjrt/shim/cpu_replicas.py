"""CPU multi-replica mode: an N-replica XLA program on CPU, one process per replica.

torch_xla 2.9 cannot run two replicas on CPU (with ``CPU_NUM_DEVICES>=2`` every
collective aborts in XLA's CPU rendezvous, and several ``PJRT_DEVICE=CPU`` processes are
several worlds of size 1). This mode lets the distributed logic of a TPU program --
sharding by ordinal, gradient all-reduce, rendezvous, mesh_reduce -- run on a laptop or
in CI, with the results a TPU pod gives:

* :func:`spawn` starts N processes, each a real single-device PJRT CPU replica
  (``PJRT_DEVICE=CPU CPU_NUM_DEVICES=1``), and calls ``fn(ordinal, *args)`` in each;
* the XRT-era functions below (the backend signatures of the shim's ``xla_model``) span the N
  processes: ordinals and world size come from this mode, and every collective moves
  its inputs to the host, exchanges them with torch.distributed's gloo backend over a
  key-value store served by the parent (``store``: only the job's processes get in),
  computes XLA's result for this replica, and moves it back to the XLA device;
* torch_xla's own API answers from the same world inside every replica
  (:mod:`xrt2pjrt.shim.replica_world`, applied before ``fn`` runs).

How to ask for it: ``xmp.spawn(fn, nprocs=N)`` with ``PJRT_DEVICE=CPU`` and N > 1; or,
for XRT-era programs that pass ``nprocs=None``, ``XRT2PJRT_CPU_REPLICAS=N``; or, for any
torch_xla program, ``xrt2pjrt run --nprocs N SCRIPT`` (:mod:`xrt2pjrt.run`).

Several "hosts" (as on a pod, each runs the same program): set ``XRT2PJRT_CPU_HOSTS``
(host count) and ``XRT2PJRT_CPU_HOST_INDEX`` (this host) on every host, and point every
host at host 0 with ``MASTER_ADDR`` (the rendezvous store's address; the port is the
rendezvous module's: ``XRT2PJRT_RENDEZVOUS_PORT`` or ``MASTER_PORT + 1``), and give every
host the same ``XRT2PJRT_JOB_SECRET`` (only its holders get in). Host h's local
replica i has ordinal ``h * nprocs + i``, as torch_xla numbers a pod's processes.
``XRT2PJRT_CPU_HOST_ADDR`` names this host's address for gloo when the route to
``MASTER_ADDR`` does not pick the right one.

One mechanism serves every collective: gather every group member's bytes (one gloo
allgather per call), then compute XLA's result locally in group order. That moves N times
the data of a ring algorithm, so reductions, where the data is large (gradients), take
the ring's traffic instead: a gloo all-to-all hands member p the p-th chunk of everyone's
values, p folds its chunk, and a gloo allgather hands every member every folded chunk.
Either way each element is folded in group order, so every member gets a bit-identical
result (data-parallel replicas keep identical weights) with XLA's semantics for each
reduce type (bitwise and/or, NaN-propagating min/max, the scale converted to the element
type). Unlike XLA each collective syncs the graph of its inputs (one execution per call);
``pin_layout`` changes no result, so it only selects torch_xla's all_reduce-based
all_gather, which is kept for identical results.

Faults: a replica that raises or dies makes the parent end the others and raise
:class:`ReplicaFailed` naming the replica and its exit code; across hosts the failure is
posted to the store so the other hosts' parents end theirs too. Collectives and
rendezvous give up after ``XRT2PJRT_RENDEZVOUS_TIMEOUT`` seconds (default 300).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import datetime
import json
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from xrt2pjrt.shim import collective_args
from xrt2pjrt.shim import rendezvous as host_rendezvous_module
from xrt2pjrt.shim import settings
from xrt2pjrt.shim.store import client as store_client
from xrt2pjrt.shim.store.protocol import StoreAborted
from xrt2pjrt.shim.store.secret import job_secret, new_secret
from xrt2pjrt.shim.store.server import StoreServer, listen

_ABORT_KEY = "xrt2pjrt/cpu_replicas/abort"
_RETURNED_KEY = "xrt2pjrt/cpu_replicas/returned"  # replicas whose function returned
_FINISHED_KEY = "xrt2pjrt/cpu_replicas/finished"  # replicas done with the store, about to exit
_ALIVE_KEY = "xrt2pjrt/cpu_replicas/alive"  # /host: each host's supervisor counts up as it polls
_BEAT_SECONDS = 1.0
_TERMINATE_GRACE_SECONDS = 2.0
_POLL_SECONDS = 0.2


class ReplicaFailed(RuntimeError):
    """A replica raised, exited non-zero or was killed; the others were ended."""

    def __init__(self, message: str, ordinal: int, exitcode: int | None):
        super().__init__(message)
        self.ordinal = ordinal
        self.exitcode = exitcode


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where one replica runs and how it reaches the others."""

    ordinal: int
    world_size: int
    local_ordinal: int
    local_world_size: int
    host: int
    hosts: int
    store_host: str
    store_port: int
    gloo_addr: str

    def to_env(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_env(cls, text: str) -> Placement:
        return cls(**json.loads(text))


# --- asking for the mode --------------------------------------------------------------
def active() -> bool:
    """True inside a replica process started by :func:`spawn`."""
    return settings.CPU_REPLICA.text() != ""  # set by spawn in each replica process


def requested(nprocs: int | None) -> bool:
    """Should ``xmp.spawn(fn, nprocs=nprocs)`` use this mode?

    Yes with ``PJRT_DEVICE=CPU`` and ``nprocs > 1``, or ``nprocs=None`` and
    ``XRT2PJRT_CPU_REPLICAS > 1``, or several hosts (``XRT2PJRT_CPU_HOSTS``); never from
    inside a replica.
    """
    if active() or os.environ.get("PJRT_DEVICE", "").strip().upper() != "CPU":
        return False
    return _replica_count(nprocs) * _Hosts.from_env().count > 1


def _replica_count(nprocs: int | None) -> int:
    if nprocs is not None:
        return int(nprocs)
    return host_replicas() or 1


def host_replicas() -> int | None:
    """``XRT2PJRT_CPU_REPLICAS``: the CPU host's devices, one replica each (None when unset)."""
    return settings.CPU_REPLICAS.read()


# --- ordinals -------------------------------------------------------------------------
_placement_cache: Placement | None = None


def placement() -> Placement:
    """This replica's placement (only inside a replica)."""
    global _placement_cache
    text = settings.CPU_REPLICA.text()
    if not text:
        raise RuntimeError("not inside a CPU replica started by xrt2pjrt's CPU multi-replica mode")
    if _placement_cache is None or _placement_cache.to_env() != text:
        _placement_cache = Placement.from_env(text)
    return _placement_cache


def get_ordinal(defval: int = 0) -> int:
    return placement().ordinal if active() else defval


def xrt_world_size(defval: int = 1) -> int:
    return placement().world_size if active() else defval


def get_local_ordinal(defval: int = 0) -> int:
    return placement().local_ordinal if active() else defval


# --- the transport: one gloo group per replica group ------------------------------------
class _Transport:
    """This process's connection to the store and its gloo groups (made lazily)."""

    def __init__(self, where: Placement):
        from torch.distributed import PrefixStore

        self.placement = where
        self.timeout = settings.RENDEZVOUS_TIMEOUT.read()
        self.store = store_client.for_this_job(where.store_host, where.store_port, timeout=self.timeout)
        self._pg_store = PrefixStore("xrt2pjrt/cpu_replicas/gloo", store_client.c10d_store(self.store.clone()))
        self._groups: dict[tuple[int, ...], Any] = {}
        self._scratch = None

    def exchange(self, members: Sequence[int], messages, tag: int) -> None:
        """Send and receive at once: ``messages`` are (peer's position in ``members``,
        tensor to send it, tensor to receive its message into)."""
        group, wait = self.group(members), datetime.timedelta(seconds=self.timeout)
        works = [group.recv([_bytes(into)], peer, tag) for peer, _, into in messages]
        works += [group.send([_bytes(out)], peer, tag) for peer, out, _ in messages]
        for work in works:
            work.wait(wait)

    def scratch(self, like):
        """A buffer shaped like ``like`` for this call only, reused across calls (a fresh one
        would cost a page fault per 4 KB)."""
        import torch

        needed = like.numel() * like.element_size()
        if self._scratch is None or self._scratch.numel() < needed:
            self._scratch = _fresh(needed, torch.uint8)
        return self._scratch[:needed].view(like.dtype).view(like.shape)

    def group(self, members: Sequence[int]):
        """The gloo process group of ``members``; every member creates it on first use."""
        key = tuple(members)
        if key not in self._groups:
            from torch.distributed import PrefixStore, ProcessGroupGloo

            options = ProcessGroupGloo._Options()
            options._timeout = datetime.timedelta(seconds=self.timeout)
            # Connect the whole group up front: with lazy connections gloo's constructor
            # prints "Rank r is NOT connected to: [...]" on stdout, which reads as a failure.
            options._devices = [ProcessGroupGloo.create_device(hostname=self.placement.gloo_addr)]
            store = PrefixStore(",".join(map(str, key)), self._pg_store)
            # Every member first arrives, so that the constructor only connects (milliseconds):
            # it prints "[Gloo] Rank r is connected to k peer ranks..." on stdout, which
            # goes to stderr meanwhile, and so does what another thread writes to fd 1 then.
            if store.add("xrt2pjrt/arrived", 1) == len(key):
                store.set("xrt2pjrt/all arrived", b"")
            store.get("xrt2pjrt/all arrived")
            with _stdout_into_stderr():
                self._groups[key] = ProcessGroupGloo(store, key.index(self.placement.ordinal), len(key), options)
        return self._groups[key]


_redirect_lock = threading.Lock()
_redirects = 0  # threads inside _stdout_into_stderr
_real_stdout: int | None = None  # a duplicate of fd 1 while it is fd 2


@contextlib.contextmanager
def _stdout_into_stderr():
    """fd 1 is fd 2 inside (and fd 1 again after, however the block ends): a replica's stdout
    holds what the program prints, not what gloo's C++ prints there. Threads may nest it."""
    global _redirects, _real_stdout
    with _redirect_lock:
        if _redirects == 0:
            _flush_stdout()  # what was printed so far goes to stdout, in order
            try:
                _real_stdout = os.dup(1)
                os.dup2(2, 1)
            except OSError:  # no fd 1 or 2: nothing to keep clean, or nowhere else to write
                if _real_stdout is not None:
                    os.close(_real_stdout)
                _real_stdout = None
        _redirects += 1
    try:
        yield
    finally:
        with _redirect_lock:
            _redirects -= 1
            if _redirects == 0 and _real_stdout is not None:
                _flush_stdout(python=False)  # C's buffer, written meanwhile, goes to stderr
                os.dup2(_real_stdout, 1)
                os.close(_real_stdout)
                _real_stdout = None


def _flush_stdout(python: bool = True) -> None:
    if python and sys.stdout is not None:
        try:
            sys.stdout.flush()
        except (OSError, ValueError):  # closed or broken: nothing of it can reach fd 1 anyway
            pass
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)  # C's stdio (and C++'s std::cout, synced with it)
    except (OSError, AttributeError):
        pass


_transport: _Transport | None = None
_transport_lock = threading.Lock()


def _world() -> _Transport:
    global _transport
    with _transport_lock:
        if _transport is None or _transport.placement != placement():
            _transport = _Transport(placement())
        return _transport


def store():
    """A connection of this thread's own to the replica mode's store (torch.distributed's
    ``xla://`` init method uses it instead of serving a store of its own)."""
    return store_client.c10d_store(_world().store.clone())


def _exchange(tensors: Sequence, members: Sequence[int]) -> list[list]:
    """Every member's host copy of ``tensors``, in the order ``members`` lists them.

    The tensors travel as raw bytes in one buffer, so every dtype (bool, bfloat16, ...)
    goes through one gloo allgather of uint8.
    """
    import torch

    host = _to_host(tensors)
    if len(members) == 1:
        return [host]
    flat = torch.cat([t.reshape(-1).view(torch.uint8) for t in host]) if host else torch.empty(0, dtype=torch.uint8)
    received = [torch.empty_like(flat) for _ in members]
    _world().group(members).allgather([received], [flat]).wait(datetime.timedelta(seconds=_world().timeout))
    sizes = [t.numel() * t.element_size() for t in host]
    result = []
    for buffer in received:
        parts = torch.split(buffer, sizes) if sizes else []
        result.append([p.view(t.dtype).reshape(t.shape) for p, t in zip(parts, host)])
    return result


def _to_host(tensors: Sequence) -> list:
    """The tensors' values on the host, to be read only (they may share an input's memory).
    XLA tensors come over in one graph execution."""
    xla = [t for t in tensors if t.device.type == "xla"]
    fetched = iter(_xla_to_host(xla)) if xla else iter(())
    return [next(fetched) if t.device.type == "xla" else t.detach() for t in tensors]


def _xla_to_host(tensors: list) -> list:
    """A PJRT CPU buffer is host memory: after the sync, torch_xla's DLPack export lends it
    without a copy (a copy where a tensor has no buffer of its own)."""
    import torch
    import torch_xla

    torch_xla._XLAC._xla_sync_multi(tensors, devices=[], wait=True)
    try:
        torch_xla._XLAC._get_tensors_handle(tensors)  # raises for a tensor without a buffer
    except RuntimeError:
        return torch_xla._XLAC._xla_get_cpu_tensors(tensors)
    return [torch.utils.dlpack.from_dlpack(torch_xla._XLAC._to_dlpack(t)) for t in tensors]


def _on_device(result, like):
    """``result`` (host memory of its own, shared with nothing) on ``like``'s device: XLA's
    CPU client takes it over without a copy where it is compact and 64-byte aligned."""
    import torch

    if like.device.type != "xla":
        return result
    import torch_xla

    if result.is_contiguous() and result.data_ptr() % 64 == 0:  # torch_xla 2.8 aborts on unaligned memory
        try:
            return torch_xla._XLAC._from_dlpack(torch.utils.dlpack.to_dlpack(result))
        except RuntimeError:  # a layout XLA does not take over (strides it calls not compact): copied
            pass
    return result.to(like.device)


# --- collectives (XRT-era signatures) -----------------------------------------------------
def _my_group(groups, what: str) -> list[int]:
    ordinal = get_ordinal()
    explicit = collective_args.replica_groups(groups, xrt_world_size())
    for group in explicit:
        if ordinal in group:
            return group
    raise collective_args.CollectiveArgumentError(f"{what}: ordinal {ordinal} is in none of the groups {explicit}")


def _fold(reduce_type: str, values: list, scale: float, out=None):
    """XLA's AllReduce of ``values`` (in group order), then its scale, written to ``out``
    (which may be ``values[0]``) or to new memory."""
    import torch

    kind = collective_args.reduce_type(reduce_type)
    if kind in ("and", "or") and (values[0].is_floating_point() or values[0].is_complex()):
        # XLA's And/Or are bitwise: its compiler rejects floating point operands.
        raise TypeError(f"all_reduce {kind!r} needs integer or bool tensors, not {values[0].dtype}")
    combine = {
        "sum": torch.add,
        "mul": torch.mul,
        "and": torch.bitwise_and,
        "or": torch.bitwise_or,
        "min": torch.minimum,
        "max": torch.maximum,
    }[kind]
    result = torch.empty_like(values[0]) if out is None else out
    if len(values) == 1:
        result.copy_(values[0])
    else:
        combine(values[0], values[1], out=result)
        for value in values[2:]:
            combine(result, value, out=result)
    if scale != 1.0:
        # XLA multiplies by the scale converted to the element type (0.5 -> 0 for ints).
        result.mul_(torch.tensor(scale, dtype=result.dtype))
    return result


def _reduce(reduce_type: str, tensors: Sequence, scale: float, members: Sequence[int]) -> list:
    """XLA's AllReduce of every tensor; the tensors of one dtype travel as one buffer."""
    import torch

    host = _to_host(tensors)
    results: list = [None] * len(host)
    by_dtype: dict = {}
    for index, tensor in enumerate(host):
        by_dtype.setdefault(tensor.dtype, []).append(index)
    for indices in by_dtype.values():
        flat, offsets = _packed([host[i] for i in indices])
        reduced = _reduce_flat(reduce_type, flat, scale, members)
        for i, offset in zip(indices, offsets):
            results[i] = reduced[offset : offset + host[i].numel()].view(host[i].shape)
    return results


_ALIGN_BYTES = 64  # the alignment XLA's CPU client needs to take host memory over


def _packed(tensors: list) -> tuple:
    """One flat buffer of ``tensors`` (each starting 64-byte aligned), and their offsets."""
    import torch

    if len(tensors) == 1:
        return tensors[0].reshape(-1), [0]
    step = max(1, _ALIGN_BYTES // tensors[0].element_size())
    parts, offsets, position = [], [], 0
    for tensor in tensors:
        offsets.append(position)
        parts.append(tensor.reshape(-1))
        padding = -tensor.numel() % step
        if padding:
            parts.append(tensor.new_zeros(padding))
        position += tensor.numel() + padding
    return torch.cat(parts), offsets


def _reduce_flat(reduce_type: str, flat, scale: float, members: Sequence[int]):
    """Member p folds chunk p of every member's ``flat`` (in group order); then every member
    sends its folded chunk to every other. Point-to-point messages: on one machine they
    move faster than gloo's alltoall and allgather (bench/cpu_replicas.py)."""
    import torch

    size = len(members)
    if size == 1 or flat.numel() == 0:
        return _fold(reduce_type, [flat], scale)
    chunk = -(-flat.numel() // size)
    padded = torch.cat([flat, flat.new_zeros(chunk * size - flat.numel())]) if chunk * size != flat.numel() else flat
    transport = _world()
    me = members.index(get_ordinal())
    sent, received = padded.view(size, chunk), transport.scratch(padded).view(size, chunk)
    transport.exchange(members, [(q, sent[q], received[q]) for q in range(size) if q != me], tag=1)
    gathered = _fresh(padded.numel(), padded.dtype).view(size, chunk)  # the result's own memory (the XLA tensor's)
    _fold(reduce_type, [sent[q] if q == me else received[q] for q in range(size)], scale, out=gathered[me])
    transport.exchange(members, [(q, gathered[me], gathered[q]) for q in range(size) if q != me], tag=2)
    return gathered.view(-1)[: flat.numel()]


_HUGE_PAGE = 2 << 20
_MADV_HUGEPAGE = 14


def _fresh(count: int, dtype):
    """New memory for ``count`` elements, asked to come in 2 MB pages where Linux has them: a
    64 MB result otherwise takes 16,384 page faults while gloo writes it (a third of the
    time of a 64 MB all_reduce here). Advice only: nowhere else does anything change."""
    import torch

    tensor = torch.empty(count, dtype=dtype)
    start = -(-tensor.data_ptr() // _HUGE_PAGE) * _HUGE_PAGE
    end = (tensor.data_ptr() + tensor.numel() * tensor.element_size()) // _HUGE_PAGE * _HUGE_PAGE
    if end > start and sys.platform == "linux":
        import ctypes

        madvise = ctypes.CDLL(None).madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        madvise(start, end - start, _MADV_HUGEPAGE)
    return tensor


def _bytes(tensor):
    """The tensor's storage as uint8 (gloo moves any dtype as bytes: bool, bfloat16, ...)."""
    import torch

    return tensor.view(torch.uint8)


def _write(outputs: Sequence, results: Sequence) -> None:
    import torch

    with torch.no_grad():
        for output, result in zip(outputs, results):
            if output.device.type == "xla" and output.shape != result.shape:
                import torch_xla  # torch_xla's out=: the output takes the result, shape and all

                torch_xla._XLAC._replace_xla_tensor(output, _on_device(result, output))
            else:
                output.copy_(_on_device(result, output))


def all_reduce(reduce_type, inputs, scale=1.0, groups=None, pin_layout=True):
    """A tensor -> a new reduced tensor; a list -> reduced in place, the list returned."""
    import torch

    members = _my_group(groups, "all_reduce")
    single = isinstance(inputs, torch.Tensor)
    tensors = [inputs] if single else list(inputs)
    results = _reduce(reduce_type, tensors, scale, members)
    if single:
        return _on_device(results[0], inputs)
    _write(tensors, results)
    return inputs


def all_gather(value, dim=0, groups=None, output=None, pin_layout=True):
    """Group members' values concatenated along ``dim`` in group order."""
    import torch

    members = _my_group(groups, "all_gather")
    collective_args.uniform_group_size(collective_args.replica_groups(groups, xrt_world_size()))
    if isinstance(value, torch.Tensor):
        if pin_layout and output is None:
            return _all_gather_using_all_reduce(value, dim, members, groups)
        gathered = _exchange([value], members)
        result = torch.cat([member[0] for member in gathered], dim)
        if output is not None:
            _write([output], [result])
            return output
        return _on_device(result, value)
    if not (isinstance(value, list) and all(isinstance(v, torch.Tensor) for v in value)):
        raise TypeError(f"`value` needs to be a Tensor or a list of Tensors, but given {type(value)}.")
    if pin_layout:
        raise RuntimeError("For xm.all_gather with list of tensors input, pin_layout=True is not yet supported.")
    gathered = _exchange(value, members)
    results = [torch.cat([member[i] for member in gathered], dim) for i in range(len(value))]
    if output is not None:
        _check_output_list(output, value)
        _write(output, results)
        return output
    return [_on_device(r, v) for r, v in zip(results, value)]


def _all_gather_using_all_reduce(value, dim, members, groups):
    """torch_xla's pinned all_gather: zero-pad by group position, then all_reduce sum."""
    import torch.nn.functional as F

    dim = dim + value.dim() if dim < 0 else dim
    position, size = members.index(get_ordinal()), len(members)
    padding = [0] * (2 * value.dim())
    index = value.dim() - 1 - dim
    padding[2 * index] = position * value.size(dim)
    padding[2 * index + 1] = (size - 1 - position) * value.size(dim)
    return all_reduce("sum", F.pad(value, padding), groups=groups)


def _check_output_list(output, inputs) -> None:
    import torch

    if not isinstance(output, list) or any(not isinstance(v, torch.Tensor) for v in output):
        raise TypeError(f"`output` needs to be a list of Tensors, but given {type(output)}.")
    if len(output) != len(inputs):
        raise ValueError(f"`output` length doesn't match `input` length: {len(output)} vs {len(inputs)}.")


def reduce_scatter(reduce_type, input, scale, scatter_dim, shard_count, groups=None, output=None, pin_layout=True):
    """Reduce over the group, then group position p keeps shard p along ``scatter_dim``."""
    import torch

    members = _my_group(groups, "reduce_scatter")
    if shard_count != len(members):
        raise collective_args.CollectiveArgumentError(
            f"reduce_scatter: shard_count={shard_count} but the replica group has {len(members)} members"
        )
    single = isinstance(input, torch.Tensor)
    tensors = [input] if single else list(input)
    position = members.index(get_ordinal())
    shards = [_shard(r, scatter_dim, shard_count, position) for r in _reduce(reduce_type, tensors, scale, members)]
    if output is not None:
        outputs = [output] if single else output
        if not single:
            _check_output_list(output, tensors)
        _write(outputs, shards)
        return output
    placed = [_on_device(s, t) for s, t in zip(shards, tensors)]
    return placed[0] if single else placed


def _shard(tensor, dim: int, count: int, position: int):
    length = tensor.size(dim)
    if length % count:
        raise collective_args.CollectiveArgumentError(
            f"dimension {dim} of size {length} does not split into {count} equal shards"
        )
    return tensor.narrow(dim, position * (length // count), length // count).contiguous()


def all_to_all(value, split_dimension, concat_dimension, split_count, groups=None, pin_layout=True):
    """Chunk j of every member's ``split_dimension`` goes to member j, stacked in group order."""
    import torch

    members = _my_group(groups, "all_to_all")
    if split_count != len(members):
        raise collective_args.CollectiveArgumentError(
            f"all_to_all: split_count={split_count} but the replica group has {len(members)} members"
        )
    position = members.index(get_ordinal())
    gathered = _exchange([value], members)
    chunks = [_shard(member[0], split_dimension, split_count, position) for member in gathered]
    return _on_device(torch.cat(chunks, concat_dimension), value)


def collective_permute(value, pairs):
    """The value of the replica whose pair targets this one; zeros when none does."""
    import torch

    world = xrt_world_size()
    checked = collective_args.source_target_pairs(pairs, world)
    gathered = _exchange([value], list(range(world)))
    sources = [source for source, target in checked if target == get_ordinal()]
    result = gathered[sources[0]][0] if sources else torch.zeros_like(gathered[0][0])
    return result.to(value.device)


def rendezvous(tag, payload=b"", replicas=[], *, timeout=None):  # noqa: B006 -- XRT's signature
    """A real barrier with payload exchange; payloads in ordinal order."""
    return host_rendezvous_module.host_rendezvous(
        tag,
        payload,
        replicas or None,
        ordinal=get_ordinal(),
        world_size=xrt_world_size(),
        timeout=timeout,
        store=_world().store,
    )


# --- spawning and supervising -------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class _Hosts:
    count: int
    index: int

    @classmethod
    def from_env(cls) -> _Hosts:
        count, index = settings.CPU_HOSTS.read(), settings.CPU_HOST_INDEX.read()
        if count < 1 or not 0 <= index < count:
            raise ValueError(f"{settings.CPU_HOST_INDEX.name}={index} is not a host of "
                             f"{settings.CPU_HOSTS.name}={count}")
        return cls(count, index)


def _local_address_towards(host: str) -> str:
    """The address this machine uses to reach ``host`` (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect((host, 9))
        return probe.getsockname()[0]


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
    from xrt2pjrt.shim import replica_world

    replica_world.lift_launch_guard()  # under `xrt2pjrt run`: the launching process starts its replicas
    if start_method == "fork":
        _refuse_initialised_runtime()
    count = _replica_count(nprocs)
    _spawns += 1
    hosts = _Hosts.from_env()
    timeout = settings.RENDEZVOUS_TIMEOUT.read()
    if hosts.count == 1:
        # A free port picked by the OS: two runs on one machine never collide. The replicas
        # inherit the job's secret from this process's environment.
        os.environ.setdefault(settings.JOB_SECRET.name, new_secret())
        listening = listen("127.0.0.1", 0)
        store_host, store_port, gloo_addr = "127.0.0.1", listening.getsockname()[1], "127.0.0.1"
    else:
        if job_secret() is None:
            raise RuntimeError(f"{hosts.count} CPU hosts meet in a store that lets in only the job's processes: "
                               f"set {settings.JOB_SECRET.name} to the same random value on every host "
                               "(python -c 'import secrets; print(secrets.token_hex(16))')")
        store_host, store_port = host_rendezvous_module.store_address()
        listening = listen(store_host, store_port) if hosts.index == 0 else None
        gloo_addr = settings.CPU_HOST_ADDR.text() or _local_address_towards(store_host)

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
            target=_replica_main, args=(fn, args, where, writer), name=f"xrt2pjrt-cpu-replica-{where.ordinal}"
        )
        process.start()
        writer.close()
        replicas.append(_Replica(where, process, reader))
    # The store's server and client start threads; forking after that can hand a child a
    # lock held by one of them (seen: the resolver lock, inside a store client's connect). So the
    # store comes up only after the last fork; the replicas retry until it answers.
    try:
        if listening is not None:
            StoreServer(listening, job_secret())  # its threads keep it while this process runs
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


def _wait_for_every_replica(world_size: int) -> None:
    """Leave only once every replica's function has returned, so that no replica closes its
    gloo sockets while a peer still reads from them. With no deadline: on a pod a replica
    that returned waits for nobody, and the master's own work after the last collective
    (a final evaluation, an upload) may take longer than any rendezvous timeout. A replica
    that dies instead ends the run through the supervisor, which ends this one too."""
    where = placement()
    store = _world().store
    alive = _HostsAlive(store, where.hosts, _world().timeout)
    store.add(_RETURNED_KEY, 1)
    while int(store.add(_RETURNED_KEY, 0)) < world_size and not store.check([_ABORT_KEY]):
        if (host := alive.dead()) is not None:
            raise RuntimeError(alive.says(host))
        time.sleep(_POLL_SECONDS)


class _HostsAlive:
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
            count = int(self.store.add(f"{_ALIVE_KEY}/{host}", 0))
            if host not in self.seen or self.seen[host][0] != count:
                self.seen[host] = (count, now)
            elif now - self.seen[host][1] > self.timeout:
                return host
        return None

    def says(self, host: int) -> str:
        return (f"CPU host {host} stopped answering for {self.timeout:g}s: its launcher ended without a word "
                f"(killed, or its machine lost); set {settings.RENDEZVOUS_TIMEOUT.name} to wait longer")


def _replica_main(fn: Callable, args: tuple, where: Placement, report) -> None:
    """Entry point of a replica process."""
    _die_with_parent()
    os.environ.update(PJRT_DEVICE="CPU", CPU_NUM_DEVICES="1", **{settings.CPU_REPLICA.name: where.to_env()})
    try:
        _share_the_cores(where.local_world_size)
        from xrt2pjrt.shim import replica_world

        replica_world.enter()  # torch_xla's own API now sees the N replicas too
        try:
            result = _in_a_thread(fn, where.ordinal, *args)
        except SystemExit as stop:
            if stop.code not in (0, None):
                raise
            result = None  # sys.exit(0): a replica that finished
        _wait_for_every_replica(where.world_size)
        _world().store.add(_FINISHED_KEY, 1)  # tell host 0 this replica is done with its store
    except BaseException as error:  # noqa: BLE001 -- reported to the parent, then a non-zero exit
        _send(report, ("error", traceback.format_exc(), time.time()))
        report.close()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_exit_code(error))
    try:
        _send(report, ("ok", result))
    except (pickle.PicklingError, TypeError, AttributeError):
        _send(report, ("ok", None))
    report.close()


def _in_a_thread(fn: Callable, *args: Any) -> Any:
    """``fn(*args)`` in a thread of its own, as torch_xla's spawn runs the replica's function
    on a TPU (a thread per device, even for one): code that needs the main thread there
    (``signal.signal`` raises ValueError) fails here too, where it ran in the main thread and
    passed."""
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


def _send(report, message) -> None:
    try:
        report.send(message)
    except (BrokenPipeError, OSError):
        pass  # the parent is gone or ending us: nothing left to tell


@dataclasses.dataclass
class _Replica:
    placement: Placement
    process: multiprocessing.process.BaseProcess
    reader: multiprocessing.connection.Connection
    report: tuple | None = None

    def describe(self) -> str:
        where = self.placement
        host = f" on host {where.host}" if where.hosts > 1 else ""
        return f"CPU replica {where.ordinal}{host} (pid {self.process.pid})"


class _Supervisor:
    """Joins the local replicas; on the first failure ends them all and raises."""

    def __init__(self, replicas: list[_Replica], store, hosts: _Hosts, timeout: float = 0.0):
        self.replicas = replicas
        self.store = store
        self.hosts = hosts
        # the rendezvous timeout: what the others get to end by themselves after a failure,
        # and how long a host may go silent (_HostsAlive)
        self.timeout = timeout
        self._beaten = 0.0  # when this host last counted up in the store (_HostsAlive)

    def _beat(self) -> None:
        if self.hosts.count == 1 or time.monotonic() - self._beaten < _BEAT_SECONDS:
            return
        self._beaten = time.monotonic()
        try:
            self.store.add(f"{_ALIVE_KEY}/{self.hosts.index}", 1)
        except Exception:  # noqa: BLE001 -- host 0's store is gone: its replicas report it
            pass

    def join(self) -> dict[int, Any]:
        try:
            while any(r.process.exitcode is None for r in self.replicas):
                waitables = [r.process.sentinel for r in self.replicas if r.process.exitcode is None]
                waitables += [r.reader for r in self.replicas if r.report is None]
                multiprocessing.connection.wait(waitables, timeout=_POLL_SECONDS)
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
            return {r.placement.ordinal: r.report[1] for r in self.replicas}
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
            if replica.report is None and replica.reader.poll():
                try:
                    replica.report = replica.reader.recv()
                except (EOFError, OSError):
                    replica.report = ("died", None)

    def _local_failure(self) -> ReplicaFailed | None:
        exited = [r for r in self.replicas if r.process.exitcode is not None]
        self._read_reports()  # after looking at exit codes: a replica reports before it exits
        # A replica that died without a report (killed, os._exit) caused whatever errors
        # its peers then reported, so it is named first; else the first reported error.
        for replica in exited:
            code = replica.process.exitcode
            if replica.report is None or replica.report[0] == "died":
                if code < 0:
                    how = f"was killed by {signal.Signals(-code).name}"
                else:
                    how = f"exited with code {code}" + (" without a result" if code == 0 else "")
                return ReplicaFailed(f"{replica.describe()} {how}", replica.placement.ordinal, code)
        raised = [r for r in self.replicas if r.report is not None and r.report[0] == "error"]
        if not raised:
            return None
        first = min(raised, key=lambda r: r.report[2])  # peers' errors follow the first one
        first.process.join(_TERMINATE_GRACE_SECONDS)
        return ReplicaFailed(
            f"{first.describe()} exited with code {first.process.exitcode} after raising:\n{first.report[1]}",
            first.placement.ordinal,
            first.process.exitcode,
        )

    def _remote_failure(self) -> ReplicaFailed | None:
        if self.hosts.count == 1:
            return None
        try:
            if not self.store.check([_ABORT_KEY]):
                return None
            message = self.store.get(_ABORT_KEY).decode("utf-8", "replace")
        except StoreAborted as aborted:  # the store's abort came first: its message is the same
            message = str(aborted)
        except Exception:  # noqa: BLE001 -- host 0's store is gone: its replicas report it
            return None
        return ReplicaFailed(f"another host failed: {message}", -1, None)

    def _post_abort(self, message: str) -> None:
        """Say in the store that the job failed: every wait in it ends at once (a rendezvous
        with the failed replica), and the other hosts and the replicas' exit wait see it."""
        try:
            self.store.set(_ABORT_KEY, message)
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
            waitables += [r.reader for r in self.replicas if r.report is None]  # a report may fill the pipe
            multiprocessing.connection.wait(waitables, timeout=min(_POLL_SECONDS, max(0.0, deadline - time.monotonic())))
            self._read_reports()
            self._beat()

    def _wait_for_other_hosts(self) -> None:
        """Host 0 serves the store: keep it up until every replica on every host is done.
        With no deadline, as its replicas wait (``_wait_for_every_replica``): a replica of
        another host may work on alone; a host that fails says so in the store."""
        world = self.replicas[0].placement.world_size
        alive = _HostsAlive(self.store, self.hosts.count, self.timeout)
        while int(self.store.add(_FINISHED_KEY, 0)) < world:
            failure = self._remote_failure()
            if failure:
                raise failure
            if (host := alive.dead()) is not None:
                raise ReplicaFailed(alive.says(host), -1, None)
            self._beat()
            time.sleep(_POLL_SECONDS)

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
