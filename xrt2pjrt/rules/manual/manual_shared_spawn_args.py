"""An object xmp.spawn hands every replica (``args=(flags,)``) updated in place by the spawned
function (``flags.lr *= world_size``): on TPU v2/v3 the two replicas of a PJRT process share it;
report

Under XRT each replica was a process of its own with its own copy of the spawn's arguments,
forked or unpickled. PJRT runs a TPU v2/v3 chip's two replicas as two threads of one process
(pytorch/xla v2.9.0 torch_xla/_internal/pjrt.py:44, ``_run_thread_per_device``), both called
with the arguments that process unpickled: the same objects. An update in place (``+=``,
``*=``) then runs twice on one object, so both replicas read the doubled value, and a write of
what differs between replicas (its device, its number) is the last thread's. Reported where the
spawned function itself makes such a write to an attribute or item of a parameter the spawn's
``args`` fill (not the replica's index, not a parameter it binds again first, as to a copy), an
update (``+=``, or a value that reads the target: ``args.lr = args.lr * n``) or a value that differs
between replicas, in a statement that names torch_xla, as scaling by the world size does (the engine reads no other).
On TPU v4 and later each process runs one replica, as under XRT.
"""

from __future__ import annotations

import ast

import libcst as cst

from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.rule import PythonRule, code
from xrt2pjrt.python.spawn_graph import reads_replica_number, spawned_by_name, spawned_code
from xrt2pjrt.registry import Example, dedent

_SHARED = (
    "on TPU v2/v3 a PJRT process runs two replicas as threads called with the same spawn arguments, so "
    "this write to one object is made twice, or the last replica's wins: copy it first (copy.copy) or "
    "keep the value in a local"
)


class SharedSpawnArgs(PythonRule):
    id = "manual-shared-spawn-args"
    fix = "none"
    summary = "The spawn's args updated in place by the spawned function (v2/v3 threads share them): reported"
    nodes = (cst.AugAssign, cst.Assign)
    examples = (
        Example(
            dedent("""
                import torch_xla.core.xla_model as xm
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index, args):
                    args.lr *= xm.xrt_world_size()

                xmp.spawn(_mp_fn, args=(args,), nprocs=8)
            """),
            dedent("""
                import torch_xla.core.xla_model as xm
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index, args):
                    # TODO(xrt2pjrt): copy it: v2/v3 replicas share it [manual-shared-spawn-args]
                    args.lr *= xm.xrt_world_size()

                xmp.spawn(_mp_fn, args=(args,), nprocs=8)
            """),
            manual=("made twice",),
        ),
        Example.unchanged(  # a value of its own
            dedent("""
                import torch_xla.core.xla_model as xm
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index, flags):
                    lr = flags['lr'] * xm.xrt_world_size()

                xmp.spawn(_mp_fn, args=(flags,), nprocs=8)
            """),
        ),
    )

    def leave(self, ctx, original, updated):
        targets = [original.target] if isinstance(original, cst.AugAssign) else [t.target for t in original.targets]
        owners = {
            t.value.value
            for t in targets
            if isinstance(t, (cst.Attribute, cst.Subscript)) and isinstance(t.value, cst.Name)
        }
        tree = ctx.tree
        if not owners or tree is None:
            return updated  # (the cheap test first: most assignments bind a name)
        function = spawn_site.function_at(tree, ctx.line)
        if function is None or function.name not in spawned_by_name(tree) or function.name not in spawned_code(tree):
            return updated
        written = owners & _shared_parameters(function)
        if written and (
            isinstance(original, cst.AugAssign)
            or _reads_itself(targets, original.value)
            or _differs(tree, function, original.value)
        ):
            ctx.decide("copy it: v2/v3 replicas share it", detail=_SHARED)
        return updated


def _shared_parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The parameters the spawn's ``args`` fill (all but the index), but those the function
    binds again (``args = copy.deepcopy(args)``)."""
    bound = spawn_site.bindings(function)
    return {a.arg for a in function.args.args[1:] if len(bound.get(a.arg, ())) == 1}


def _reads_itself(targets: list[cst.BaseExpression], value: cst.BaseExpression) -> bool:
    """Whether ``value`` reads what it is assigned to: ``args.lr = args.lr * n`` updates in place
    as ``*=`` does."""
    written = {ast.unparse(ast.parse(code(t), mode="eval").body) for t in targets}
    return any(ast.unparse(node) in written for node in ast.walk(ast.parse(f"({code(value)})", mode="eval").body))


def _differs(tree: ast.Module, function: ast.FunctionDef | ast.AsyncFunctionDef, value: cst.BaseExpression) -> bool:
    """Whether ``value`` differs between replicas: made of the replica's number, or its device."""
    expression = ast.parse(f"({code(value)})", mode="eval").body
    devices = (
        isinstance(node, ast.Call) and ast.unparse(node.func).endswith(("xla_device", "torch_xla.device"))
        for node in ast.walk(expression)
    )
    return any(devices) or reads_replica_number(tree, function, expression)
