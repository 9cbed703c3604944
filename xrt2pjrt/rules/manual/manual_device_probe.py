"""xm.xla_device() or xm.get_xla_supported_devices() as a TPU probe (in a try whose except catches
RuntimeError or Exception): True on every host under torch_xla 2.x; report, with
torch_xla.runtime.device_type() == 'TPU' to test instead

Libraries asked "is there a TPU?" by taking a device and catching the failure:
``try: xm.xla_device(); return True except RuntimeError: return False`` (accelerate's
``is_tpu_available``). Under XRT that worked: with no XRT configuration the runtime raised
"Missing XLA configuration" (pytorch/xla v1.13.0 third_party/xla_client/computation_client.cc:280),
so a GPU or CPU host answered False. torch_xla 2.x never raises there: importing it sets
``PJRT_DEVICE=CPU`` when it finds no TPU (v2.9.0 torch_xla/runtime.py:57, called from
torch_xla/__init__.py:274), and the probe answers True on every host, so the library takes its
TPU paths on a GPU box (a run on 2.9's CPU shows it: tests/rules/manual/test_manual_device_probe.py).
A try that only takes the device, with an ``except`` that only passes, decides nothing: no probe.

The device type the runtime chose answers the question: ``torch_xla.runtime.device_type()``
is 'TPU' only on a TPU host (2.1+; v2.9.0 torch_xla/runtime.py:74). The probe is reported, not
rewritten: what the ``except`` does, and what else the ``try`` holds, is the library's.
"""

from __future__ import annotations

import ast

from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.rules.manual._manual import XM

_ALWAYS = (
    "a TPU probe: torch_xla 2.x falls back to CPU where XRT raised, so this never fails; test "
    "torch_xla.runtime.device_type() == 'TPU' instead"
)
# What an except clause must catch for the try around a device call to be a probe: what XRT raised.
_CATCHES = frozenset({"RuntimeError", "Exception", "BaseException"})
# A probe's try holds the device call and little else; a try around a whole program is no probe.
_PROBE_STATEMENTS = 3


class DeviceProbe(PythonRule):
    id = "manual-device-probe"
    fix = "none"
    summary = "xm.xla_device() in a try as a TPU probe (true on every host under 2.x): reported"
    names = frozenset(
        {
            f"{XM}.xla_device",
            f"{XM}.get_xla_supported_devices",
            "torch_xla.runtime.xla_device",
            "torch_xla.device",
            "torch_xla.torch_xla.device",
        }
    )
    examples = (
        Example(  # accelerate 0.12-0.16, utils/imports.py
            dedent("""
                import torch_xla.core.xla_model as xm

                def is_tpu_available():
                    try:
                        _ = xm.xla_device()
                        return True
                    except RuntimeError:
                        return False
            """),
            dedent("""
                import torch_xla.core.xla_model as xm

                def is_tpu_available():
                    try:
                        # TODO(xrt2pjrt): test xr.device_type() == 'TPU' instead [manual-device-probe]
                        _ = xm.xla_device()
                        return True
                    except RuntimeError:
                        return False
            """),
            manual=("a TPU probe",),
        ),
        Example(
            dedent("""
                import torch_xla.core.xla_model as xm

                try:
                    HAS_TPU = bool(xm.get_xla_supported_devices())
                except Exception:
                    HAS_TPU = False
            """),
            dedent("""
                import torch_xla.core.xla_model as xm

                try:
                    # TODO(xrt2pjrt): test xr.device_type() == 'TPU' instead [manual-device-probe]
                    HAS_TPU = bool(xm.get_xla_supported_devices())
                except Exception:
                    HAS_TPU = False
            """),
            manual=("a TPU probe",),
        ),
        Example.unchanged(  # an ImportError is the import's failure, not the device's
            dedent("""
                try:
                    import torch_xla.core.xla_model as xm
                    device = xm.xla_device()
                except ImportError:
                    device = None
            """),
        ),
    )

    def __init__(self):
        self.probes: set[int] = set()  # the lines of the tries reported: one probe, one item

    def call(self, ctx, node, name):
        probe = _probe(ctx)
        if probe is not None and probe.lineno not in self.probes:
            self.probes.add(probe.lineno)
            ctx.decide("test xr.device_type() == 'TPU' instead", detail=_ALWAYS)
        return node


def _probe(ctx) -> ast.Try | None:
    """The try whose body holds the call being visited, if it is a probe: a short try, in the
    call's own function, one of whose except clauses catches what XRT raised. Read on the
    file's ast: the libcst tree the rules see has quiet statements folded (python/quiet.py), so
    a try's length is not there."""
    if ctx.tree is None:
        return None
    line, node, found = ctx.line, ctx.tree, None
    while True:  # down the statements that hold the line, to the innermost try or scope
        inner = next(
            (
                child
                for _, block in ast.iter_fields(node)
                if spawn_site.is_block(block)
                for _, child in spawn_site.holding(block, line)
            ),
            None,
        )
        if inner is None:
            return found
        if isinstance(inner, spawn_site.DEFINITIONS):
            found = None
        elif isinstance(inner, ast.Try):
            body = inner.body
            probe = (
                body[0].lineno <= line <= body[-1].end_lineno
                and len(body) <= _PROBE_STATEMENTS
                and any(_catches(handler) for handler in inner.handlers)
                and _decides(inner)
            )
            found = inner if probe else None
        node = inner


def _decides(node: ast.Try) -> bool:
    """Whether what the try finds out changes what the code does: its except does something, or
    its body does more than take the device. ``try: dev = xm.xla_device() except: pass`` decides
    nothing (a flag picks the device later)."""
    passes = all(isinstance(s, ast.Pass) for handler in node.handlers if _catches(handler) for s in handler.body)
    return not passes or not all(isinstance(s, (ast.Assign, ast.AnnAssign)) for s in node.body)


def _catches(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(caught, ast.Name) and caught.id in _CATCHES for caught in types)
