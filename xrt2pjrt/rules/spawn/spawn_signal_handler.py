"""signal.signal in the code xmp.spawn or torch_xla.launch runs: reported.

XRT ran the spawned function in each replica process's main thread. torch_xla 2.x's spawn runs
it in a thread of the replica process (a thread per device, even for one device), where
``signal.signal`` raises ValueError ("signal only works in main thread"). A call in the spawned
function, or in what it calls in this file, is reported: install the handler at module level,
outside ``if __name__ == '__main__':``, which each replica process runs in its main thread when
it loads the module. So is a ``timeout_decorator.timeout(30)`` (signals by default) on a function
the replicas run: pass ``use_signals=False``.
"""

from __future__ import annotations

from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.rule import PythonRule, argument, literal
from xrt2pjrt.python.spawn_graph import in_replicas_code, spawned_code
from xrt2pjrt.registry import Example, dedent

_IN_A_THREAD = (
    "torch_xla's spawn runs the spawned function in a thread of each replica process (a thread per "
    "device, even for one device), where signal.signal raises ValueError ('signal only works in main "
    "thread'); XRT ran it in the process's main thread. Install the handler at module level, outside "
    "`if __name__ == '__main__':`: each replica process runs that in its main thread when it loads the "
    "module"
)


_TIMEOUTS = frozenset({"timeout_decorator.timeout", "timeout_decorator.timeout_decorator.timeout"})


class SignalInReplica(PythonRule):
    id = "spawn-signal-handler"
    fix = "none"
    statement_words = ("signal.signal", "timeout(")
    summary = "signal.signal in the replicas' code (spawn runs it in a thread: ValueError): reported"
    names = frozenset({"signal.signal", *_TIMEOUTS})
    examples = (
        Example(  # a preemption handler set where XRT ran the replica's main thread
            dedent("""
                import signal
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index):
                    signal.signal(signal.SIGTERM, save_and_exit)
                    train()

                xmp.spawn(_mp_fn)
            """),
            dedent("""
                import signal
                import torch_xla.distributed.xla_multiprocessing as xmp

                def _mp_fn(index):
                    # TODO(xrt2pjrt): install the handler at module level [spawn-signal-handler]
                    signal.signal(signal.SIGTERM, save_and_exit)
                    train()

                xmp.spawn(_mp_fn)
            """),
            manual=("signal only works in main thread",),
        ),
        Example.unchanged(  # the launching process's own handler: its main thread
            dedent("""
                import signal
                import torch_xla.distributed.xla_multiprocessing as xmp

                if __name__ == '__main__':
                    signal.signal(signal.SIGINT, stop)
                    xmp.spawn(_mp_fn)
            """),
        ),
    )

    def call(self, ctx, node, name):
        if name in _TIMEOUTS:
            signals = argument(node, "use_signals", 1)
            if (signals is None or literal(signals[1].value) is not False) and _decorates_replica_code(ctx):
                ctx.decide("pass use_signals=False", detail=_IN_A_THREAD)
        elif in_replicas_code(ctx):
            ctx.decide("install the handler at module level", detail=_IN_A_THREAD)
        return node


def _decorates_replica_code(ctx) -> bool:
    """``@timeout(30)`` on a function the replicas run, or called in their code."""
    if ctx.tree is None:
        return False
    decorated = {
        function.name
        for function in spawn_site.functions(ctx.tree)
        if any(decorator.lineno == ctx.line for decorator in function.decorator_list)
    }
    return bool(decorated & spawned_code(ctx.tree)) or in_replicas_code(ctx)
