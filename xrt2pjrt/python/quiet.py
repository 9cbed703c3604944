"""Quiet statements: the parts of a file no Python rule can act on, folded away before
libcst parses it.

libcst's parse and a transformer pass over every node cost about 25 times an ``ast``
parse, and most of a big relevant file (a ``Trainer`` class of 3,000 lines with four
``xm.`` calls) is code no rule can touch. So before the libcst parse, every statement
that is *quiet* becomes a one-line placeholder, and after the pass the placeholders are
replaced by the statements' original text, byte for byte. The engine sees a smaller file
with the same structure around everything a rule can act on.

A statement is quiet when its text holds none of the words any rule looks for (the
trigger's, a few more, and every local name an import of torch_xla binds) and folding
it cannot change how the rest is read: it imports nothing, binds no name that an import
in the file binds (that would change what the name resolves to), is not the module's
docstring, and has its lines to itself. A kept compound statement (``class``, ``if``, ``try`` ...) is
searched for quiet statements inside it. A placeholder keeps the kind that matters to
the engine: a folded ``def``/``class`` stays a ``def`` (new imports go above the first
one), anything else becomes a bare name.
"""

from __future__ import annotations

import ast
import bisect
import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from xrt2pjrt.python.spawn_site import DEFINITIONS

# Python's tokenizer ends lines at these and nothing else (not at \f or \x1c, which
# str.splitlines also splits at).
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_SCOPES = (*DEFINITIONS, ast.Lambda)


@dataclass
class Folded:
    """A file's text with its quiet statements folded into placeholder lines."""

    text: str
    _segments: list[str]  # original text of each placeholder, by its number
    _indents: list[str]  # the indentation of each placeholder
    _prefix: str
    _at: list[int]  # 1-based line of each placeholder in ``text``, ascending
    _extra: list[int]  # lines the placeholders up to and including each one hide

    def original_line(self, line: int) -> int:
        """The line in the original file of ``line`` in ``text`` (never a placeholder)."""
        index = bisect.bisect_left(self._at, line)
        return line + (self._extra[index - 1] if index else 0)

    def unfold(self, code: str) -> str | None:
        """``code`` (``text`` as rewritten) with every placeholder put back; None when a
        placeholder is not found exactly once, at its own indentation (a rule that moves
        a block to another depth needs the whole file parsed)."""
        if not self._segments:
            return code
        seen, moved = [0] * len(self._segments), []

        def original(match: re.Match) -> str:
            number = int(match.group(2))
            seen[number] += 1
            if match.group(1) != self._indents[number]:
                moved.append(number)
            return self._segments[number]

        placeholder = rf"([ \t]*)(?:def )?{self._prefix}(\d+)(?:\(\): \.\.\.)?(?:\r\n|\r|\n)"
        out = re.sub(placeholder, original, code)
        return out if not moved and all(count == 1 for count in seen) else None


def fold(text: str, tree: ast.Module, words: Iterable[str], names: Iterable[str], bound: set[str]) -> Folded:
    """Fold every quiet statement of ``text`` (parsed as ``tree``); a run of quiet
    statements becomes one placeholder. What a rule may act on holds one of ``words``
    or one of ``names`` as a whole identifier; ``bound`` holds the names imports bind."""
    lines = _LINE.findall(text)
    starts = list(itertools.accumulate((len(line) for line in lines), initial=0))
    hits = _lines_holding(text, starts, words, names)
    # Only a statement on these lines can import or bind what an import binds.
    risky = _lines_holding(text, starts, (), ("import", *bound))
    prefix = "__xrt2pjrt_quiet"
    while prefix in text:
        prefix += "_"
    runs: list[_Run] = []

    def quiet(statement: ast.stmt, first: int, alone: bool) -> bool:
        return (
            alone
            and _starts_line(statement, lines[first - 1])
            and lines[statement.end_lineno - 1].endswith(("\n", "\r"))
            and not _any_between(hits, first, statement.end_lineno)
            and (not _any_between(risky, first, statement.end_lineno) or _foldable(statement, bound))
        )

    _find_runs(tree.body, len(lines), lines, quiet, runs, top=True)
    out, segments, indents, at, extra = [], [], [], [], []
    line, hidden = 1, 0
    for number, run in enumerate(runs):
        out += lines[line - 1 : run.first - 1]
        at.append(run.first - hidden)
        hidden += run.last - run.first
        extra.append(hidden)
        segments.append("".join(lines[run.first - 1 : run.last]))
        indents.append(run.indent)
        # A run holding a def stays a def: new imports go above the first one.
        shape = f"def {prefix}{number}(): ..." if run.definition else f"{prefix}{number}"
        newline = lines[run.last - 1][len(lines[run.last - 1].rstrip("\r\n")) :]
        out.append(f"{run.indent}{shape}{newline}")
        line = run.last + 1
    out += lines[line - 1 :]
    return Folded("".join(out), segments, indents, prefix, at, extra)


