"""torch_xla.experimental.pjrt names with no 2.x replacement: reported.

torch_xla.experimental.pjrt was early PJRT's module: 2.1 moved what stayed public to
torch_xla.runtime, and 2.5 deleted it, so any use fails there. Its names with a 2.x
counterpart are other rules' (pjrt-runtime, pjrt-spawn, pjrt-rendezvous,
pjrt-run-multiprocess, api-using-pjrt); the rest (``spawn_threads``, ``requires_pjrt``, ...)
have none, and each use is reported. So is rendezvous, spawn, run_multiprocess or using_pjrt
used but not called (passed around): only their calls are rewritten.
"""

from __future__ import annotations

from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.rules.pjrt._pjrt import PJRT, PJRT_RENAMES


class PjrtPrivate(PythonRule):
    id = "manual-pjrt-other"
    fix = "none"
    summary = "Other torch_xla.experimental.pjrt names (spawn_threads, requires_pjrt, ...): reported"
    prefixes = (f"{PJRT}.",)
    examples = (
        Example(
            dedent("""
                from torch_xla.experimental import pjrt

                SPAWNERS = [xmp.spawn, pjrt.spawn]
            """),
            dedent("""
                from torch_xla.experimental import pjrt

                # TODO(xrt2pjrt): replace this use of it by hand [manual-pjrt-other]
                SPAWNERS = [xmp.spawn, pjrt.spawn]
            """),
            manual=("without being called",),
        ),
        Example(
            dedent("""
                from torch_xla.experimental import pjrt

                pjrt.spawn_threads(fn)
            """),
            dedent("""
                from torch_xla.experimental import pjrt

                # TODO(xrt2pjrt): rewrite it by hand: no 2.x replacement [manual-pjrt-other]
                pjrt.spawn_threads(fn)
            """),
            manual=("no public replacement",),
        ),
    )
    # Names other rules rewrite: the renamed ones wherever they appear, these only where called.
    renamed = frozenset(r.old for r in PJRT_RENAMES)
    called = frozenset(
        f"{PJRT}.{n}" for n in ("rendezvous", "spawn", "run_multiprocess", "_run_multiprocess", "using_pjrt")
    )

    def call(self, ctx, node, name):
        if name not in self.renamed | self.called:
            self._no_replacement(ctx, name)
        return node

    def reference(self, ctx, node, name):
        if name in self.called:
            ctx.decide(
                "replace this use of it by hand",
                detail=f"pjrt.{name.rsplit('.', 1)[-1]} is used here without being called, and only its calls are "
                "rewritten: replace it by hand (torch_xla.experimental.pjrt is gone from 2.5)",
            )
        elif name not in self.renamed:
            self._no_replacement(ctx, name)
        return node

    @staticmethod
    def _no_replacement(ctx, name):
        ctx.decide(
            "rewrite it by hand: no 2.x replacement",
            detail=f"pjrt.{name.rsplit('.', 1)[-1]} has no public replacement in torch_xla 2.x "
            "(torch_xla.experimental.pjrt is gone from 2.5)",
        )
