"""xm.save(): no longer ends with a rendezvous (2.1); report where code may rely on it: where
the file reads a saved file after the save (not where a rendezvous follows; in a run of saves,
the last), xm.save passed as a function (save_function=xm.save) alike.

Under XRT every replica waited in xm.save until the master had written the file, so a
replica could load it on the next line. Under PJRT the others run on at once, and one that
loads the file then may read it half-written, or an older one. Code reads after a save when
a load (``torch.load``, ``xser.load``, ``from_pretrained``, ``load_checkpoint`` ...) comes
later in the function that saves, anywhere in a loop around the save, or after a call of
that function (or in a loop around it) elsewhere in the file. A checkpoint that is only
loaded when a later run resumes needs no barrier, and no item is written for it. Nor for a save
only the master makes (``if xm.is_master_ordinal():``, ``if xm.get_ordinal() == 0:``): XRT's save
ended with a rendezvous every replica had to reach (torch_xla@v1.13.0 torch_xla/core/xla_model.py:1060),
so on XRT that save hung unless one replica ran, and its readers never had the barrier to lose.
Nor for a notebook that spawns nothing and saves in its cells (run on one core): no replica
waited there.
"""

from __future__ import annotations

import ast
import bisect
import re

import libcst as cst

from xrt2pjrt.file_caches import per_file
from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.spawn_graph import notebook_one_process

from xrt2pjrt.python.rule import PythonRule, code
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.rules.manual._manual import XM

_BARRIERS = frozenset({f"{XM}.rendezvous", f"{XM}.xla_rendezvous", "torch.distributed.barrier"})
_NO_BARRIER = "xm.save no longer waits for every replica (2.1)"


class SaveBarrier(PythonRule):
    id = "manual-save-barrier"
    fix = "none"
    summary = "xm.save() followed by a load (no rendezvous ends a save from 2.1): reported"
    targets = ("native",)  # the shim's save keeps the barrier
    names = frozenset({f"{XM}.save"})
    examples = (
        Example(  # a loop that saves, then loads the file in its next round
            dedent("""
                import torch
                import torch_xla.core.xla_model as xm

                for epoch in range(3):
                    model.load_state_dict(torch.load(path))
                    xm.save(model.state_dict(), path)
            """),
            dedent("""
                import torch
                import torch_xla.core.xla_model as xm

                for epoch in range(3):
                    model.load_state_dict(torch.load(path))
                    # TODO(xrt2pjrt): add xm.rendezvous('saved') for readers [manual-save-barrier]
                    xm.save(model.state_dict(), path)
            """),
            manual=("rendezvous",),
        ),
        Example.unchanged(
            dedent("""
                import torch
                import torch_xla.core.xla_model as xm

                xm.save(model.state_dict(), path)
                xm.rendezvous('saved')
                model.load_state_dict(torch.load(path))
            """),
        ),
        Example(  # a run of saves, read after the last; the function's caller loads
            dedent("""
                import torch
                import torch_xla.core.xla_model as xm

                def checkpoint(G, D):
                    xm.save(G.state_dict(), g_path)
                    xm.save(D.state_dict(), d_path)

                def _mp_fn(index):
                    checkpoint(G, D)
                    evaluate(torch.load(g_path))
            """),
            dedent("""
                import torch
                import torch_xla.core.xla_model as xm

                def checkpoint(G, D):
                    xm.save(G.state_dict(), g_path)
                    # TODO(xrt2pjrt): add xm.rendezvous('saved') for readers [manual-save-barrier]
                    xm.save(D.state_dict(), d_path)

                def _mp_fn(index):
                    checkpoint(G, D)
                    evaluate(torch.load(g_path))
            """),
            manual=("rendezvous",),
        ),
        Example.unchanged(  # BigGAN-Pytorch-TPU, my_simclr_vit_profiling: loaded only when a later run resumes
            dedent("""
                import torch
                import torch_xla.core.xla_model as xm

                def save_ckpt(path, model):
                    xm.save(model.state_dict(), path)

                def load_ckpt(path, model):
                    model.load_state_dict(torch.load(path))
            """),
        ),
        Example(  # save_pretrained(..., save_function=xm.save), then every replica loads it back
            dedent("""
                import torch_xla.core.xla_model as xm

                model.save_pretrained(out, save_function=xm.save)
                model = Model.from_pretrained(out)
            """),
            dedent("""
                import torch_xla.core.xla_model as xm

                # TODO(xrt2pjrt): add xm.rendezvous('saved') after saving [manual-save-barrier]
                model.save_pretrained(out, save_function=xm.save)
                model = Model.from_pretrained(out)
            """),
            manual=("passed here as a function",),
        ),
    )

    def call(self, ctx, node, name):
        if (
            not _barrier_follows(ctx)
            and not _master_only(ctx)
            and (ctx.tree is None or _read_after(ctx.tree, ctx.line) and not notebook_one_process(ctx))
        ):
            ctx.decide(
                "add xm.rendezvous('saved') for readers",
                detail=f"{_NO_BARRIER}: if others read the file next, add xm.rendezvous('saved') after it",
            )
        return node

    def reference(self, ctx, node, name):
        if not ctx.is_store() and not _barrier_follows(ctx) and (ctx.tree is None or _read_after(ctx.tree, ctx.line)):
            ctx.decide(
                "add xm.rendezvous('saved') after saving",
                detail=f"xm.save is passed here as a function: {_NO_BARRIER}; if others read what it saves "
                "next, add xm.rendezvous('saved') after this",
            )
        return node


