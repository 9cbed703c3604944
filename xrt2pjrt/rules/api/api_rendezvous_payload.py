"""A str payload of xm.rendezvous → bytes, which PJRT requires.

XRT's rendezvous took a str payload and sent it encoded as UTF-8. Under PJRT (2.1+) the
payload must be bytes, and a str raises TypeError. A str literal becomes the bytes literal of
the same text (``.encode()`` where the text is not ASCII), which is what XRT sent (safe). A
payload the code builds as a str (an f-string, ``str(...)``, ``'...' % x``, or a name bound only
to one) is reported, to be encoded where it is made: only the run knows its value.
``--target shim`` leaves it: the shim's rendezvous still takes str.
"""

from __future__ import annotations

import ast

import libcst as cst

from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.renames import XM
from xrt2pjrt.python.rule import PythonRule, argument
from xrt2pjrt.registry import Example, dedent


class RendezvousPayload(PythonRule):
    id = "api-rendezvous-payload"
    summary = "xm.rendezvous(tag, 'text') → b'text' (PJRT takes bytes only); a str made at run time reported"
    targets = ("native",)  # the shim's rendezvous still takes str
    names = frozenset({f"{XM}.rendezvous"})
    examples = (
        Example(
            dedent("""
                import torch_xla.core.xla_model as xm

                xm.rendezvous('checkpoint', 'saved')
            """),
            dedent("""
                import torch_xla.core.xla_model as xm

                xm.rendezvous('checkpoint', b'saved')
            """),
        ),
        Example(
            dedent("""
                import torch_xla.core.xla_model as xm

                xm.rendezvous('init', payload=str(rank))
            """),
            dedent("""
                import torch_xla.core.xla_model as xm

                # TODO(xrt2pjrt): encode the payload if it is a str [api-rendezvous-payload]
                xm.rendezvous('init', payload=str(rank))
            """),
            manual=("must be bytes",),
        ),
    )

    def call(self, ctx, node, name):
        hit = argument(node, "payload", 1)
        if hit is None:
            return node
        index, arg = hit
        value = arg.value
        if isinstance(value, cst.SimpleString):
            prefix = value.prefix.lower()
            if "b" in prefix:
                return node
            ctx.change("xm.rendezvous: str payload → bytes (PJRT rejects str)")
            if value.evaluated_value.isascii():
                raw = "r" if "r" in prefix else ""
                new = cst.SimpleString(f"b{raw}{value.value[len(value.prefix) :]}")
            else:  # no bytes literal holds it: encoded as XRT's binding did (UTF-8)
                new = cst.Call(cst.Attribute(value, cst.Name("encode")))
            return node.with_changes(args=[*node.args[:index], arg.with_changes(value=new), *node.args[index + 1 :]])
        if _makes_str(value) or (isinstance(value, cst.Name) and _bound_to_str(ctx, value.value)):
            ctx.decide(
                "encode the payload if it is a str",
                detail="the rendezvous payload must be bytes under PJRT (TypeError otherwise): encode it if it "
                "is a str",
            )
        return node


def _makes_str(value: cst.BaseExpression) -> bool:
    """A str for sure: a str literal (implicitly joined too), an f-string, ``str(...)``/
    ``repr(...)``/``json.dumps(...)``/``'...'.format(...)``, or ``'...' % x`` / ``'...' + x``."""
    if isinstance(value, cst.SimpleString):
        return "b" not in value.prefix.lower()
    if isinstance(value, (cst.FormattedString, cst.ConcatenatedString)):
        return not isinstance(value, cst.ConcatenatedString) or _makes_str(value.left)
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, (cst.Modulo, cst.Add)):
        return _makes_str(value.left) or (isinstance(value.operator, cst.Add) and _makes_str(value.right))
    if not isinstance(value, cst.Call):
        return False
    callee = value.func
    if isinstance(callee, cst.Name):
        return callee.value in ("str", "repr")
    return isinstance(callee, cst.Attribute) and callee.attr.value in ("format", "dumps")


def _bound_to_str(ctx, name: str) -> bool:
    """Whether ``name``, read on the current line, is bound only to what makes a str in the
    innermost scope that binds it (``msg = 'ready %d' % rank``); a parameter is not known."""
    bound = spawn_site.bindings_seen_at(ctx.tree, ctx.line, name)
    return bool(bound) and all(
        value is not None and _makes_str(cst.parse_expression(ast.unparse(value))) for value in bound
    )
