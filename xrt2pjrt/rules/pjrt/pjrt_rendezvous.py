"""Early PJRT's rendezvous → xm.xla_rendezvous, its arguments reordered.

torch_xla.experimental.pjrt is gone from 2.5 (2.1 left it as an alias); its ``rendezvous(tag,
payload, ordinals)`` lives on as ``xm.xla_rendezvous(payload, ordinals, tag)``, with the
arguments in another order. The call passes the same values in the new order, the tag by name
(safe: the same operation). A call with more or starred arguments, and the function passed
around, are reported.
"""

from __future__ import annotations

import libcst as cst

from xrt2pjrt.python.rule import PythonRule, argument, named
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.rules.pjrt._pjrt import PJRT
from xrt2pjrt.python.renames import XM


class PjrtRendezvous(PythonRule):
    id = "pjrt-rendezvous"
    summary = "pjrt.rendezvous(tag, payload, ordinals) → xm.xla_rendezvous(payload, ordinals, tag=tag)"
    names = frozenset({f"{PJRT}.rendezvous"})
    examples = (
        Example(
            dedent("""
                import torch_xla.experimental.pjrt as pjrt

                replies = pjrt.rendezvous('init', b'hi', [0, 1])
            """),
            dedent("""
                import torch_xla.core.xla_model as xm

                replies = xm.xla_rendezvous(b'hi', [0, 1], tag='init')
            """),
        ),
    )

    def call(self, ctx, node, name):
        found = {
            param: argument(node, param, position) for position, param in enumerate(("tag", "payload", "ordinals"))
        }
        if any(arg.star for arg in node.args) or len(node.args) > sum(hit is not None for hit in found.values()):
            ctx.decide(
                "move it to xm.xla_rendezvous by hand",
                detail="pjrt.rendezvous with extra or *-arguments: move it to xm.xla_rendezvous(payload, "
                "ordinals, tag) by hand",
            )
            return node
        args = []
        for param in ("payload", "ordinals", "tag"):
            hit = found[param]
            if hit is None:
                continue
            arg = cst.Arg(hit[1].value)
            by_name = param == "tag" or (param == "ordinals" and found["payload"] is None)
            args.append(named(arg, param) if by_name else arg)
        ctx.change("pjrt.rendezvous(tag, payload, ordinals) → xm.xla_rendezvous(payload, ordinals, tag=tag)")
        return node.with_changes(func=ctx.ref(XM, "xla_rendezvous", "xm"), args=args)

    def reference(self, ctx, node, name):
        ctx.decide(
            "replace it with xm.xla_rendezvous by hand",
            detail="pjrt.rendezvous passed around: its replacement xm.xla_rendezvous takes (payload, ordinals, tag)",
        )
        return node