def _barrier_follows(ctx) -> bool:
    """Whether the statement after the one being visited, in its block, is a rendezvous
    or a barrier: the replicas wait there anyway; or another xm.save: a reader of the files
    comes after the last save of the run, whose item answers for them all."""
    level = 1
    while not isinstance(ctx.parent(level), (cst.SimpleStatementLine, type(None))):
        level += 1
    statement, block = ctx.parent(level), ctx.parent(level + 1)
    body = list(getattr(block, "body", ()))
    if statement is None or statement not in body or body.index(statement) + 1 == len(body):
        return False
    after = body[body.index(statement) + 1]
    first = after.body[0] if isinstance(after, cst.SimpleStatementLine) else None
    return (
        isinstance(first, cst.Expr)
        and isinstance(first.value, cst.Call)
        and ctx.resolve(first.value.func) in _BARRIERS | {f"{XM}.save"}
    )


# A test that only the master replica passes: xm.is_master_ordinal(), an ordinal compared with 0.
_MASTER_TEST = re.compile(r"is_master_ordinal\(|\b(?:get|global|get_local|local)_ordinal\(\)\s*==\s*0\b")


def _master_only(ctx) -> bool:
    """Whether the call being visited is in the body of an ``if`` only the master passes."""
    below = None
    for parent in ctx.ancestors():
        if isinstance(parent, cst.If) and below is parent.body and _MASTER_TEST.search(code(parent.test)):
            return True
        below = parent
    return False


# What reads a saved file back: the last part of a call's name (not json's or yaml's load).
_READS = re.compile(
    r"^(?:load|load_file|from_pretrained|load_checkpoint|load_from_checkpoint|load_\w*(?:ckpt|checkpoint|weights|model))$"
)
_NOT_SAVED_FILES = frozenset({"json", "yaml", "OmegaConf"})


def _read_after(tree: ast.Module, line: int) -> bool:
    """Whether the file reads a saved file after the statement at ``line``: later in its
    function or in a loop around it, or so after a call of that function elsewhere."""
    function = spawn_site.function_at(tree, line)
    reads = _reads(tree)
    return reads.after_in(function or tree, line) or (function is not None and reads.after_a_call_of(function.name))


@per_file()  # (built at the file's first save, asked at each)
def _reads(tree: ast.Module) -> _Reads:
    return _Reads(tree)


class _Reads:
    """The reads of saved files in each scope's own code, and the calls of each name, found
    once per file: a scan of the scope, and of each caller's, at each save was quadratic in
    a file of many saves."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        # the file's calls by the name they call, each with the scope whose own code makes it
        self.calls: dict[str | None, list[tuple[ast.AST, ast.Call]]] = {}
        for scope in (tree, *spawn_site.functions(tree)):
            for call in spawn_site.own_of(tree, scope, ast.Call):
                self.calls.setdefault(spawn_site.called_name(call.func), []).append((scope, call))
        self._scopes: dict[ast.AST, tuple[list[int], list[tuple[int, int]]]] = {}
        self._after_calls: dict[str, bool] = {}

    def after_in(self, scope: ast.AST, line: int) -> bool:
        """A read in ``scope``'s own code after ``line``, or in a loop of it around ``line``."""
        reads, loops = self._of(scope)
        return bool(reads) and (
            reads[-1] > line
            or any(
                first <= line <= last and bisect.bisect_left(reads, first) < bisect.bisect_right(reads, last)
                for first, last in loops
            )
        )

    def after_a_call_of(self, name: str) -> bool:
        """A read after a call of ``name`` (:meth:`after_in` the caller's scope)."""
        found = self._after_calls.get(name)
        if found is None:
            found = self._after_calls[name] = any(
                self.after_in(scope, call.lineno) for scope, call in self.calls.get(name, ())
            )
        return found

    def _of(self, scope: ast.AST) -> tuple[list[int], list[tuple[int, int]]]:
        """The lines of the reads in ``scope``'s own code, in order, and the lines of its loops."""
        found = self._scopes.get(scope)
        if found is None:
            found = self._scopes[scope] = (
                sorted(node.lineno for node in spawn_site.own_of(self.tree, scope, ast.Call) if _is_read(node)),
                [
                    (loop.lineno, loop.end_lineno)
                    for kind in (ast.For, ast.While, ast.AsyncFor)
                    for loop in spawn_site.own_of(self.tree, scope, kind)
                ],
            )
        return found


def _is_read(call: ast.Call) -> bool:
    name = spawn_site.called_name(call.func)
    base = call.func.value if isinstance(call.func, ast.Attribute) else None
    return bool(name and _READS.match(name)) and not (isinstance(base, ast.Name) and base.id in _NOT_SAVED_FILES)
