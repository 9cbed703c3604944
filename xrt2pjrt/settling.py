"""What stays open in a file beyond what the rules see on one pass, and what settles it.

A spot to decide is open until a person settles it: fixed as its item says (its rule no
longer reports it), or kept with ``# xrt2pjrt: ignore[rule-id]`` (suppress.py). ``--check``
fails while one is open, as ``ruff check`` fails on any open finding. Two kinds of open spot
no rule reports by itself:

- a TODO line an earlier ``--write`` left: an item of every later run until it is settled
  (replaced by its marker, or deleted once the code is fixed), even where its rule no longer
  sees the spot (the same line was also rewritten). The TODO line is a reminder, not a
  settlement.
- a marker that settles nothing (ruff's RUF100): one that names no rule (``ignore[api-ordinall]``),
  or whose rules, run without it, report nothing on the lines it covers. Such a marker hides
  nothing today and would hide a spot that comes back. Only the rules the run takes are
  judged: under ``--select api`` a marker for a manual rule is left alone.

Both are worked out on the file's units: the whole text, or each cell of a notebook (whose
findings count their lines in the cell). Finding stale markers takes a second rewrite, with
the markers blanked out, of the few files that hold one.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from xrt2pjrt.registry import UnknownRule, expand, known_ids
from xrt2pjrt.report import CUT, Finding, Fix, Range
from xrt2pjrt.rewriters import SETTLING_WORDS, Outcome
from xrt2pjrt.recorder import dedent
from xrt2pjrt.suppress import Suppressions, blank_markers, has_markers, keeps_off

# The rule whose items are markers that settle nothing (rules/manual/manual_unused_marker.py).
UNUSED_MARKER = "manual-unused-marker"
# What an item of a TODO line that no rule reports any more says of it.
LEFT_BY_WRITE = "a TODO line an earlier --write left"
# A TODO line as rewriters.todo_comment writes it, its message possibly cut.
_TODO_LINE = re.compile(r"^\s*#\s*TODO\(xrt2pjrt\):\s*(?P<message>.*?)\s*\[(?P<rule>[^\]\s]+)\]\s*$")


@dataclass(frozen=True)
class _Unit:
    """Text whose lines are lines of the file from ``offset`` on: the file itself, a document's
    code block, or a notebook's cell (``cell``, 1-based, whose findings count their lines in
    the cell: ``cell_range``)."""

    text: str
    cell: int | None = None
    offset: int = 0

    def place(self, finding: Finding) -> range:
        """The lines of ``finding`` in this unit."""
        at = finding.cell_range if self.cell is not None else finding.range.moved(lambda n: n - self.offset)
        return range(at.start_line, at.end_line + 1)

    def finding(self, rule: str, line: int, message: str, detail: str) -> Finding:
        at = Range.of_lines(line)
        return Finding(
            rule,
            at.moved(lambda n: n + self.offset),
            message,
            Fix.of(rule, applied=False),
            detail=detail,
            cell=self.cell,
            cell_range=at if self.cell is not None else None,
        )

    def lines(self) -> list[str]:
        return self.text.splitlines()

    @functools.cached_property
    def _tree(self) -> ast.Module | None:
        try:
            return ast.parse(self.text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None  # not Python (a shell script, a document): lines are what there is

    def statements(self) -> list[tuple[int, int]]:
        """(first, last) line of each simple statement, where the unit is Python: a marker on
        any of its lines covers it whole, as the Python rewriter reads markers."""
        return [
            (n.lineno, n.end_lineno or n.lineno)
            for n in ast.walk(self._tree or ast.Module([], []))
            if isinstance(n, ast.stmt) and not hasattr(n, "body")
        ]

    def statement_at(self, line: int) -> range:
        """The lines of the statement that starts at ``line`` (of a compound one, its header),
        where its items may be: a TODO line goes above it. Not Python: the line and the lines
        its trailing backslashes continue it on (a shell command, a Dockerfile ENV)."""
        for node in ast.walk(self._tree or ast.Module([], [])):
            if isinstance(node, ast.stmt) and node.lineno == line:
                body = getattr(node, "body", None)
                last = body[0].lineno - 1 if isinstance(body, list) and body else node.end_lineno or line
                return range(line, max(last, line) + 1)
        lines, last = self.lines(), line
        while self._tree is None and last < len(lines) and lines[last - 1].rstrip().endswith("\\"):
            last += 1
        return range(line, last + 1)


def open_spots(kind: str, text: str, outcome: Outcome, options, rerun: Callable[[str], Outcome]) -> list[Finding]:
    """The items ``outcome`` (the rewrite of ``text``, a file of ``kind``) leaves out: the
    TODO lines still open, and the markers that settle nothing (``rerun`` rewrites a text
    with the same options)."""
    if not any(word in text for word in SETTLING_WORDS):
        return []
    units = list(_units(kind, text))
    found = [f for unit in units if kind != "markdown" for f in _open_todo_lines(unit, outcome.manual, options)]
    if options.on(UNUSED_MARKER) and has_markers(text):
        unmarked = rerun(blank_markers(text))
        found += [f for unit in units for f in _unused_markers(unit, unmarked, options)]
    return found


def _units(kind: str, text: str) -> Iterator[_Unit]:
    """The text's units: a notebook's cells, a document's code blocks (its prose may quote a
    marker), or the whole text."""
    if kind == "notebook":
        from xrt2pjrt.mixed import notebook

        cells = notebook.source_spans(text)
        for number, (cell, first) in enumerate(zip(cells, notebook.first_lines(text, cells)), start=1):
            if any(word in cell.source for word in SETTLING_WORDS):
                yield _Unit(cell.source, number, first - 1)
    elif kind == "markdown":
        from xrt2pjrt.mixed import markdown

        for block in markdown.blocks(text):
            body = text[block.start : block.end]
            if any(word in body for word in SETTLING_WORDS):
                yield _Unit(dedent(body, block.indent), offset=text.count("\n", 0, block.start))
    else:
        yield _Unit(text)


def _in_unit(unit: _Unit, findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.cell == unit.cell]


def _open_todo_lines(unit: _Unit, manual: list[Finding], options) -> Iterator[Finding]:
    """An item for each TODO line of ``unit`` whose rule no longer reports the code below it,
    and that no marker settles."""
    lines = unit.lines()
    suppressions = Suppressions(unit.text, unit.statements)
    reported = [(f, unit.place(f)) for f in _in_unit(unit, manual)]
    for number, line in enumerate(lines, start=1):
        todo = _TODO_LINE.match(line)
        if todo is None:
            continue
        rule, message = todo["rule"], todo["message"]
        below = _code_below(lines, number)
        if rule not in known_ids():
            if options.on(UNUSED_MARKER):
                yield unit.finding(
                    UNUSED_MARKER,
                    number,
                    f"name a rule in this TODO line, not {rule}",
                    f"[{rule}] names no rule of this xrt2pjrt (`xrt2pjrt rules` lists them)",
                )
            continue
        statement = unit.statement_at(below)
        if (
            not options.on(rule)
            or suppressions.covers(rule, below)
            or any(_same_item(f, rule, message) and not set(statement).isdisjoint(lines_of) for f, lines_of in reported)
        ):
            continue
        yield unit.finding(
            rule,
            below,
            message,
            f"{message}: {LEFT_BY_WRITE} (line {number}), about a fix made "
            "there or a spot its rule no longer sees: do what it says, then delete the line",
        )


def _same_item(finding: Finding, rule: str, message: str) -> bool:
    """Whether ``finding`` is the item a TODO line of ``rule`` saying ``message`` marks: of that
    rule, or another rule's asking the same (a setting one rule rewrote, another reports)."""
    if finding.rule == rule:
        return True
    cut = message.endswith(CUT)
    return finding.message.startswith(message[: -len(CUT)]) if cut else finding.message == message


