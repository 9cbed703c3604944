"""xm.get_xla_supported_devices(devkind): the devkind goes, and a probe becomes a device-type test.

Under XRT ``get_xla_supported_devices('TPU')`` listed the TPU cores, and none on a host
without one, so code asked "is there a TPU?" by the list being non-empty (timm's
``is_xla_available('TPU')``). Under PJRT the list holds the devices of the type PJRT_DEVICE
chose, whatever kind was asked for: a CPU host lists its CPU devices, and the probe says True
everywhere; 2.8 dropped ``devkind`` altogether. A probe (``bool(...)``, ``if ...``, ``len(...) >
0``, ``... is not None``) becomes ``xr.device_type() == devkind`` ('GPU' as 'CUDA' from 2.2),
which answers what it asked (safe). Elsewhere ``devkind`` is dropped, and a kind given is
reported: the list is of the chosen type's devices now.
"""

from __future__ import annotations

import libcst as cst

from xrt2pjrt.python.renames import RenameRule, XM, XR, renames_of
from xrt2pjrt.python.rule import code, literal
from xrt2pjrt.registry import Example, dedent

_PROBE = (
    "a TPU probe answers by the runtime's device type: PJRT lists the devices of that type only, "
    "so the devices of the kind asked for are never missing from the list"
)


class SupportedDevices(RenameRule):
    id = "api-supported-devices"
    summary = "xm.get_xla_supported_devices(devkind): devkind dropped; a probe → xr.device_type() == devkind"
    targets = ("native",)
    table = renames_of(f"{XM}.get_xla_supported_devices")
    nodes = (cst.Comparison,)
    examples = (
        Example(
            dedent("""
                import torch_xla.core.xla_model as xm

                devices = xm.get_xla_supported_devices('TPU', 8)
            """),
            dedent("""
                import torch_xla.core.xla_model as xm

                # TODO(xrt2pjrt): test xr.device_type() for the kind [api-supported-devices]
                devices = xm.get_xla_supported_devices(max_devices=8)
            """),
            manual=("devkind='TPU' dropped",),
        ),
        Example.unchanged(
            dedent("""
                import torch_xla.core.xla_model as xm

                n = len(xm.get_xla_supported_devices(max_devices=8))
            """),
        ),
        Example(  # on a CPU host this answered False under XRT, and must still
            dedent("""
                import torch_xla.core.xla_model as xm

                has_tpu = bool(xm.get_xla_supported_devices('TPU'))
                if not xm.get_xla_supported_devices(devkind='GPU'):
                    print('no GPU')
            """),
            dedent("""
                import torch_xla.runtime as xr

                has_tpu = bool(xr.device_type() == 'TPU')
                if not xr.device_type() == 'CUDA':
                    print('no GPU')
            """),
        ),
        Example(
            dedent("""
                import torch_xla.core.xla_model as xm

                def found(kind):
                    return len(xm.get_xla_supported_devices(devkind=kind)) > 0
            """),
            dedent("""
                import torch_xla.runtime as xr

                def found(kind):
                    return xr.device_type() == kind
            """),
        ),
        Example(  # both forms in one file: one import
            dedent("""
                import torch_xla.core.xla_model as xm

                def probe(kind):
                    return bool(xm.get_xla_supported_devices('TPU')), len(xm.get_xla_supported_devices(devkind=kind)) > 0
            """),
            dedent("""
                import torch_xla.runtime as xr

                def probe(kind):
                    return bool(xr.device_type() == 'TPU'), xr.device_type() == kind
            """),
        ),
    )

    def call(self, ctx, node, name):
        kind = self._kind(ctx.original)
        if kind is not None:
            if _tested(ctx, 1):
                ctx.change(f"{code(ctx.original)} as a probe → xr.device_type() == {code(kind)}: {_PROBE}")
                return self._probe(ctx, kind, negated=False)
            if self._counted(ctx) is not None:
                # The comparison around it is the probe, which leave replaces whole; the
                # kind goes now so that api-not-in-target, which runs next, finds no
                # argument to report that the output will not have.
                dropped = next(i for i, arg in enumerate(ctx.original.args) if arg.value is kind)
                return node.with_changes(args=[a for i, a in enumerate(node.args) if i != dropped])
        return super().call(ctx, node, name)

    def leave(self, ctx, original, updated):
        """``len(C) > 0``, ``len(C) == 0``, ``C is not None`` ... for C a call with a device kind."""
        found = _counted_call(original)
        if found is None or ctx.resolve(found[0].func) not in self.names:
            return updated
        call, negated = found
        kind = self._kind(call)
        if kind is None:
            return updated
        ctx.change(f"{code(original)} as a probe → xr.device_type() {'!=' if negated else '=='} {code(kind)}: {_PROBE}")
        return self._probe(ctx, kind, negated).with_changes(lpar=updated.lpar, rpar=updated.rpar)

    def _counted(self, ctx):
        """The comparison this call's count or None-ness is tested by, if any."""
        for level in (1, 3):  # C is None / len(C) > 0 (Call len -> Arg -> C)
            comparison = ctx.parent(level)
            if isinstance(comparison, cst.Comparison):
                found = _counted_call(comparison)
                if found is not None and found[0] is ctx.original:
                    return comparison
        return None

    def _kind(self, call: cst.Call) -> cst.BaseExpression | None:
        """The device kind the call asks for (by keyword, or a literal string first)."""
        found = self._dropped(call, self.by_old[f"{XM}.get_xla_supported_devices"])
        if not found:
            return None
        value = call.args[next(iter(found))].value
        return None if literal(value) is None else value

    @staticmethod
    def _probe(ctx, kind: cst.BaseExpression, negated: bool) -> cst.Comparison:
        # XRT's 'GPU' is PJRT's 'CUDA' (2.2 … 2.8; torch_xla 2.9 has no GPU device).
        if literal(kind) == "GPU" and ctx.target_version >= (2, 2):
            kind = kind.with_changes(value=kind.value.replace("GPU", "CUDA"))
        operator = cst.NotEqual() if negated else cst.Equal()
        return cst.Comparison(cst.Call(ctx.ref(XR, "device_type", "xr")), [cst.ComparisonTarget(operator, kind)])


