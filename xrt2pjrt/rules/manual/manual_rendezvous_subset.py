"""xm.rendezvous with a subset of the replicas: reported.

XRT's rendezvous ran over its gRPC mesh, and some of the replicas could meet
(``replicas=[0, 1]``). Under PJRT it is an XLA all_gather that every replica must join: a
subset raises ValueError. A call whose ``replicas`` is neither empty nor None is reported:
which replicas must wait, and whether a host-side barrier does it, is the program's to say.
``--target shim`` leaves it: the shim's rendezvous takes subsets.
"""

from __future__ import annotations

from xrt2pjrt.python.rule import PythonRule, argument, code, literal
from xrt2pjrt.registry import Example, dedent
from xrt2pjrt.rules.manual._manual import XM


class RendezvousSubset(PythonRule):
    id = "manual-rendezvous-subset"
    fix = "none"
    summary = "xm.rendezvous(tag, payload, replicas=[subset]) (PJRT needs every replica): reported"
    targets = ("native",)  # the shim's rendezvous takes subsets
    names = frozenset({f"{XM}.rendezvous"})
    examples = (
        Example(
            dedent("""
                import torch_xla.core.xla_model as xm

                xm.rendezvous('sync', b'', replicas=[0, 1])
            """),
            dedent("""
                import torch_xla.core.xla_model as xm

                # TODO(xrt2pjrt): use all replicas or a host barrier [manual-rendezvous-subset]
                xm.rendezvous('sync', b'', replicas=[0, 1])
            """),
            manual=("every replica must join",),
        ),
        Example.unchanged(
            dedent("""
                import torch_xla.core.xla_model as xm

                xm.rendezvous('init')
            """),
        ),
    )

    def call(self, ctx, node, name):
        hit = argument(node, "replicas", 2)
        if hit is not None and literal(hit[1].value) not in ([], None):
            ctx.decide(
                "use all replicas or a host barrier",
                detail=f"xm.rendezvous with replicas={code(hit[1].value)}: under PJRT every replica must join "
                "(a subset raises ValueError); use all replicas or a host-side barrier",
            )
        return node
