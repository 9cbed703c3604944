"""Brackets nested deeper than Python allows, found before libcst parses the text.

libcst's native parser follows nested brackets by recursion and sets no limit of its own:
past about 1,500 levels it overflows the stack (SIGSEGV: the whole run ends, nothing is
migrated), and before that it takes seconds and memory that grow with the square of the
depth (800 levels: 9 s and 630 MB; 200: 60 MB). Python itself refuses more than 200 levels
(its tokenizer's limit), so deeper text is no program Python runs: it is refused with
Python's message and left as it is. ``ast.parse``, which the rewriter runs first, says so
itself; where it stopped at another error before reaching the brackets (syntax this Python
does not know yet, a Python 2 line), the tokenizer counts them.
"""

from __future__ import annotations

import io
import tokenize

MAX_DEPTH = 200  # Python's (MAXLEVEL in its tokenizer)
MESSAGE = "too many nested parentheses"  # Python's words for it
TOO_DEEP = (
    f"brackets nested more than {MAX_DEPTH} deep: more than Python allows, and than libcst, the parser used "
    "here, can read"
)


def too_deep(text: str, error: SyntaxError) -> tuple[int, int] | None:
    """Where ``text``, which ``ast.parse`` refused with ``error``, opens a bracket past
    MAX_DEPTH levels: (line, column), both from 1; None when it does not."""
    if error.msg == MESSAGE:
        return error.lineno or 1, error.offset or 1
    depth = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type != tokenize.OP:
                continue
            if token.string in ("(", "[", "{"):
                depth += 1
                if depth > MAX_DEPTH:
                    return token.start[0], token.start[1] + 1
            elif token.string in (")", "]", "}"):
                depth = max(0, depth - 1)
    except SyntaxError as exc:  # from Python 3.12 the tokenizer counts them itself; or a dedent that matches
        if exc.msg == MESSAGE:  # no indentation, where libcst's tokenizer stops too, before it parses
            return exc.lineno or 1, exc.offset or 1
    except tokenize.TokenError:
        pass  # the text ends inside a bracket or a string: every bracket was counted
    return None