def _find_runs(
    body: list[ast.stmt],
    outer_end: int,
    lines: list[str],
    quiet: Callable[[ast.stmt, int, bool], bool],
    runs: list[_Run],
    top: bool = False,
) -> None:
    """Add to ``runs`` each run of ``quiet`` statements of ``body`` and of the blocks in it,
    in the file's order; ``top``: the module's body, whose docstring stays. (Not a closure
    of fold's: a recursive closure is a cycle, see codemod._no_cyclic_gc.)"""
    run = None
    for index, statement in enumerate(body):
        first = _first_line(statement)
        previous_end = body[index - 1].end_lineno if index else None
        next_first = _first_line(body[index + 1]) if index + 1 < len(body) else outer_end + 1
        alone = (previous_end is None or previous_end < first) and statement.end_lineno < next_first
        if quiet(statement, first, alone) and not (top and index == 0 and _is_docstring(statement)):
            if run is None:
                code = lines[first - 1]
                run = _Run(
                    first if previous_end is None else previous_end + 1,
                    indent=code[: len(code) - len(code.lstrip(" \t"))],
                )
            run.last = statement.end_lineno
            run.definition = run.definition or isinstance(statement, DEFINITIONS)
            continue
        if run is not None:
            runs.append(run)
            run = None
        for inner in _bodies(statement):
            _find_runs(inner, statement.end_lineno, lines, quiet, runs)
    if run is not None:
        runs.append(run)


def _lines_holding(text: str, starts: list[int], words: Iterable[str], names: Iterable[str]) -> list[int]:
    """The 1-based lines (``starts``: where each begins) where one of ``words`` occurs, or
    one of ``names`` as a whole identifier. ``str.find`` for each is several times faster
    than one regex of them all."""
    found = set()
    for word, whole in itertools.chain(((word, False) for word in words), ((name, True) for name in names)):
        at = text.find(word)
        while at >= 0:
            end = at + len(word)
            if not whole or not (_identifier_at(text, at - 1) or _identifier_at(text, end)):
                found.add(bisect.bisect_right(starts, at))
            at = text.find(word, at + 1)
    return sorted(found)


def _identifier_at(text: str, index: int) -> bool:
    return 0 <= index < len(text) and (text[index].isalnum() or text[index] == "_")


def _any_between(lines: list[int], first: int, last: int) -> bool:
    return bisect.bisect_left(lines, first) != bisect.bisect_right(lines, last)


@dataclass
class _Run:
    """Quiet statements next to each other, with the comments and blank lines before each
    but the first: one placeholder."""

    first: int  # 1-based lines
    last: int = 0
    indent: str = ""
    definition: bool = False  # holds a def or class


def _first_line(statement: ast.stmt) -> int:
    return min([statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", ()))])


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _starts_line(statement: ast.stmt, line: str) -> bool:
    """Whether nothing but indentation comes before the statement on its first line (not
    ``if x: y``, not an ``elif``, which ast files as an ``if`` in the ``else``)."""
    code = line.lstrip(" \t")  # (a form feed in the indentation: not folded)
    if getattr(statement, "decorator_list", None):
        return code.startswith("@")
    return statement.col_offset == len(line) - len(code) and not code.startswith("elif")


def _bodies(statement: ast.stmt) -> list[list[ast.stmt]]:
    """The blocks of statements inside a compound statement, in source order."""
    out = [statement.body] if isinstance(getattr(statement, "body", None), list) else []
    out += [handler.body for handler in getattr(statement, "handlers", ())]
    out += [case.body for case in getattr(statement, "cases", ())]
    out += [block for block in (getattr(statement, "orelse", None), getattr(statement, "finalbody", None)) if block]
    return out


def _foldable(statement: ast.stmt, bound: set[str]) -> bool:
    """Whether folding the statement away leaves every name read the same: no import in
    it, no binding of a name an import binds (in its own scope: nested scopes are their
    own)."""
    pending = [statement]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return False
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and node.id in bound:
            return False
        if isinstance(node, DEFINITIONS) and node.name in bound:
            return False
        if isinstance(node, (ast.Global, ast.Nonlocal)) and bound.intersection(node.names):
            return False
        if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name in bound:
            return False
        if isinstance(node, _SCOPES) and node is not statement:
            continue
        if isinstance(node, DEFINITIONS):
            # Its decorators, defaults and bases run here; its body is a scope of its own.
            pending += [*node.decorator_list, *getattr(node, "bases", ()), *getattr(node, "keywords", ())]
            if not isinstance(node, ast.ClassDef):
                pending.append(node.args)
            continue
        pending += ast.iter_child_nodes(node)
    return True
