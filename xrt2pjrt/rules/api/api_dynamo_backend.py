"""torch.compile's torch_xla backends of torch 2.0 (torchxla_trace_once, aot_torchxla_trace_once,
torchxla_trivial, aot_torchxla_trivial) → openxla_eval, openxla, eager, aot_eager.

torch 2.0 (torch_xla 2.0, the last with XRT) registered its XLA dynamo backends under these
names (torch/_dynamo/backends/torchxla.py). torch 2.1 added openxla and openxla_eval and
warned that torchxla_trace_once would go in 2.2; today's torch knows none of the old names
(torch.compile raises "Invalid backend"). Each new name is the same compiler: openxla_eval
is torchxla_trace_once's function (torch_xla's dynamo bridge, without autograd), openxla
the aot_autograd of it, as aot_torchxla_trace_once was; torchxla_trivial returned the
graph as it was, which torch's own eager backend does, and aot_torchxla_trivial was
aot_autograd of that, aot_eager. The rewrite does what torch 2.0 did (safe), in
``torch.compile(backend=...)`` and ``torch._dynamo.optimize(...)``. An old name anywhere else (a
constant, a setting's default) is reported: the program may also compare it with its users'
settings.
"""

from __future__ import annotations

import libcst as cst

from xrt2pjrt.python.rule import PythonRule, argument
from xrt2pjrt.registry import Example, dedent

# torch 2.0's name -> today's name of the same compiler
BACKENDS = {
    "torchxla_trace_once": "openxla_eval",
    "aot_torchxla_trace_once": "openxla",
    "torchxla_trivial": "eager",
    "aot_torchxla_trivial": "aot_eager",
}
# callee -> the position of its backend argument (None: keyword only)
_TAKES_A_BACKEND = {"torch.compile": None, "torch._dynamo.optimize": 0}


class DynamoBackend(PythonRule):
    id = "api-dynamo-backend"
    summary = "torch 2.0's XLA dynamo backends (torchxla_trace_once, ...) → openxla_eval, openxla, eager, aot_eager"
    words = tuple(BACKENDS)
    names = frozenset(_TAKES_A_BACKEND)
    nodes = (cst.SimpleString,)
    examples = (
        Example(
            dedent("""
                import torch

                model = torch.compile(model, backend='aot_torchxla_trace_once')
            """),
            dedent("""
                import torch

                model = torch.compile(model, backend='openxla')
            """),
        ),
        Example(
            dedent("""
                import torch._dynamo as dynamo

                @dynamo.optimize("torchxla_trace_once")
                def step(x):
                    return x * 2
            """),
            dedent("""
                import torch._dynamo as dynamo

                @dynamo.optimize("openxla_eval")
                def step(x):
                    return x * 2
            """),
        ),
    )

    def call(self, ctx, node, name):
        hit = argument(node, "backend", _TAKES_A_BACKEND[name])
        if hit is None or not isinstance(hit[1].value, cst.SimpleString):
            return node
        index, arg = hit
        old = arg.value.evaluated_value
        if old not in BACKENDS:
            return node
        ctx.change(f"backend {old!r} → {BACKENDS[old]!r}: torch 2.1 renamed torch_xla's dynamo backends")
        args = list(node.args)
        args[index] = arg.with_changes(value=ctx.string(BACKENDS[old], arg.value))
        return node.with_changes(args=args)

    def leave(self, ctx, original, updated):
        """An old name anywhere else (a constant, a setting's default): reported, not rewritten, as the
        program may also compare it with what its users wrote."""
        old = original.evaluated_value
        if old in BACKENDS and not isinstance(ctx.parent(1), cst.Expr) and not _handed_to_compile(ctx):
            ctx.decide(
                f"use {BACKENDS[old]!r}",
                detail=f"{old!r} names torch 2.0's XLA dynamo backend, which today's torch lacks (torch.compile "
                f"raises 'Invalid backend'): {BACKENDS[old]!r} is the same compiler",
            )
        return updated


def _handed_to_compile(ctx) -> bool:
    """Whether the string is an argument of torch.compile or torch._dynamo.optimize (``call`` rewrites it)."""
    arg, call = ctx.parent(1), ctx.parent(2)
    return isinstance(arg, cst.Arg) and isinstance(call, cst.Call) and ctx.resolve(call.func) in _TAKES_A_BACKEND