def _code_below(lines: list[str], number: int) -> int:
    """The line a comment line at ``number`` is about: the first below it that is no comment
    (the line itself at the end of the text)."""
    for below in range(number + 1, len(lines) + 1):
        stripped = lines[below - 1].strip()
        if stripped and not stripped.startswith("#"):
            return below
    return number


def _unused_markers(unit: _Unit, unmarked: Outcome, options) -> Iterator[Finding]:
    """An item for each marker of ``unit`` that settles nothing: it names no rule, or what the
    rules it names report without it (``unmarked``) touches none of the lines it covers."""
    findings = _in_unit(unit, unmarked.changes + unmarked.manual)
    for marker in Suppressions(unit.text, unit.statements).markers:

        def reports(word: str | None) -> bool:
            return any(
                f.rule != UNUSED_MARKER
                and (word is None or keeps_off(word, f.rule))
                and not marker.lines.isdisjoint(unit.place(f))
                for f in findings
            )

        if marker.words is None:
            if not reports(None):
                yield _unused(unit, marker.line, "`ignore`")
            continue
        unknown = [word for word in sorted(marker.words) if not _is_rule_word(word)]
        if unknown:
            yield unit.finding(
                UNUSED_MARKER,
                marker.line,
                f"name a rule in this marker, not {', '.join(unknown)}",
                f"{', '.join(unknown)} names no rule of this xrt2pjrt (`xrt2pjrt rules` lists them): "
                "the marker keeps nothing off",
            )
            continue
        judged = [word for word in sorted(marker.words) if any(options.on(rid) for rid in expand(word))]
        if judged and not any(map(reports, judged)):
            yield _unused(unit, marker.line, ", ".join(judged))


