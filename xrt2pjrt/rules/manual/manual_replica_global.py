"""A replica's device or number kept in a module global (``global device; device =
xm.xla_device()``): on TPU v2/v3 the two replicas of a PJRT process share it; report

XRT ran one process per TPU core, and each had the module's globals to itself: code that kept
its device or ordinal in a global, for other functions to read, was right there. PJRT runs a
TPU v2/v3 chip's two replicas as two threads of one process (pytorch/xla v2.9.0
torch_xla/_internal/pjrt.py:44, ``_run_thread_per_device``), which share the module: the
replica that writes last wins, and the other moves its model and batches to that replica's
device. Reported where a function of the replicas' code (manual-seeded-replicas says which)
assigns what differs between replicas (its device, its ordinal) to a name it declares
``global``. Pass the value to what reads it, or keep it in a ``threading.local()``. On TPU v4
and later each process runs one replica, as under XRT.
"""

from __future__ import annotations

import ast

import libcst as cst

from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.python.spawn_graph import in_replicas_code, spawned_elsewhere
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.rules.manual._manual import XM


_SHARED = (
    "on TPU v2/v3 a PJRT process runs two replicas as threads of one module, so the last to "
    "write this global wins and the other reads its device or number: pass it along instead"
)
_XR = "torch_xla.runtime"


class ReplicaGlobal(PythonRule):
    id = "manual-replica-global"
    fix = "none"
    summary = "A replica's device or ordinal kept in a module global (v2/v3 threads share it): reported"
    names = frozenset(
        {
            f"{XM}.xla_device",
            f"{XM}.get_ordinal",
            f"{XM}.get_local_ordinal",
            "torch_xla.device",
            f"{_XR}.global_ordinal",
            f"{_XR}.local_ordinal",
        }
    )
    examples = (
        Example(
            dedent("""
                import torch_xla.core.xla_model as xm
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index):
                    global device
                    device = xm.xla_device()
                    train()

                xmp.spawn(_mp_fn, nprocs=8)
            """),
            dedent("""
                import torch_xla.core.xla_model as xm
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index):
                    global device
                    # TODO(xrt2pjrt): pass it along, not in a global [manual-replica-global]
                    device = xm.xla_device()
                    train()

                xmp.spawn(_mp_fn, nprocs=8)
            """),
            manual=("threads of one module",),
        ),
        Example.unchanged(  # the replica's own name: nothing shared
            dedent("""
                import torch_xla
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index):
                    device = torch_xla.device()
                    train(device)

                xmp.spawn(_mp_fn, nprocs=8)
            """),
        ),
    )

    def call(self, ctx, node, name):
        assigned = ctx.parent()
        if not (
            isinstance(assigned, cst.Assign)
            and assigned.value is ctx.original
            and ctx.tree is not None
            and (in_replicas_code(ctx) or spawned_elsewhere(ctx.tree, ctx.line))
        ):
            return node
        function = spawn_site.function_at(ctx.tree, ctx.line)
        declared = {
            each
            for statement in spawn_site.own_nodes(function)
            if isinstance(statement, ast.Global)
            for each in statement.names
        }
        targets = {target.target.value for target in assigned.targets if isinstance(target.target, cst.Name)}
        if targets & declared:
            ctx.decide("pass it along, not in a global", detail=_SHARED)
        return node
