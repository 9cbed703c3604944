"""xmp.spawn(nprocs=N) with a literal N > 1 → the argument removed.

torch_xla 2.6+ refuses any nprocs but None or 1 (ValueError: Unsupported nprocs), and PJRT
spawns a process per chip by itself. Under XRT a count could only be 1 or the host's device
count (``_pre_fork_setup`` raised ValueError otherwise), so a literal above 1 meant every
device, which is what a spawn without it runs (safe); it is removed, or becomes None where a
positional argument follows. ``nprocs=1`` is kept: one device, as before. Where the file also
gives that number as a count of replicas (``num_replicas=8``, ``world_size=8``), those places are
reported: the count is ``xr.world_size()`` under PJRT, which need not be 8.
"""

from __future__ import annotations

import ast

import libcst as cst

from xrt2pjrt.file_caches import per_file
from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.rule import code, literal, without_args
from xrt2pjrt.python.spawn_graph import nprocs_argument
from xrt2pjrt.rules.spawn._nprocs import NprocsRule, QUOTED_LINES, lines_beyond
from xrt2pjrt.registry import Example, dedent


def _positional_after(node: cst.Call, index: int) -> bool:
    return any(arg.keyword is None for arg in node.args[index + 1 :])


class NprocsLiteral(NprocsRule):
    id = "spawn-nprocs-literal"
    summary = "xmp.spawn(nprocs=8): a literal > 1 is removed (PJRT uses every device); nprocs=1 is kept"
    examples = (
        Example(
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                xmp.spawn(_mp_fn, args=(flags,), nprocs=8, start_method='fork')
            """),
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                xmp.spawn(_mp_fn, args=(flags,), start_method='fork')
            """),
        ),
        Example(
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                xmp.spawn(_mp_fn, (), 8, True)
            """),
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                xmp.spawn(_mp_fn, (), None, True)
            """),
        ),
        Example(  # each replica's sampler takes an eighth of the data: half of it unread on 4 processes
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index):
                    sampler = DistributedSampler(data, num_replicas=8, rank=index)

                xmp.spawn(_mp_fn, nprocs=8)
            """),
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index):
                    sampler = DistributedSampler(data, num_replicas=8, rank=index)

                # TODO(xrt2pjrt): use xr.world_size() where 8 is given [spawn-nprocs-literal]
                xmp.spawn(_mp_fn)
            """),
            manual=("(line 4: `sampler = DistributedSampler(data, num_replicas=8, rank=index)`)",),
        ),
        Example.unchanged(
            dedent("""
                from torch_xla.distributed import xla_multiprocessing as xmp

                xmp.spawn(_mp_fn, nprocs=1)
            """),
        ),
        Example.unchanged(
            dedent("""
                import torch.multiprocessing as mp

                mp.spawn(fn=_mp_fn, nprocs=8)  # torch_xla elsewhere
            """),
        ),
    )

    def call(self, ctx, node, name):
        hit = nprocs_argument(node)
        if hit is None:
            return node
        index, arg = hit
        value = literal(arg.value)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 1:
            return node
        ctx.change(f"xmp.spawn: nprocs={value} removed; PJRT runs on every device (nprocs may only be 1 or None)")
        site = spawn_site.find(ctx.tree, ctx.line, code(ctx.original.func))
        if site and (lines := lines_beyond(site, _replica_counts(site.scopes[-1], value))):
            why = (
                f"nprocs={value} is removed, and {value} is also given in this file as a number of replicas, as if it "
                f"were the number of processes: under PJRT that is xr.world_size(), which need not be {value}; "
                "use xr.world_size() there"
            )
            ctx.decide(f"use xr.world_size() where {value} is given", cites=lines, quoted=QUOTED_LINES, detail=why)
        if arg.keyword is None and _positional_after(node, index):
            return node.with_changes(
                args=[*node.args[:index], arg.with_changes(value=cst.Name("None")), *node.args[index + 1 :]]
            )
        return without_args(node, {index})


# Keywords that give a number of replicas (DistributedSampler's, torch.distributed's)
_REPLICA_KEYWORDS = frozenset({"num_replicas", "world_size"})


def _replica_counts(tree: ast.Module, count: int) -> list[ast.keyword]:
    """The ``num_replicas=8`` / ``world_size=8`` keywords of ``tree`` that give ``count``."""
    return _counts(tree).get(count, [])


@per_file()  # (asked at each spawn of the file)
def _counts(tree: ast.Module) -> dict[int, list[ast.keyword]]:
    """The ``num_replicas=N`` / ``world_size=N`` keywords of ``tree``, by N."""
    counts: dict[int, list[ast.keyword]] = {}
    for node in spawn_site.of_type(tree, (ast.keyword,)):
        if node.arg in _REPLICA_KEYWORDS and isinstance(node.value, ast.Constant) and type(node.value.value) is int:
            counts.setdefault(node.value.value, []).append(node)
    return counts