def _is_rule_word(word: str) -> bool:
    try:
        expand(word)
    except UnknownRule:
        return False
    return True


def _unused(unit: _Unit, line: int, what: str) -> Finding:
    return unit.finding(
        UNUSED_MARKER,
        line,
        "remove this marker: it settles nothing",
        f"{what}: no rule it names reports anything on the lines this marker covers, so it keeps "
        "nothing off today, and would hide a spot that comes back",
    )


@dataclass(frozen=True)
class Marked:
    """A spot a run stopped at that a TODO line marks: where, and the TODO's rule and advice."""

    path: str
    line: int
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: [{self.rule}] {self.message}"


_FRAME = re.compile(r'^  File "([^"]+)", line (\d+)', re.M)


def marked_spot(traceback_text: str) -> Marked | None:
    """The spot a failure's traceback passes through that a TODO line marks: of the frames in
    files that hold one, the innermost whose statement has a TODO line above it (or a statement
    holding it that starts on the same line). Python prints a cause first, and a replica's
    traceback comes inside its launcher's: every traceback of the text is read."""
    sources: dict[str, str | None] = {}
    for block in reversed(traceback_text.split("Traceback (most recent call last):")[1:]):
        for path, line in reversed(_FRAME.findall(block)):
            if path not in sources:
                try:
                    with open(path, encoding="utf-8") as handle:
                        text = handle.read(4_000_000)
                except (OSError, UnicodeDecodeError):
                    text = None
                sources[path] = text if text and "TODO(xrt2pjrt)" in text else None
            todo = sources[path] and marking(sources[path], int(line))
            if todo:
                found = _TODO_LINE.match(todo)
                return Marked(path, int(line), found["rule"], found["message"])
    return None


def marking(source: str, line: int) -> str:
    """The TODO line above the innermost statement holding ``line`` (or above any statement it
    is nested in that starts on that line), or ''."""
    lines = source.splitlines()
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    statements = sorted(
        (
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno)
        ),
        key=lambda node: node.lineno,
        reverse=True,
    )
    for statement in statements[:1] + [s for s in statements[1:] if s.lineno == line]:
        above = statement.lineno - 2
        while above >= 0 and lines[above].lstrip().startswith("#"):
            if _TODO_LINE.match(lines[above]):
                return lines[above].strip()
            above -= 1
    return ""
