"""torch_xla.experimental.pjrt, early PJRT's module, is gone from 2.x (2.1 moved what stayed
public to torch_xla.runtime), so a call to its ``run_multiprocess`` cannot run on the target.
Its replacement keeps what it did: xmp.spawn would call ``fn(index, *args)`` and return
nothing, while the shim's ``run_multiprocess`` (carried into the project as xrt2pjrt_shim/,
natively too) calls ``fn(*args)`` on every local device and returns ``{ordinal: result}``, as
early PJRT's did, for every function and arguments it took. The fix is therefore safe. One
thing does differ, on purpose: the shim's collectives come back in ordinal order, where
early PJRT ordered them by device id (the upstream ordering bug the guide's "Ordinals, world
size and collectives" tells of).
"""

from __future__ import annotations

from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.shim_packages import CARRIED
from xrt2pjrt.rules.pjrt._pjrt import PJRT

SHIM_XMP = f"{CARRIED}.xla_multiprocessing"


class PjrtRunMultiprocess(PythonRule):
    id = "pjrt-run-multiprocess"
    summary = "pjrt.run_multiprocess(fn, *args) → the shim's run_multiprocess: fn(*args), {ordinal: result}"
    names = frozenset({f"{PJRT}.run_multiprocess", f"{PJRT}._run_multiprocess"})
    examples = (
        Example(
            dedent("""
                from torch_xla.experimental import pjrt

                pjrt._run_multiprocess(train, flags)
            """),
            dedent("""
                import xrt2pjrt_shim.xla_multiprocessing as shim_xmp

                shim_xmp.run_multiprocess(train, flags)
            """),
        ),
        Example(
            dedent("""
                from torch_xla.experimental import pjrt

                results = pjrt.run_multiprocess(evaluate, model)
            """),
            dedent("""
                import xrt2pjrt_shim.xla_multiprocessing as shim_xmp

                results = shim_xmp.run_multiprocess(evaluate, model)
            """),
        ),
    )

    def call(self, ctx, node, name):
        # Not xmp.spawn, even where the result goes unused: it calls fn(index, *args).
        ctx.change(f"pjrt.{name.rsplit('.', 1)[1]} → {SHIM_XMP}.run_multiprocess (fn(*args), as before)")
        return node.with_changes(func=ctx.ref(SHIM_XMP, "run_multiprocess", "shim_xmp"))
