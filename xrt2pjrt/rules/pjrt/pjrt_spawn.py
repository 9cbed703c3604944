"""Early PJRT's spawn → xmp.spawn, every argument passed by name.

``pjrt.spawn`` went with its module (deleted in 2.5); ``xmp.spawn`` spawns the same way. The
parameters came in other orders (``spawn(fn, args)`` in torch_xla 1.13, ``spawn(fn, nprocs,
start_method, args)`` in 2.0) than xmp's (``fn, args, nprocs, ...``), so each argument is
passed by name, which keeps its meaning (safe). A call with two positional arguments whose
second is not a tuple is reported: it is ``args`` under 1.13 and ``nprocs`` under 2.0, and the
code does not say which release it was written for.
"""

from __future__ import annotations

import libcst as cst

from xrt2pjrt.python.rule import PythonRule, keywordize
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.rules.pjrt._pjrt import PJRT

XMP = "torch_xla.distributed.xla_multiprocessing"


class PjrtSpawn(PythonRule):
    id = "pjrt-spawn"
    summary = "pjrt.spawn(fn, ...) → xmp.spawn(fn, args=..., ...), arguments passed by name"
    names = frozenset({f"{PJRT}.spawn"})
    examples = (
        Example(
            dedent("""
                from torch_xla.experimental import pjrt

                pjrt.spawn(_mp_fn, None, 'fork', (flags,))
            """),
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                xmp.spawn(_mp_fn, nprocs=None, start_method='fork', args=(flags,))
            """),
        ),
        Example(
            dedent("""
                from torch_xla.experimental import pjrt

                pjrt.spawn(_mp_fn, (flags,))
            """),
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                xmp.spawn(_mp_fn, args=(flags,))
            """),
        ),
        Example(
            dedent("""
                from torch_xla.experimental import pjrt

                pjrt.spawn(_mp_fn, extra)
            """),
            dedent("""
                from torch_xla.experimental import pjrt

                # TODO(xrt2pjrt): name x (args= or nprocs=), rerun xrt2pjrt [pjrt-spawn]
                pjrt.spawn(_mp_fn, extra)
            """),
            manual=("name it",),
        ),
    )

    def call(self, ctx, node, name):
        positional = [arg for arg in node.args if arg.keyword is None and not arg.star]
        if len(positional) == 2:
            # spawn(fn, args) before 2.0, spawn(fn, nprocs, ...) from 2.0: only a tuple tells.
            if not isinstance(positional[1].value, cst.Tuple):
                ctx.decide(
                    "name x (args= or nprocs=), rerun xrt2pjrt",
                    detail="pjrt.spawn(fn, x): x is `args` (torch_xla 1.13) or `nprocs` (2.0): name it, then "
                    "run xrt2pjrt again",
                )
                return node
            params = ("fn", "args")
        else:
            params = ("fn", "nprocs", "start_method", "args")
        ctx.change("pjrt.spawn → xmp.spawn (arguments passed by name: the order differs)")
        return keywordize(node, params).with_changes(func=ctx.ref(XMP, "spawn", "xmp"))