def _tested(ctx, level: int) -> bool:
    """Whether the node ``level`` steps below ``ctx.parent(level)`` is only tested for truth:
    an ``if``/``while``/``assert``/``x if ... else y`` test, ``not ...``, ``bool(...)``."""
    parent, child = ctx.parent(level), ctx.original if level == 1 else ctx.parent(level - 1)
    if isinstance(parent, (cst.If, cst.While, cst.IfExp, cst.Assert)):
        return parent.test is child
    if isinstance(parent, cst.UnaryOperation):
        return isinstance(parent.operator, cst.Not)
    if isinstance(parent, cst.Arg):
        call = ctx.parent(level + 1)
        return (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Name)
            and call.func.value == "bool"
            and len(call.args) == 1
            and ctx.resolve(call.func) is None
        )
    return False


# (operator, number): a count compared so that the comparison says "some" (False: "none")
_SOME = {
    (cst.GreaterThan, 0): True,
    (cst.NotEqual, 0): True,
    (cst.GreaterThanEqual, 1): True,
    (cst.Equal, 0): False,
    (cst.LessThan, 1): False,
    (cst.LessThanEqual, 0): False,
}


def _counted_call(comparison: cst.Comparison) -> tuple[cst.Call, bool] | None:
    """(C, negated) for ``len(C) > 0`` (or == 0, ...) and ``C is not None`` (or is None)."""
    if len(comparison.comparisons) != 1:
        return None
    left, (target,) = comparison.left, comparison.comparisons
    if isinstance(target.operator, (cst.Is, cst.IsNot)) and literal(target.comparator) is None:
        return (left, isinstance(target.operator, cst.Is)) if isinstance(left, cst.Call) else None
    count = literal(target.comparator)
    some = _SOME.get((type(target.operator), count)) if isinstance(count, int) else None
    if (
        some is None
        or not isinstance(left, cst.Call)
        or not isinstance(left.func, cst.Name)
        or left.func.value != "len"
        or len(left.args) != 1
        or not isinstance(left.args[0].value, cst.Call)
    ):
        return None
    return left.args[0].value, not some
