"""A statement a rule rewrote past the project's line length, split as black (and ruff's
formatter) would split it.

Only the simple case, which is the common one for a rewrite: a one-line statement whose
last bracket is a call's. Its arguments go on a line of their own, one indent deeper, and
the closing parenthesis back at the statement's indent; when they still do not fit, one
argument per line, each ending with a comma (the formatter's "magic trailing comma").
Anything else (a longer head, a statement over several lines, no call) is left as the
rule wrote it: splitting is a courtesy, never a risk.
"""

from __future__ import annotations

import libcst as cst


def split(
    statement: cst.SimpleStatementLine,
    original: cst.SimpleStatementLine,
    indent: str,
    step: str,
    limit: int,
    module: cst.Module,
) -> cst.SimpleStatementLine:
    """``statement``, a rule's rewrite of ``original`` (at ``indent``; blocks indent by
    ``step``), fitted into ``limit`` columns, if ``original`` fitted."""
    if _fits(statement, indent, limit, module) or not _fits(original, indent, limit, module):
        return statement
    code = module.code_for_node(statement.with_changes(leading_lines=[]))
    call = _last_call(statement)
    if call is None or code.count("\n") != 1 or not call.args:
        return statement
    inner = cst.ParenthesizedWhitespace(indent=True, last_line=cst.SimpleWhitespace(step))
    outer = cst.ParenthesizedWhitespace(indent=True, last_line=cst.SimpleWhitespace(""))
    # the arguments on one line of their own
    args = [arg.with_changes(whitespace_after_arg=cst.SimpleWhitespace("")) for arg in call.args]
    last = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=outer)
    hugged = _replaced(statement, call, call.with_changes(whitespace_before_args=inner, args=[*args[:-1], last]))
    if _fits(hugged, indent, limit, module):
        return hugged
    # one per line, each with its comma
    comma = cst.Comma(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=inner)
    exploded = [arg.with_changes(comma=comma) for arg in args[:-1]]
    exploded.append(
        args[-1].with_changes(comma=cst.Comma(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=outer))
    )
    return _replaced(statement, call, call.with_changes(whitespace_before_args=inner, args=exploded))


def _fits(statement: cst.SimpleStatementLine, indent: str, limit: int, module: cst.Module) -> bool:
    code = module.code_for_node(statement.with_changes(leading_lines=[]))
    # (lines inside brackets come out without the block's indent here: add it to each)
    return all(len(indent) + len(line) <= limit for line in code.splitlines())


def _last_call(statement: cst.SimpleStatementLine) -> cst.Call | None:
    """The call whose closing parenthesis ends the statement (``x = f(a, b)``, ``f(a)``)."""
    if len(statement.body) != 1:
        return None
    small = statement.body[0]
    value = getattr(small, "value", None)
    if not isinstance(small, (cst.Expr, cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return)):
        return None
    return value if isinstance(value, cst.Call) and not value.lpar else None


def _replaced(statement: cst.SimpleStatementLine, old: cst.Call, new: cst.Call) -> cst.SimpleStatementLine:
    small = statement.body[0]
    return statement.with_changes(body=[small.with_changes(value=new)]) if small.value is old else statement
