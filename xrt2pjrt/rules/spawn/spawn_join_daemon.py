"""xmp.spawn(join=False / daemon=True): ignored under PJRT (spawn blocks); report

Reported on evidence of the other value: a literal (``join=False``), or a name whose value in
this file is one (a constant, a parameter's default). A name passed through from a launcher's
own parameters that default to ``join=True, daemon=False`` (Lightning 1.7's XLA launcher) asks
for what 2.9's spawn does anyway: it accepts both and ignores them.
"""

from __future__ import annotations

import ast

import libcst as cst

from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.rule import NOT_LITERAL, PythonRule, argument, code, literal
from xrt2pjrt.python.spawn_graph import SPAWN
from xrt2pjrt.registry import Example, dedent


class JoinDaemon(PythonRule):
    id = "spawn-join-daemon"
    fix = "none"
    summary = "xmp.spawn(join=False / daemon=True) (ignored under PJRT: spawn blocks): reported"
    names = frozenset({SPAWN})
    examples = (
        Example(
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                context = xmp.spawn(_mp_fn, join=False)
                context.join()
            """),
            dedent("""
                import torch_xla.distributed.xla_multiprocessing as xmp

                # TODO(xrt2pjrt): remove join=: PJRT's spawn always waits [spawn-join-daemon]
                context = xmp.spawn(_mp_fn, join=False)
                context.join()
            """),
            manual=("join=False is ignored",),
        ),
    )

    def call(self, ctx, node, name):
        for param, position, default in (("join", 3, True), ("daemon", 4, False)):
            hit = argument(node, param, position)
            if hit is not None and any(
                value is not NOT_LITERAL and value != default for value in _values(ctx, hit[1].value)
            ):
                ctx.decide(
                    f"remove {param}=: PJRT's spawn always waits",
                    detail=f"{param}={code(hit[1].value)} is ignored under PJRT: xmp.spawn returns when "
                    "every process has ended, and returns None",
                )
        return node


def _values(ctx, value) -> list:
    """The Python values ``value`` (a libcst argument) may have, as far as this file shows:
    a literal's own; for a name, the literals bound to it in the function around the call (a
    parameter's default, an assignment) or in the module; NOT_LITERAL for anything else."""
    own = literal(value)
    if own is not NOT_LITERAL or not isinstance(value, cst.Name) or ctx.tree is None:
        return [own]
    function = spawn_site.function_at(ctx.tree, ctx.line)
    if function is not None:
        arguments = function.args
        positional = [*arguments.posonlyargs, *arguments.args]
        defaults = {
            **dict(zip([a.arg for a in positional][len(positional) - len(arguments.defaults) :], arguments.defaults)),
            **{a.arg: d for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None},
        }
        if value.value in defaults:
            return [_literal(defaults[value.value])]
    bound = spawn_site.bindings_seen_at(ctx.tree, ctx.line, value.value)
    return [_literal(bound_value) if isinstance(bound_value, ast.expr) else NOT_LITERAL for bound_value in bound] or [
        NOT_LITERAL
    ]


def _literal(value: ast.expr):
    return value.value if isinstance(value, ast.Constant) else NOT_LITERAL
