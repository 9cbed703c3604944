"""sys.exit / os._exit in a function xmp.spawn or torch_xla.launch runs, or in what it calls:
torch_xla's spawn re-raises SystemExit in the launching process (which skips what follows the spawn;
sys.exit(0) exits 0 silently), and os._exit breaks its pool; the shim's spawn ends only that replica
on sys.exit, as XRT did; report

A SystemExit is reported on evidence that the launching process has code after the spawn for it to
skip (after the spawn in its function, or after a call of that function, in the file). With nothing
after it, the run ends as under XRT: all replicas finish (the pool waits for them), and a replica's
non-zero status fails the run (pytorch/xla's own test scripts keep ``sys.exit(21)`` in 2.x); the
status number alone differs. os._exit is always reported: it breaks the pool.
"""

from __future__ import annotations

import ast

import libcst as cst

from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.python.spawn_graph import in_replicas_code, spawn_calls
from xrt2pjrt.registry import Example, dedent

_EXIT_RAISED = (
    "torch_xla's spawn runs the spawned function in a thread of a pool worker process, and the pool hands "
    "SystemExit back to the launching process like any exception: xmp.spawn raises it there, so the code "
    "after the spawn does not run, and sys.exit(0) ends the launcher with status 0, silently; XRT ended "
    "only that replica's process"
)
_EXIT_BREAKS = (
    "torch_xla's spawn runs the spawned function in a pool worker process, and os._exit ends that worker "
    "under the pool: xmp.spawn raises BrokenProcessPool in the launching process, whatever the status; "
    "XRT ended only that replica's process"
)


class ExitInReplica(PythonRule):
    id = "spawn-exit"
    fix = "none"
    statement_words = ("sys.exit", "os._exit", "SystemExit", "exit(", "quit(")
    summary = "sys.exit / os._exit in the replicas' code (2.x's spawn re-raises SystemExit): reported"
    names = frozenset({"sys.exit", "os._exit"})
    nodes = (cst.Raise, cst.Call)  # raise SystemExit(0), and the builtins exit() / quit()
    examples = (
        Example(  # a replica that stops early: under XRT its own process ended, and the launcher went on
            dedent("""
                import sys
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index):
                    if not train():
                        sys.exit(0)

                xmp.spawn(_mp_fn)
                upload_results()
            """),
            dedent("""
                import sys
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index):
                    if not train():
                        # TODO(xrt2pjrt): return from the function instead of exiting [spawn-exit]
                        sys.exit(0)

                xmp.spawn(_mp_fn)
                upload_results()
            """),
            manual=("sys.exit(0) ends the launcher with status 0",),
        ),
        Example.unchanged(  # the launcher's own exit
            dedent("""
                import sys
                import torch_xla.distributed.xla_multiprocessing as xmp

                if __name__ == '__main__':
                    xmp.spawn(_mp_fn)
                    sys.exit(0)
            """),
        ),
    )

    def call(self, ctx, node, name):
        self._report(ctx, raises=name == "sys.exit")
        return node

    def leave(self, ctx, original, updated):
        if isinstance(original, cst.Raise):
            exc = original.exc.func if isinstance(original.exc, cst.Call) else original.exc
            if isinstance(exc, cst.Name) and exc.value == "SystemExit":
                self._report(ctx, raises=True)
        elif (
            isinstance(original.func, cst.Name)
            and original.func.value in ("exit", "quit")
            and ctx.resolve(original.func) is None
        ):
            self._report(ctx, raises=True)
        return updated

    @staticmethod
    def _report(ctx, raises: bool) -> None:
        if raises and (ctx.options.target == "shim" or not _code_after_a_spawn(ctx.tree)):
            return  # the shim's spawn: a finished replica, or its status as the spawn's error
        if in_replicas_code(ctx):
            ctx.decide("return from the function instead of exiting", detail=_EXIT_RAISED if raises else _EXIT_BREAKS)


def _code_after_a_spawn(tree: ast.Module | None) -> bool:
    """Whether the launching process runs code after some spawn of the file: statements after
    it in its block, or after a call of the function that holds it (and so on up), here."""
    if tree is None:
        return True
    pending = [
        (spawn_site.function_at(tree, call.lineno), spawn_site.find(tree, call.lineno, ast.unparse(call.func)))
        for call in spawn_calls(tree)
    ]
    seen: set[int] = set()
    while pending:
        holder, site = pending.pop()
        if site is None or site.after:
            return site is not None
        if holder is None or id(holder) in seen:
            continue
        seen.add(id(holder))
        pending += [
            (spawn_site.function_at(tree, call.lineno), spawn_site.find(tree, call.lineno, ast.unparse(call.func)))
            for call in spawn_site.of_type(tree, (ast.Call,))
            if _named(call.func) == holder.name and not holder.lineno <= call.lineno <= holder.end_lineno
        ]
    return False


def _named(func: ast.expr) -> str | None:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
