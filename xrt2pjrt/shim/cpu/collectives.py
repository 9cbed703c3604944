"""The CPU replica mode's collectives, with XRT-era signatures: the shim's backend for ``xla_model``.

This module is a ``xla_model.Backend``: the ordinals (from ``placement``), the five
collectives and ``rendezvous``, which ``xla_model`` calls while the mode is active.

One mechanism serves every collective: gather every group member's bytes (one gloo
allgather per call), then compute XLA's result locally in group order. That moves N times
the data of a ring algorithm, so reductions, where the data is large (gradients), take
the ring's traffic instead: member p receives the p-th chunk of every member's values and
folds it, then sends its folded chunk to every other member (point-to-point messages, which
on one machine move faster than gloo's alltoall and allgather: bench/cpu_replicas.py).
Either way each element is folded in group order, so every member gets a bit-identical
result (data-parallel replicas keep identical weights) with XLA's semantics for each
reduce type (bitwise and/or, NaN-propagating min/max, the scale converted to the element
type). Unlike XLA each collective syncs the graph of its inputs (one execution per call);
``pin_layout`` changes no result, so it only selects torch_xla's all_reduce-based
all_gather, which is kept for identical results. Collectives give up after
``XRT2PJRT_RENDEZVOUS_TIMEOUT`` seconds (default 300).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence

from xrt2pjrt.shim import collective_args
from xrt2pjrt.shim.cpu.host_memory import fresh, on_device, packed, to_host
from xrt2pjrt.shim.cpu.placement import get_local_ordinal, get_ordinal, xrt_world_size
from xrt2pjrt.shim.cpu.transport import current
from xrt2pjrt.shim.rendezvous import host_rendezvous

# The Backend's calls; the ordinals are placement's, named here too.
__all__ = [
    "get_ordinal",
    "xrt_world_size",
    "get_local_ordinal",
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "collective_permute",
    "rendezvous",
]


def _exchange(tensors: Sequence, members: Sequence[int]) -> list[list]:
    """Every member's host copy of ``tensors``, in the order ``members`` lists them.

    The tensors travel as raw bytes in one buffer, so every dtype (bool, bfloat16, ...)
    goes through one gloo allgather of uint8.
    """
    import torch

    host = to_host(tensors)
    if len(members) == 1:
        return [host]
    flat = torch.cat([t.reshape(-1).view(torch.uint8) for t in host]) if host else torch.empty(0, dtype=torch.uint8)
    received = [torch.empty_like(flat) for _ in members]
    current().group(members).allgather([received], [flat]).wait(datetime.timedelta(seconds=current().timeout))
    sizes = [t.numel() * t.element_size() for t in host]
    result = []
    for buffer in received:
        parts = torch.split(buffer, sizes) if sizes else []
        result.append([p.view(t.dtype).reshape(t.shape) for p, t in zip(parts, host)])
    return result


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

    host = to_host(tensors)
    results: list = [None] * len(host)
    by_dtype: dict = {}
    for index, tensor in enumerate(host):
        by_dtype.setdefault(tensor.dtype, []).append(index)
    for indices in by_dtype.values():
        flat, offsets = packed([host[i] for i in indices])
        reduced = _reduce_flat(reduce_type, flat, scale, members)
        for i, offset in zip(indices, offsets):
            results[i] = reduced[offset : offset + host[i].numel()].view(host[i].shape)
    return results


def _reduce_flat(reduce_type: str, flat, scale: float, members: Sequence[int]):
    """Member p folds chunk p of every member's ``flat`` (in group order); then every member
    sends its folded chunk to every other (see the module docstring)."""
    import torch

    size = len(members)
    if size == 1 or flat.numel() == 0:
        return _fold(reduce_type, [flat], scale)
    chunk = -(-flat.numel() // size)
    padded = torch.cat([flat, flat.new_zeros(chunk * size - flat.numel())]) if chunk * size != flat.numel() else flat
    transport = current()
    me = members.index(get_ordinal())
    sent, received = padded.view(size, chunk), transport.scratch(padded).view(size, chunk)
    transport.exchange(members, [(q, sent[q], received[q]) for q in range(size) if q != me], tag=1)
    gathered = fresh(padded.numel(), padded.dtype).view(size, chunk)  # the result's own memory (the XLA tensor's)
    _fold(reduce_type, [sent[q] if q == me else received[q] for q in range(size)], scale, out=gathered[me])
    transport.exchange(members, [(q, gathered[me], gathered[q]) for q in range(size) if q != me], tag=2)
    return gathered.view(-1)[: flat.numel()]


def _write(outputs: Sequence, results: Sequence) -> None:
    import torch

    with torch.no_grad():
        for output, result in zip(outputs, results):
            if output.device.type == "xla" and output.shape != result.shape:
                import torch_xla  # torch_xla's out=: the output takes the result, shape and all

                torch_xla._XLAC._replace_xla_tensor(output, on_device(result, output))
            else:
                output.copy_(on_device(result, output))


def all_reduce(reduce_type, inputs, scale=1.0, groups=None, pin_layout=True):
    """A tensor -> a new reduced tensor; a list -> reduced in place, the list returned."""
    import torch

    members = _my_group(groups, "all_reduce")
    single = isinstance(inputs, torch.Tensor)
    tensors = [inputs] if single else list(inputs)
    results = _reduce(reduce_type, tensors, scale, members)
    if single:
        return on_device(results[0], inputs)
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
        return on_device(result, value)
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
    return [on_device(r, v) for r, v in zip(results, value)]


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
    placed = [on_device(s, t) for s, t in zip(shards, tensors)]
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
    return on_device(torch.cat(chunks, concat_dimension), value)


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
    return host_rendezvous(
        tag,
        payload,
        replicas or None,
        ordinal=get_ordinal(),
        world_size=xrt_world_size(),
        timeout=timeout,
        store=current().store,
    )
