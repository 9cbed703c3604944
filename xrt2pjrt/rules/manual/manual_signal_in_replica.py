"""A signal handler set in the replicas' code: reported, as PJRT runs each replica in a thread

XRT's ``xmp.spawn`` ran the spawned function in the main thread of each process it started, so
a replica could set a signal handler: ``signal.signal(signal.SIGTERM, save_and_exit)``, or a
``timeout_decorator.timeout(30)`` (signals by default) around a step that may hang. torch_xla
2.x runs it in a worker thread of each process, one per device, even where a process has one
device (pytorch/xla v2.9.0 torch_xla/_internal/pjrt.py:44, ``_run_thread_per_device``'s
ThreadPoolExecutor), and Python sets handlers in the main thread only: ``ValueError: signal only
works in main thread of the main interpreter``. Reported where the code the spawn runs (this
file's spawned function and what it calls) sets one: set it in the launching process before
the spawn, or use a timeout that needs no signal (``timeout_decorator.timeout(30,
use_signals=False)``).
"""

from __future__ import annotations

from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.rule import PythonRule, argument, literal
from xrt2pjrt.python.spawn_graph import in_replicas_code, spawned_code
from xrt2pjrt.registry import Example, dedent

_TIMEOUTS = frozenset({"timeout_decorator.timeout", "timeout_decorator.timeout_decorator.timeout"})
_MAIN_THREAD_ONLY = (
    "torch_xla 2.x runs each replica in a worker thread (one per device), and Python sets signal handlers "
    "in the main thread only (ValueError); under XRT the replica ran in its process's main thread: set "
    "the handler in the launching process before the spawn, or use a timeout that needs no signal"
)


class SignalInReplica(PythonRule):
    id = "manual-signal-in-replica"
    fix = "none"
    summary = "A signal handler set in the replicas' code (they run in threads under PJRT: ValueError): reported"
    names = frozenset({"signal.signal", *_TIMEOUTS})
    statement_words = ("signal(", "timeout(")  # (their modules are no torch_xla's: the file's fold keeps them)
    examples = (
        Example(
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
                    # TODO(xrt2pjrt): set it before the spawn [manual-signal-in-replica]
                    signal.signal(signal.SIGTERM, save_and_exit)
                    train()

                xmp.spawn(_mp_fn)
            """),
            manual=("main thread only",),
        ),
        Example.unchanged(  # set in the launching process: its main thread
            dedent("""
                import signal
                import torch_xla.distributed.xla_multiprocessing as xmp

                signal.signal(signal.SIGTERM, save_and_exit)
                xmp.spawn(_mp_fn)
            """),
        ),
    )

    def call(self, ctx, node, name):
        if name in _TIMEOUTS:
            signals = argument(node, "use_signals", 1)
            if (signals is None or literal(signals[1].value) is not False) and self._decorates_replica_code(ctx):
                ctx.decide("pass use_signals=False", detail=_MAIN_THREAD_ONLY)
        elif in_replicas_code(ctx):
            ctx.decide("set it before the spawn", detail=_MAIN_THREAD_ONLY)
        return node

    @staticmethod
    def _decorates_replica_code(ctx) -> bool:
        """``@timeout(30)`` on a function the replicas run, or called in their code."""
        if ctx.tree is None:
            return False
        decorated = [
            function.name
            for function in spawn_site.functions(ctx.tree)
            if any(decorator.lineno == ctx.line for decorator in function.decorator_list)
        ]
        return bool(set(decorated) & spawned_code(ctx.tree)) or in_replicas_code(ctx)
