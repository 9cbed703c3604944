"""xmp.MpModelWrapper: on TPU v2/v3 the two replicas of a PJRT process get one module from it; report,
with the model built in each replica and xm.broadcast_master_param to use instead

XRT ran one process per TPU core, and ``MpModelWrapper`` let each forked process move its own
copy-on-write copy of a model built once at module level. PJRT opens a TPU v2/v3 chip from one
process only, so each process drives the chip's two cores from two threads
(pytorch/xla v2.9.0 torch_xla/_internal/pjrt.py:44, ``_run_thread_per_device``; two devices a
chip: torch_xla/_internal/tpu.py:119). ``MpModelWrapper.to`` moves its one module and returns it
(torch_xla/distributed/xla_multiprocessing.py:81): both threads get the same object, its
parameters on whichever thread moved it last, so one replica trains on the other's device (a
run on 2.9's CPU with two devices in one process shows it:
tests/rules/manual/test_manual_mp_model_wrapper.py). On TPU v4 and later a process drives one
chip, one thread, as under XRT.

A wrapper made in the spawned function wraps the model that replica built: nothing is shared, and it
is not reported; nor where every spawn of the file runs one replica (``nprocs=1``), nor in a
notebook that spawns nothing (its one process moves the model once), nor in a script that spawns
nothing and moves the wrapper itself at module level (``net = net.to(device)``)
(manual-seeded-replicas asks for the broadcast where a seed makes the replicas' models alike under
XRT). Build the model in the spawned function, then ``xm.broadcast_master_param(model)`` (2.1+;
v2.9.0 torch_xla/core/xla_model.py:1539) gives every replica replica 0's parameters, as the upstream
PJRT guide advises for v2/v3 (docs/source/learn/_pjrt.md:246).
"""

from __future__ import annotations

import ast

from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.python.spawn_graph import every_spawn_one_process, in_replicas_code, notebook_one_process, spawn_calls
from xrt2pjrt.registry import Example, dedent

_ONE_MODULE = (
    "on TPU v2/v3 a PJRT process runs two replicas as threads and MpModelWrapper.to hands both the "
    "same module: build the model in each replica, then xm.broadcast_master_param(model)"
)


class MpModelWrapper(PythonRule):
    id = "manual-mp-model-wrapper"
    fix = "none"
    summary = "xmp.MpModelWrapper (one module for two replicas on TPU v2/v3 under PJRT): reported"
    names = frozenset({"torch_xla.distributed.xla_multiprocessing.MpModelWrapper"})
    examples = (
        Example(  # the upstream pattern: one model at module level, moved in each replica
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                WRAPPED_MODEL = xmp.MpModelWrapper(Net())
            """),
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                # TODO(xrt2pjrt): build the model in each replica [manual-mp-model-wrapper]
                WRAPPED_MODEL = xmp.MpModelWrapper(Net())
            """),
            manual=("same module",),
        ),
        Example.unchanged(
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index):
                    model = xmp.MpModelWrapper(Net())

                xmp.spawn(_mp_fn)
            """),
        ),
    )

    def call(self, ctx, node, name):
        # a replica's own wrapper wraps the model it built, one replica has no thread beside it
        one_process = ctx.tree is not None and (
            every_spawn_one_process(ctx.tree) or notebook_one_process(ctx) or _moved_by_the_script(ctx.tree, ctx.line)
        )
        if not in_replicas_code(ctx) and not one_process:
            ctx.decide("build the model in each replica", detail=_ONE_MODULE)
        return node


def _moved_by_the_script(tree: ast.Module, line: int) -> bool:
    """Whether the file spawns nothing, makes the wrapper at ``line`` in a module-level
    assignment and moves it there too (``net = xmp.MpModelWrapper(net)``, ``net = net.to(device)``):
    a script whose one process uses it, no replica's."""
    if spawn_calls(tree):
        return False
    made = next((s for s in tree.body if s.lineno <= line <= s.end_lineno), None)
    if not isinstance(made, ast.Assign):
        return False
    names = {target.id for target in made.targets if isinstance(target, ast.Name)}
    return any(
        isinstance(call.func, ast.Attribute)
        and call.func.attr == "to"
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id in names
        for statement in tree.body
        if statement.lineno > made.end_lineno and not isinstance(statement, spawn_site.DEFINITIONS)
        for call in ast.walk(statement)
        if isinstance(call, ast.Call)
    )
