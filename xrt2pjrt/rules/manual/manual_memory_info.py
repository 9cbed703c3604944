"""xm.get_memory_info's XRT keys, kb_free and kb_total, read: reported.

Under XRT ``xm.get_memory_info(device)`` returned ``kb_free`` and ``kb_total``; under PJRT it
returns ``bytes_used``, ``bytes_limit`` and ``peak_bytes_used``, in bytes, so a read of
``kb_free`` raises KeyError (fairseq's logging did, on every step). The call is reported in a
file that names those keys, and so is each read of them: ``kb_free`` is ``(bytes_limit -
bytes_used) // 1024``. Code that only shows the dict (prints or logs it) raises nothing and gets
no item, nor does code that names the PJRT keys as well (it probes whichever the dict holds).
Nothing is rewritten: the unit changes with the keys, and what the code does with the
number is its own.
"""

from __future__ import annotations

import re

import libcst as cst

from xrt2pjrt.python.rule import PythonRule, literal
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.rules.manual._manual import XM

_READ_BYTES = "read bytes_used and bytes_limit instead"
_MEMORY_INFO = (
    "xm.get_memory_info returns bytes_used, bytes_limit and peak_bytes_used (bytes) under PJRT; kb_free "
    "and kb_total are gone (KeyError): kb_free is (bytes_limit - bytes_used) // 1024"
)

_GONE_KEYS = ("kb_free", "kb_total")
# (quoted: the TODO line this rule writes names them too)
_PJRT_KEYS = re.compile(r"""['"]bytes_(?:used|limit)['"]""")


class MemoryInfo(PythonRule):
    id = "manual-memory-info"
    fix = "none"
    statement_words = _GONE_KEYS
    summary = "xm.get_memory_info()'s kb_free / kb_total (bytes_used / bytes_limit under PJRT): reported"
    names = frozenset({f"{XM}.get_memory_info"})
    nodes = (cst.Subscript,)
    examples = (
        Example(
            dedent("""
                import torch_xla.core.xla_model as xm

                free = xm.get_memory_info(device)['kb_free']
            """),
            dedent("""
                import torch_xla.core.xla_model as xm

                # TODO(xrt2pjrt): read bytes_used and bytes_limit instead [manual-memory-info]
                free = xm.get_memory_info(device)['kb_free']
            """),
            manual=("bytes_limit",),
        ),
        Example(  # fairseq's logging: the KeyError is on the line that reads the key
            dedent("""
                import torch_xla.core.xla_model as xm

                info = xm.get_memory_info(device)
                used = info['kb_total'] - info['kb_free']
            """),
            dedent("""
                import torch_xla.core.xla_model as xm

                # TODO(xrt2pjrt): read bytes_used and bytes_limit instead [manual-memory-info]
                info = xm.get_memory_info(device)
                # TODO(xrt2pjrt): read bytes_used and bytes_limit instead [manual-memory-info]
                used = info['kb_total'] - info['kb_free']
            """),
            manual=("bytes_limit", "bytes_limit"),
        ),
        Example.unchanged(  # shown, not read: no KeyError, and nothing to change
            dedent("""
                import torch_xla.core.xla_model as xm

                print(xm.get_memory_info(device))
            """),
        ),
    )

    def call(self, ctx, node, name):
        # Found in fairseq (0.10 and today's): a KeyError on every logging step. A file that
        # never names the keys only shows the dict, which has other keys now and raises nothing.
        # One that names the PJRT keys too reads whichever the dict holds (`if key in info`).
        if any(key in ctx.source for key in _GONE_KEYS) and not _PJRT_KEYS.search(ctx.source):
            ctx.decide(_READ_BYTES, detail=_MEMORY_INFO)
        return node

    def leave(self, ctx, original, updated):
        key = updated.slice[0].slice if len(updated.slice) == 1 else None
        if isinstance(key, cst.Index) and literal(key.value) in _GONE_KEYS and "get_memory_info" in ctx.source:
            ctx.decide(_READ_BYTES, detail=_MEMORY_INFO)
        return updated
