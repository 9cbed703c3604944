"""signal.signal in the code xmp.spawn or torch_xla.launch runs: reported.

XRT ran the spawned function in each replica process's main thread. torch_xla 2.x's spawn runs
it in a thread of the replica process (a thread per device, even for one device), where
``signal.signal`` raises ValueError ("signal only works in main thread"). A call in the spawned
function, or in what it calls in this file, is reported: install the handler at module level,
outside ``if __name__ == '__main__':``, which each replica process runs in its main thread when
it loads the module.
"""

from __future__ import annotations

from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.python.spawn_graph import in_replicas_code
from xrt2pjrt.registry import Example

_IN_A_THREAD = ("torch_xla's spawn runs the spawned function in a thread of each replica process (a thread per "
                "device, even for one device), where signal.signal raises ValueError ('signal only works in main "
                "thread'); XRT ran it in the process's main thread. Install the handler at module level, outside "
                "`if __name__ == '__main__':`: each replica process runs that in its main thread when it loads the "
                "module")


class SignalInReplica(PythonRule):
    id = "spawn-signal-handler"
    fix = "none"
    statement_words = ("signal.signal",)
    summary = "signal.signal in the replicas' code (spawn runs it in a thread: ValueError): reported"
    names = frozenset({"signal.signal"})
    examples = (
        Example(  # a preemption handler set where XRT ran the replica's main thread
            "import signal\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "def _mp_fn(index):\n    signal.signal(signal.SIGTERM, save_and_exit)\n    train()\n\n"
            "xmp.spawn(_mp_fn)\n",
            (
                "import signal\n"
                "import torch_xla.distributed.xla_multiprocessing as xmp\n"
                "\n"
                "def _mp_fn(index):\n"
                "    # TODO(xrt2pjrt): install the handler at module level [spawn-signal-handler]\n"
                "    signal.signal(signal.SIGTERM, save_and_exit)\n"
                "    train()\n"
                "\n"
                "xmp.spawn(_mp_fn)\n"
            ),
            manual=("signal only works in main thread",),
        ),
        Example(  # the launching process's own handler: its main thread
            "import signal\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "if __name__ == '__main__':\n    signal.signal(signal.SIGINT, stop)\n    xmp.spawn(_mp_fn)\n",
            "import signal\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n"
            "if __name__ == '__main__':\n    signal.signal(signal.SIGINT, stop)\n    xmp.spawn(_mp_fn)\n",
        ),
    )

    def call(self, ctx, node, name):
        if in_replicas_code(ctx):
            ctx.manual("install the handler at module level", detail=_IN_A_THREAD)
        return node
