"""Tensors between a CPU replica's XLA device and host memory, without a copy where possible.

A PJRT CPU buffer is host memory: the collectives read an XLA tensor's buffer where it is
(DLPack) and hand their result's memory to XLA where it is compact and aligned, so a large
all_reduce moves its data through gloo and nowhere else.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def to_host(tensors: Sequence) -> list:
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


def on_device(result, like):
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


_ALIGN_BYTES = 64  # the alignment XLA's CPU client needs to take host memory over


def packed(tensors: list) -> tuple:
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


_HUGE_PAGE = 2 << 20
_MADV_HUGEPAGE = 14


def fresh(count: int, dtype):
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


def as_bytes(tensor):
    """The tensor's storage as uint8 (gloo moves any dtype as bytes: bool, bfloat16, ...)."""
    import torch

    return tensor.view(torch.uint8)
