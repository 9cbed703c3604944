"""xmp.spawn(join=False / daemon=True): ignored under PJRT (spawn blocks); report
"""

from __future__ import annotations

from xrt2pjrt.python.rule import PythonRule, argument, code, literal
from xrt2pjrt.python.spawn_graph import SPAWN
from xrt2pjrt.registry import Example


class JoinDaemon(PythonRule):
    id = "spawn-join-daemon"
    fix = "none"
    summary = "xmp.spawn(join=False / daemon=True): ignored under PJRT (spawn blocks); report"
    names = frozenset({SPAWN})
    examples = (
        Example(
            "import torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "context = xmp.spawn(_mp_fn, join=False)\ncontext.join()\n",
            (
                "import torch_xla.distributed.xla_multiprocessing as xmp\n"
                "\n"
                "# TODO(xrt2pjrt): remove join=: PJRT's spawn always waits [spawn-join-daemon]\n"
                "context = xmp.spawn(_mp_fn, join=False)\n"
                "context.join()\n"
            ),
            manual=("join=False is ignored",),
        ),
    )

    def call(self, ctx, node, name):
        for param, position, default in (("join", 3, True), ("daemon", 4, False)):
            hit = argument(node, param, position)
            if hit is not None and literal(hit[1].value) != default:
                ctx.manual(f"remove {param}=: PJRT's spawn always waits",
                           detail=f"{param}={code(hit[1].value)} is ignored under PJRT: xmp.spawn returns when "
                           "every process has ended, and returns None")
        return node
