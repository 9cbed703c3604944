"""xm.rendezvous(tag, payload, replicas=[subset]): PJRT requires every replica; report
"""

from __future__ import annotations

from xrt2pjrt.python.rule import PythonRule, argument, code, literal
from xrt2pjrt.registry import Example
from xrt2pjrt.rules.manual._manual import XM


class RendezvousSubset(PythonRule):
    id = "manual-rendezvous-subset"
    fix = "none"
    summary = "xm.rendezvous(tag, payload, replicas=[subset]): PJRT requires every replica; report"
    targets = ("native",)  # the shim's rendezvous takes subsets
    names = frozenset({f"{XM}.rendezvous"})
    examples = (
        Example(
            "import torch_xla.core.xla_model as xm\n\nxm.rendezvous('sync', b'', replicas=[0, 1])\n",
            (
                "import torch_xla.core.xla_model as xm\n"
                "\n"
                "# TODO(xrt2pjrt): use all replicas or a host barrier [manual-rendezvous-subset]\n"
                "xm.rendezvous('sync', b'', replicas=[0, 1])\n"
            ),
            manual=("every replica must join",),
        ),
        Example(
            "import torch_xla.core.xla_model as xm\n\nxm.rendezvous('init')\n",
            "import torch_xla.core.xla_model as xm\n\nxm.rendezvous('init')\n",
        ),
    )

    def call(self, ctx, node, name):
        hit = argument(node, "replicas", 2)
        if hit is not None and literal(hit[1].value) not in ([], None):
            ctx.decide("use all replicas or a host barrier",
                       detail=f"xm.rendezvous with replicas={code(hit[1].value)}: under PJRT every replica must join "
                       "(a subset raises ValueError); use all replicas or a host-side barrier")
        return node
