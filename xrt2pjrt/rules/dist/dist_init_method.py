"""torch.distributed over XLA: the ``xla`` process group under PJRT.

XRT-era code passed ``rank=xm.get_ordinal(), world_size=xm.xrt_world_size()`` and
MASTER_ADDR/MASTER_PORT for the ``env://`` rendezvous. Under PJRT the ``xla://`` init
method (registered by ``torch_xla.distributed.xla_backend``) takes rank and world size
from the runtime; without it DDP hangs (pytorch/xla #5303, #5524, #7109).
"""

from __future__ import annotations

import libcst as cst

from xrt2pjrt.python.rule import PythonRule, argument, code, literal, named, without_args
from xrt2pjrt.registry import Example, dedent

_MASTER = ("MASTER_ADDR", "MASTER_PORT")
_ENV_WRITES = ("os.environ.setdefault", "os.putenv")
# What XRT-era code passed as rank / world_size: the runtime's own numbers, which xla:// gives.
_RUNTIME_RANK = {"torch_xla.core.xla_model.get_ordinal", "torch_xla.runtime.global_ordinal",
                 "torch_xla.experimental.pjrt.global_ordinal"}
_RUNTIME_WORLD = {"torch_xla.core.xla_model.xrt_world_size", "torch_xla.runtime.world_size",
                  "torch_xla.experimental.pjrt.world_size"}
# Init methods xla:// replaces: env:// (MASTER_ADDR/PORT) and early PJRT's pjrt://.
_REPLACED_METHODS = ("env://", "pjrt://", "xla://")
_MASTER_NOTE = ("MASTER_ADDR/MASTER_PORT served the XRT-era env:// rendezvous; xla:// does not read them: "
                "drop them unless something else does")


class InitMethod(PythonRule):
    id = "dist-init-method"
    statement_words = ("init_process_group", "MASTER_ADDR", "MASTER_PORT", "'xla", '"xla')
    summary = "init_process_group('xla', rank=..., world_size=...) → init_method='xla://' (+ import xla_backend)"
    names = frozenset({"torch.distributed.init_process_group"})
    nodes = (cst.Assign, cst.Call)
    examples = (
        Example(
            dedent("""
                import torch.distributed as dist
                import torch_xla.core.xla_model as xm

                dist.init_process_group('xla', rank=xm.get_ordinal(), world_size=xm.xrt_world_size())
            """),
            dedent("""
                import torch.distributed as dist
                import torch_xla.distributed.xla_backend

                dist.init_process_group('xla', init_method='xla://')
            """),
        ),
        Example(
            dedent("""
                import os
                import torch.distributed as dist
                import torch_xla.distributed.xla_backend

                os.environ['MASTER_ADDR'] = 'localhost'
                os.environ['MASTER_PORT'] = '12355'
                dist.init_process_group(backend='xla', init_method='env://')
            """),
            dedent("""
                import os
                import torch.distributed as dist
                import torch_xla.distributed.xla_backend

                os.environ['MASTER_ADDR'] = 'localhost'
                os.environ['MASTER_PORT'] = '12355'
                # TODO(xrt2pjrt): drop MASTER_ADDR/PORT if nothing reads them [dist-init-method]
                dist.init_process_group(backend='xla', init_method='xla://')
            """),
            manual=("(set on line 5, 6)",),
        ),
        Example(
            dedent("""
                import torch.distributed as dist
                import torch_xla.distributed.xla_backend

                dist.init_process_group('xla', init_method=f'file://{path}', rank=rank, world_size=world)
            """),
            dedent("""
                import torch.distributed as dist
                import torch_xla.distributed.xla_backend

                # TODO(xrt2pjrt): use just init_method='xla://' if they match [dist-init-method]
                dist.init_process_group('xla', init_method=f'file://{path}', rank=rank, world_size=world)
            """),
            manual=("if these are the runtime's own numbers",),
        ),
        Example.unchanged(
            dedent("""
                import torch.distributed as dist  # beside torch_xla

                dist.init_process_group('gloo', rank=r, world_size=n)
            """),
        ),
        Example(  # the new string in the file's quotes
            dedent("""
                import torch.distributed as dist
                import torch_xla.distributed.xla_backend

                dist.init_process_group(backend="xla")
            """),
            dedent("""
                import torch.distributed as dist
                import torch_xla.distributed.xla_backend

                dist.init_process_group(backend="xla", init_method="xla://")
            """),
        ),
    )

    def __init__(self):
        self.master_lines: list[int] = []  # where this file sets MASTER_ADDR/PORT

    def leave(self, ctx, original, updated):
        # Only notes where MASTER_ADDR/PORT are set, for the manual item below.
        if isinstance(updated, cst.Assign):
            target = updated.targets[0].target
            if isinstance(target, cst.Subscript) and ctx.resolve(target.value) == "os.environ":
                key = target.slice[0].slice
                if isinstance(key, cst.Index) and literal(key.value) in _MASTER:
                    self.master_lines.append(ctx.line)
        elif ctx.resolve(updated.func) in _ENV_WRITES and updated.args and literal(updated.args[0].value) in _MASTER:
            self.master_lines.append(ctx.line)
        return updated

    def call(self, ctx, node, name):
        backend = argument(node, "backend", 0)
        if backend is None or literal(backend[1].value) != "xla":
            return node
        drop = {index for param in ("rank", "world_size") if (hit := argument(node, param, None))
                for index in (hit[0],)}
        method = argument(node, "init_method", 1)
        unknown = self._not_the_runtimes(ctx, ctx.original)
        if unknown:  # a rendezvous of the user's own: only a person knows whether xla:// is the same
            ctx.decide("use just init_method='xla://' if they match",
                       detail=f"init_process_group('xla') with {', '.join(unknown)}: if these are the runtime's own "
                       "numbers, init_method='xla://' alone gives them under PJRT")
            return node
        new_method = ctx.string("xla://", method[1].value if method is not None else backend[1].value)
        if method is not None and literal(method[1].value) == "xla://":
            if not drop:
                return node
            args = list(node.args)
        elif method is not None:
            args = list(node.args)
            args[method[0]] = method[1].with_changes(value=new_method)
        else:
            args = list(node.args)
            new_arg = named(cst.Arg(new_method), "init_method")
            if drop:  # in the place of rank=..., keeping the call's layout
                first = min(drop)
                args[first] = new_arg.with_changes(comma=args[first].comma)
                drop = drop - {first}
            else:
                args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                args.append(new_arg)
        new = without_args(node.with_changes(args=args), drop)
        ctx.require("torch_xla.distributed.xla_backend")
        ctx.change("init_process_group('xla'): init_method='xla://' gives rank and world size")
        if self.master_lines:
            ctx.decide("drop MASTER_ADDR/PORT if nothing reads them", cites=self.master_lines, cited_as="set on ",
                       detail=_MASTER_NOTE)
        return new

    @staticmethod
    def _not_the_runtimes(ctx, call: cst.Call) -> list[str]:
        """The arguments (as written) that may not be what xla:// gives: an init method of the
        user's own, or a rank / world size not read from the runtime."""
        out = []
        method = argument(call, "init_method", 1)
        if method is not None and literal(method[1].value) not in _REPLACED_METHODS:
            out.append(f"init_method={code(method[1].value)}")
        for param, runtime in (("rank", _RUNTIME_RANK), ("world_size", _RUNTIME_WORLD)):
            hit = argument(call, param, None)
            value = hit[1].value if hit else None
            if value is not None and not (isinstance(value, cst.Call) and ctx.resolve(value.func) in runtime):
                out.append(f"{param}={code(value)}")
        return out
