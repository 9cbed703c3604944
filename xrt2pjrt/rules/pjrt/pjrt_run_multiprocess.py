"""pjrt.run_multiprocess(fn, *args) / pjrt._run_multiprocess → xrt2pjrt.shim's run_multiprocess, which
calls fn(*args) as before (xmp.spawn would call fn(index, *args)); a used result is reported
"""

from __future__ import annotations

from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.registry import Example
from xrt2pjrt.shim_packages import CARRIED
from xrt2pjrt.rules.pjrt._pjrt import PJRT

SHIM_XMP = f"{CARRIED}.xla_multiprocessing"


_KEEP_SHIM = "keep the shim: it returns the results"
_RESULTS = "results now come from xrt2pjrt.shim; torch_xla has no public API that returns per-process results"


class PjrtRunMultiprocess(PythonRule):
    id = "pjrt-run-multiprocess"
    summary = ("pjrt.run_multiprocess(fn, *args) / pjrt._run_multiprocess → xrt2pjrt.shim's run_multiprocess, "
               "which calls fn(*args) as before (xmp.spawn would call fn(index, *args)); a used result is reported")
    fix = "unsafe"
    names = frozenset({f"{PJRT}.run_multiprocess", f"{PJRT}._run_multiprocess"})
    examples = (
        Example(
            "from torch_xla.experimental import pjrt\n\npjrt._run_multiprocess(train, flags)\n",
            "import xrt2pjrt_shim.xla_multiprocessing as shim_xmp\n\nshim_xmp.run_multiprocess(train, flags)\n",
        ),
        Example(
            "from torch_xla.experimental import pjrt\n\nresults = pjrt.run_multiprocess(evaluate, model)\n",
            (
                "import xrt2pjrt_shim.xla_multiprocessing as shim_xmp\n"
                "\n"
                "# TODO(xrt2pjrt): keep the shim: it returns the results [pjrt-run-multiprocess]\n"
                "results = shim_xmp.run_multiprocess(evaluate, model)\n"
            ),
            manual=("results",),
        ),
    )

    def call(self, ctx, node, name):
        # Not xmp.spawn, even where the result goes unused: it calls fn(index, *args).
        if not ctx.is_whole_statement():
            ctx.manual(_KEEP_SHIM, of_fix=True, detail=_RESULTS)
        ctx.change(f"pjrt.{name.rsplit('.', 1)[1]} → {SHIM_XMP}.run_multiprocess "
                   "(fn(*args), as before)")
        return node.with_changes(func=ctx.ref(SHIM_XMP, "run_multiprocess", "shim_xmp"))
