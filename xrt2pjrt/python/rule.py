"""What a Python rule is, and the context the engine hands it.

A rule declares which qualified names it acts on (``names`` exactly, ``prefixes`` by
start) or which node types (``nodes``) and implements the matching hooks below. The engine (python/rewriter.py) walks the
tree once, resolves every name/attribute chain through the imports (python/imports.py)
and calls the hooks of the rules that asked for that name. A hook returns the node to
put in place of ``updated`` (``updated`` itself when it changes nothing); it reports
what it did through ``ctx.change`` / ``ctx.decide`` (python/context.py).
"""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from xrt2pjrt.registry import Rule
from xrt2pjrt.python.context import Context


class PythonRule(Rule):
    kind = "python"
    # Plain words: a file holds one wherever the rule acts (most act on torch_xla's names).
    words = ("torch_xla",)
    # Plain words that make a statement of such a file worth parsing for the rule
    # (python/quiet.py), besides ``words`` and the names it acts on: ``sys.exit``.
    statement_words: ClassVar[tuple[str, ...]] = ()
    # Local names an import binds that the rule takes for torch_xla's, whatever the import.
    aliases: ClassVar[frozenset[str]] = frozenset()
    # Qualified names (imports followed) whose calls and references this rule handles.
    names: ClassVar[frozenset[str]] = frozenset()
    prefixes: ClassVar[tuple[str, ...]] = ()
    # True: its call/reference hooks run after every other rule's at the node, on what they
    # made of it (the check of the result against the target release does).
    runs_last: ClassVar[bool] = False

    def call(self, ctx: Context, node: cst.Call, name: str) -> cst.BaseExpression:
        """A call whose callee resolves to ``name``."""
        return node

    def reference(self, ctx: Context, node: cst.BaseExpression, name: str) -> cst.BaseExpression:
        """A Name/Attribute that resolves to ``name`` and is not called."""
        return node

    # Node types this rule wants to see whole (e.g. cst.Assign, cst.Dict, cst.Import).
    nodes: ClassVar[tuple[type, ...]] = ()

    @classmethod
    def needs(cls, text: str, target: tuple[int, int]) -> tuple[int, int]:
        """The oldest torch_xla that has what this rule writes into the code ``text`` for
        ``target`` (install-xrt-era-release asks it of a pin's code, code_trees.py): where it
        writes only what every release without XRT has, 2.1."""
        return (2, 1)

    def leave(self, ctx: Context, original: cst.CSTNode, updated: cst.CSTNode):
        """A node of one of the types in ``nodes``."""
        return updated


# Calls that say a value (print it, log it) rather than act on it.
_SAYS = frozenset({"print", "master_print", "debug", "info", "warning", "warn", "error", "exception", "write"})


def says(call: cst.Call) -> bool:
    """Whether ``call`` prints or logs its arguments: ``print(...)``, ``logger.info(...)``."""
    func = call.func
    name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else None
    return name in _SAYS


# Helpers for rules that edit call arguments.


def argument(call: cst.Call, name: str, position: int | None) -> tuple[int, cst.Arg] | None:
    """The argument bound to parameter ``name`` (by keyword, or by ``position``)."""
    positional = 0
    for index, arg in enumerate(call.args):
        if arg.keyword is not None:
            if arg.keyword.value == name:
                return index, arg
        elif arg.star:
            return None  # *args: positions past here are unknown
        else:
            if positional == position:
                return index, arg
            positional += 1
    return None


def has_star_args(call: cst.Call) -> bool:
    return any(arg.star for arg in call.args)


def without_args(call: cst.Call, indexes: set[int]) -> cst.Call:
    """``call`` without the arguments at ``indexes``, commas kept tidy."""
    kept = [arg for i, arg in enumerate(call.args) if i not in indexes]
    last = call.args[-1] if call.args else None
    if not kept or kept[-1] is last:
        return call.with_changes(args=kept)
    if isinstance(last.comma, cst.MaybeSentinel):  # no trailing comma: nor has the new last argument
        kept[-1] = kept[-1].with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)
    else:
        # A trailing comma: the new last argument ends as the old did (the line break before
        # `)`), with its own comment, not the removed argument's (`nprocs=8,  # all 8 cores`).
        own, after = kept[-1].comma.whitespace_after, last.comma.whitespace_after
        if isinstance(after, cst.ParenthesizedWhitespace):
            first_line = own.first_line if isinstance(own, cst.ParenthesizedWhitespace) else cst.TrailingWhitespace()
            after = after.with_changes(first_line=first_line)
        kept[-1] = kept[-1].with_changes(comma=kept[-1].comma.with_changes(whitespace_after=after))
    return call.with_changes(args=kept)


def named(arg: cst.Arg, keyword: str) -> cst.Arg:
    """``arg`` passed as ``keyword=value``."""
    return arg.with_changes(keyword=cst.Name(keyword), equal=_EQUAL)


_EQUAL = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))


def keywordize(call: cst.Call, params: tuple[str, ...], start: int = 1) -> cst.Call:
    """Positional arguments from ``start`` on passed by the parameter names ``params``."""
    args = [
        named(arg, params[index])
        if index >= start and arg.keyword is None and not arg.star and index < len(params)
        else arg
        for index, arg in enumerate(call.args)
    ]
    return call.with_changes(args=args)


def code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def literal(node: cst.BaseExpression):
    """The Python value of a simple literal (int, str, None, True/False, -int), else a marker."""
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value
    if isinstance(node, cst.Name) and node.value in ("None", "True", "False"):
        return {"None": None, "True": True, "False": False}[node.value]
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        value = literal(node.expression)
        return -value if isinstance(value, int) else NOT_LITERAL
    if isinstance(node, (cst.List, cst.Tuple)) and not node.elements:
        return []
    return NOT_LITERAL


NOT_LITERAL = object()
