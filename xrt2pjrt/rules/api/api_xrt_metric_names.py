"""Metric names that only XRT's runtime recorded, read through ``torch_xla.debug.metrics``.

XRT's client timed host-device copies as ``TransferToServerTime`` / ``TransferFromServerTime``;
PJRT's records them as ``TransferToDeviceTime`` / ``TransferFromDeviceTime`` (checked on CPU
with torch_xla 2.9: ``met.metric_names()`` after a step). A name no runtime records any more
is not an error: ``metric_data`` returns None, and a check for it quietly says "never": so
is a name looked for in a report (``'XrtTryFreeMemory' in met.metrics_report()``, or in a
name bound only to one).
"""

from __future__ import annotations

import ast

import libcst as cst

from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.registry import Example, dedent

MET = "torch_xla.debug.metrics"

# XRT's name -> PJRT's; None: PJRT records nothing like it. (torch_xla 1.13: computation_client.cc,
# tensor_util.cpp, and the names xrt_computation_client.cc gave the XRT server's own metrics)
XRT_METRICS: dict[str, str | None] = {
    "TransferToServerTime": "TransferToDeviceTime",
    "TransferFromServerTime": "TransferFromDeviceTime",
    "TransferToServerAsync": None,
    **dict.fromkeys(
        (
            "XrtAllocate",
            "XrtAllocateFromTensor",
            "XrtSubTuple",
            "XrtMakeTuple",
            "XrtCompile",
            "XrtReleaseCompilation",
            "XrtExecute",
            "XrtExecuteChained",
            "XrtReadLiteral",
            "XrtReadTensor",
            "XrtWriteLiteral",
            "XrtReleaseAllocation",
            "XrtReleaseAllAllocations",
            "XrtCompactAllocations",
            "XrtCompaction",
            "XrtTryFreeMemory",
            "XrtExecutorEvict",
        ),
        None,
    ),
}


class XrtMetricNames(PythonRule):
    id = "api-xrt-metric-names"
    summary = "XRT-only metric names (TransferToServerTime, ...) → PJRT's; names PJRT never records reported"
    names = frozenset({f"{MET}.metric_data", f"{MET}.counter_value", f"{MET}.short_metrics_report"})
    nodes = (cst.Comparison,)  # 'XrtTryFreeMemory' in report
    statement_words = tuple(XRT_METRICS)
    examples = (
        Example(
            dedent("""
                import torch_xla.debug.metrics as met

                seconds = met.metric_data('TransferToServerTime')[1] / 1e9
            """),
            dedent("""
                import torch_xla.debug.metrics as met

                seconds = met.metric_data('TransferToDeviceTime')[1] / 1e9
            """),
        ),
        Example(
            dedent("""
                import torch_xla.debug.metrics as met

                report = met.short_metrics_report(metric_names=['XrtCompile', 'TransferFromServerTime'])
            """),
            dedent("""
                import torch_xla.debug.metrics as met

                # TODO(xrt2pjrt): drop this metric: PJRT never records it [api-xrt-metric-names]
                report = met.short_metrics_report(metric_names=['XrtCompile', 'TransferFromDeviceTime'])
            """),
            manual=("PJRT never records it",),
        ),
        Example(  # deeptrane's train.py: a hint that never shows under PJRT
            dedent("""
                import torch_xla.debug.metrics as met

                report = met.metrics_report()
                if 'XrtTryFreeMemory' in report:
                    print('reduce bs!')
            """),
            dedent("""
                import torch_xla.debug.metrics as met

                report = met.metrics_report()
                # TODO(xrt2pjrt): drop this metric: PJRT never records it [api-xrt-metric-names]
                if 'XrtTryFreeMemory' in report:
                    print('reduce bs!')
            """),
            manual=("PJRT never records it",),
        ),
    )

    def call(self, ctx, node, name):
        return node.visit(_Renamer(ctx))

    def leave(self, ctx, original, updated):
        """``'Xrt…' in report``: a name looked for in a metrics report (deeptrane's train.py
        halves the batch when 'XrtTryFreeMemory' shows in it)."""
        if (
            isinstance(updated.left, cst.SimpleString)
            and len(updated.comparisons) == 1
            and isinstance(updated.comparisons[0].operator, (cst.In, cst.NotIn))
            and _is_report(ctx, updated.comparisons[0].comparator)
        ):
            return updated.with_changes(left=updated.left.visit(_Renamer(ctx)))
        return updated


class _Renamer(cst.CSTTransformer):
    """The call's string literals that name an XRT metric (in a list of names too)."""

    def __init__(self, ctx):
        self.ctx = ctx

    def leave_SimpleString(self, original, updated):
        value = updated.evaluated_value
        if value not in XRT_METRICS:
            return updated
        new = XRT_METRICS[value]
        if new is None:
            self.ctx.decide(
                "drop this metric: PJRT never records it",
                detail=f"metric {value!r} was XRT's: PJRT never records it, so metric_data gives None "
                "and a report leaves it out",
            )
            return updated
        self.ctx.change(f"XRT's metric {value} → PJRT's {new}")
        quote = updated.quote
        return updated.with_changes(value=f"{updated.prefix}{quote}{new}{quote}")


_REPORTS = (f"{MET}.metrics_report", f"{MET}.short_metrics_report")


def _is_report(ctx, value: cst.BaseExpression) -> bool:
    """A call of a metrics report, or a name the file binds, before this line, only to one."""
    if isinstance(value, cst.Call):
        return ctx.resolve(value.func) in _REPORTS
    if not isinstance(value, cst.Name) or ctx.tree is None:
        return False
    bound = [
        v for v in spawn_site.bindings_seen_at(ctx.tree, ctx.line, value.value) if v is None or v.lineno < ctx.line
    ]
    imported = spawn_site.imported(ctx.tree)
    return bool(bound) and all(
        isinstance(v, ast.Call) and spawn_site.resolved(v.func, imported) in _REPORTS for v in bound
    )
