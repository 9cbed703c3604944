"""The branches torch_xla 2.1+ never runs: the XRT side of an ``if`` on ``using_pjrt()``.

api-using-pjrt removes them; no rule asks a person about code in them (Context.decide).
"""

from __future__ import annotations

import ast

import libcst as cst

from xrt2pjrt.python import spawn_site

USING_PJRT = frozenset({"torch_xla.runtime.using_pjrt", "torch_xla.experimental.pjrt.using_pjrt"})


def pjrt_side(ctx, test: cst.BaseExpression) -> bool | None:
    """True when ``test`` is ``using_pjrt()``, or a name its scope binds only to that; False
    when it is their negation; None for any other test."""
    negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
    if negated:
        test = test.expression
    if isinstance(test, cst.Call) and not test.args and ctx.resolve(test.func) in USING_PJRT:
        return not negated
    if isinstance(test, cst.Name) and _bound_to_using_pjrt(ctx.tree, ctx.line, test.value):
        return not negated
    return None


def dead_under_pjrt(ctx) -> bool:
    """Whether the node being visited is in a branch that only XRT ran."""
    child = ctx.original
    for parent in ctx.ancestors():
        if isinstance(parent, cst.If) and child is not parent.test:
            side = pjrt_side(ctx, parent.test)
            if side is not None and (child is parent.body) != side:
                return True
        child = parent
    return False


def _bound_to_using_pjrt(tree: ast.Module | None, line: int, name: str) -> bool:
    bound = spawn_site.bindings_seen_at(tree, line, name)
    imported = spawn_site.imported(tree) if bound else {}
    return bool(bound) and all(
        isinstance(value, ast.Call) and not value.args and spawn_site.resolved(value.func, imported) in USING_PJRT
        for value in bound
    )
