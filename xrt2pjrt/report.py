"""What a migration run found: records, and their renderings (text, JSON, GitHub, SARIF, Markdown).

Every rewriter (Python or text) returns the same records, so one report serves all file
kinds. Workers build these records; only the parent process renders them, each format
by one function here. A finding's place is given in the file as it is written: the file
as read for a preview or ``--check``, the new file after ``--write`` (where an item to
decide is on its statement, below the TODO line that now marks it).
"""

from __future__ import annotations

import bisect
import difflib
import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property

from xrt2pjrt import __version__, diff
from xrt2pjrt.files import quoted  # a file name as git shows it: an unusual one quoted, reversibly
from xrt2pjrt.rule_index import RULES, WHY

MODES = ("preview", "check", "write")
# The characters of an item's message in a report, before the lines it cites: one short
# line (ruff's are shorter); the rest is its long text, ``detail``.
MESSAGE_ROOM = 100
TODO_MARK = "TODO(xrt2pjrt):"


def todo_lines(kind: str, text: str) -> int:
    """The TODO lines in ``text`` (one marker each; a notebook's are in its JSON strings).
    Documentation gets none (its decisions are reported on every run instead), so a mention
    of the marker there is prose."""
    return 0 if kind == "markdown" else text.count(TODO_MARK)


@dataclass(frozen=True)
class Advice:
    """What to do about a spot: ``do``, the few words of its TODO line (an item's message),
    and ``more``, the how and why its long text adds (an item's detail; ``str()``: both)."""

    do: str
    more: str = ""
    use: str = ""  # the line to put in (an image, a pin), shown under the item (Finding.use)

    def __str__(self) -> str:
        return f"{self.do}: {self.more}" if self.more else self.do


@dataclass(frozen=True)
class Cite:
    """A line a finding's message names: its number in the file as read (in ``cell`` of a
    notebook, counted from the cell's first line), and, for a line the message quotes to say
    which use it means, that line's text as read."""

    line: int
    cell: int | None = None
    text: str | None = None


@dataclass(frozen=True)
class Range:
    """Where a finding or an error is, as SARIF counts: lines and columns 1-based, the end
    column just past the region.

    A finding's range covers the lines of what it is about (a Python node's, from libcst's
    positions; a text rule's, from its offsets), from the first character of code on the
    first to the end of the code on the last: what the rewriters give is the lines
    (``of_lines``), the engine adds the columns from the file's text (``on_code``), and a
    report of --write those of the new file's. An error's is the character it names."""

    start_line: int
    start_column: int
    end_line: int
    end_column: int

    @classmethod
    def of_lines(cls, first: int, last: int | None = None) -> "Range":
        """Lines ``first``..``last`` (default: ``first``), their columns not known yet."""
        return cls(first, 1, max(last or first, first), 1)

    @classmethod
    def at(cls, line: int, column: int = 1) -> "Range":
        """The one character at ``line``, ``column``."""
        return cls(line, column, line, column + 1)

    def moved(self, line_in_file: Callable[[int], int]) -> "Range":
        """This range of a snippet, in the file: each line mapped by ``line_in_file``."""
        return replace(self, start_line=line_in_file(self.start_line), end_line=line_in_file(self.end_line))

    def through(self, moves: Callable[[int], tuple[int, int]]) -> "Range":
        """This range's lines in a rewrite of its file, ``moves(line)`` giving where a line of
        the file as read is there and the last line of what replaced it (_Moves.of); its
        columns as they were (``on_code`` gives the new ones)."""
        first, last = moves(self.start_line)[0], moves(self.end_line)[1]
        return replace(self, start_line=first, end_line=max(last, first))

    def on_code(self, lines: list[str]) -> "Range":
        """This range's lines in ``lines`` (a file's, or a cell's), from the first character of
        code on the first to the end of the code on the last; as it is when they are not there."""
        if not 1 <= self.start_line <= self.end_line <= len(lines):
            return self
        first, last = lines[self.start_line - 1], lines[self.end_line - 1]
        return replace(self, start_column=len(first) - len(first.lstrip()) + 1, end_column=len(last.rstrip()) + 1)

    def record(self) -> dict:
        """As the JSON report writes it."""
        return {
            "start": {"line": self.start_line, "column": self.start_column},
            "end": {"line": self.end_line, "column": self.end_column},
        }


@dataclass(frozen=True)
class Fix:
    """A finding's fix: its ``safety``, the rule's (registry.FIXES: "safe", "unsafe", or
    "none" for a rule that only reports), and whether it was ``applied``: False for an item to
    decide, and for a change the fix-safety gate withheld (an unsafe fix without
    --unsafe-fixes: pending)."""

    safety: str
    applied: bool

    @classmethod
    def of(cls, rule: str, applied: bool) -> "Fix":
        entry = RULES.get(rule)
        return cls(entry[1] if entry else "none", applied)

    def record(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Finding:
    """One change made, or one spot a person must decide, at ``range`` in its file; ``fix``
    says the rule's fix safety and whether this one was made (report.Fix).

    ``message`` is one line, what to do, without the lines it names: those are ``cites``,
    shown after it in parentheses (``(line 12, 14)``, after the words ``cited_as``: ``(set
    on line 12)``) when it is shown, numbered in the file as it is then written (``shown``).
    ``detail`` is the why and how of this spot, beyond the message: the long text the JSON
    and SARIF reports carry (the rule's own why is its docs, ``xrt2pjrt rules ID``)."""

    rule: str
    range: Range
    message: str
    fix: Fix
    cites: tuple[Cite, ...] = ()
    cited_as: str = ""
    detail: str = ""
    # For an item: the line to put in its place (a whole image name, a pin), which a person
    # would otherwise look up; for a change: what it does not keep of the old behaviour, and
    # how to get it back. Every output shows them, text output on a line of their own.
    use: str = ""
    caveat: str = ""
    # In a notebook: the cell's number (1-based, as Jupyter counts) and the range in it
    # (``range`` is then in the notebook's JSON text).
    cell: int | None = None
    cell_range: Range | None = None

    @property
    def line(self) -> int:
        """The first line of ``range``."""
        return self.range.start_line

    def shown(
        self,
        number: Callable[[Cite], int] = lambda cite: cite.line,
        text: Callable[[Cite], str | None] = lambda cite: None,
    ) -> str:
        """The message with its cites, each numbered ``number(cite)``, a quoted one quoting
        ``text(cite)`` (its text as read when that is None)."""
        if not self.cites:
            return self.message
        return f"{self.message} ({self.cited_as}{_cited(self.cites, number, text)})"

    def moved(self, lines: int) -> "Finding":
        """This finding of a snippet, in the file the snippet starts ``lines`` lines into."""
        return self.placed(lambda line: line + lines)

    def placed(self, line_in_file: Callable[[int], int]) -> "Finding":
        """This finding of a snippet, its range and the lines it cites (but a cell's) numbered
        in the file by ``line_in_file`` (the snippet's line -> the file's)."""
        cites = tuple(c if c.cell is not None else replace(c, line=line_in_file(c.line)) for c in self.cites)
        return replace(self, range=self.range.moved(line_in_file), cites=cites)

    def to_decide(self, message: str) -> "Finding":
        """This change, not made: an item to decide saying ``message``, at the same place."""
        return Finding(
            self.rule,
            self.range,
            message,
            replace(self.fix, applied=False),
            cell=self.cell,
            cell_range=self.cell_range,
            use=self.use,
        )

    def on_code(self, lines: list[str], cells: Sequence[list[str]] = ()) -> "Finding":
        """This finding with the columns of its range (and its cell range, in ``cells``, the
        lines of each cell of a notebook) taken from the code on its lines (Range.on_code)."""
        cell_range = self.cell_range
        if cell_range is not None and 1 <= self.cell <= len(cells):
            cell_range = cell_range.on_code(cells[self.cell - 1])
        return replace(self, range=self.range.on_code(lines), cell_range=cell_range)


# The quoted cites show this many characters of their line at most.
_QUOTE_LENGTH = 100


def quote_line(text: str) -> str:
    """A line's text as a message cites it after its number (``line 73: `text```)."""
    text = text.strip().replace("`", "'")
    return f": `{text[: _QUOTE_LENGTH - 3]}...`" if len(text) > _QUOTE_LENGTH else f": `{text}`"


def _cited(cites: tuple[Cite, ...], number: Callable[[Cite], int], text: Callable[[Cite], str | None]) -> str:
    """``line 73: `its text`; and line 80, 95``: the quoted cites one by one, then the others."""

    def place(c: Cite) -> str:
        return f"{number(c)}" if c.cell is None else f"{number(c)} of cell {c.cell}"

    quoted = [c for c in cites if c.text is not None]
    parts = [f"line {place(c)}{quote_line(t if (t := text(c)) is not None else c.text)}" for c in quoted]
    plain = [c for c in cites if c.text is None]
    if plain:
        numbers = (
            f"line {', '.join(map(place, plain))}"
            if all(c.cell is None for c in plain)
            else ", ".join(f"line {place(c)}" for c in plain)
        )
        parts.append(("and " if quoted else "") + numbers)
    return "; ".join(parts)


@dataclass
class FileResult:
    path: str
    kind: str
    original: str | None = None
    updated: str | None = None
    changes: list[Finding] = field(default_factory=list)
    manual: list[Finding] = field(default_factory=list)
    error: str | None = None
    error_range: Range | None = None  # the place the error names (a parse error's line and column)
    skipped: bool = False  # by a `# xrt2pjrt: skip-file` comment
    todo_lines: int = 0  # the TODO(xrt2pjrt) lines in the file as read: an earlier --write's, left to settle

    def todo_lines_left(self, written: bool) -> int:
        """The TODO(xrt2pjrt) lines in the file as the run leaves it: as written, when ``written``."""
        return todo_lines(self.kind, self.updated) if written and self.changed else self.todo_lines

    @property
    def changed(self) -> bool:
        return self.error is None and self.updated is not None and self.updated != self.original

    @property
    def made(self) -> list[Finding]:
        """The changes made (or that --write makes): all but the pending ones."""
        return [f for f in self.changes if f.fix.applied]

    @property
    def pending(self) -> list[Finding]:
        """The changes the fix-safety gate withheld (unsafe fixes, without --unsafe-fixes)."""
        return [f for f in self.changes if not f.fix.applied]

    @property
    def only_todo_lines(self) -> bool:
        """Changed, but only by the TODO lines that mark items to decide."""
        return self.changed and not self.made


@dataclass
class Summary:
    files_seen: int = 0
    files_changed: int = 0  # the text changes (TODO lines included)
    files_only_todo_lines: int = 0  # ... of which only by TODO lines
    files_with_manual_items: int = 0
    files_failed: int = 0
    changes: int = 0
    manual: int = 0
    pending: int = 0  # unsafe fixes withheld (--unsafe-fixes makes them)
    # What the files hold once the run is done: a second pass reports only what its rules
    # still see, while an earlier --write's TODO lines stay until a person settles them.
    todo_lines: int = 0
    files_with_todo_lines: int = 0
    files_ignored: int = 0  # of a kind migrated here, skipped as git or a .gitignore ignores them

    @classmethod
    def of(cls, results: list[FileResult], written: bool = False, ignored: int = 0) -> "Summary":
        left = [r.todo_lines_left(written) for r in results]
        return cls(
            files_ignored=ignored,
            files_seen=len(results),
            files_changed=sum(r.changed for r in results),
            files_only_todo_lines=sum(r.only_todo_lines for r in results),
            files_with_manual_items=sum(bool(r.manual) for r in results if r.error is None),
            files_failed=sum(r.error is not None for r in results),
            # a file that failed changed nothing, and its items are not listed: its error is
            changes=sum(len(r.made) for r in results if r.error is None),
            manual=sum(len(r.manual) for r in results if r.error is None),
            pending=sum(len(r.pending) for r in results if r.error is None),
            todo_lines=sum(left),
            files_with_todo_lines=sum(map(bool, left)),
        )


@dataclass(frozen=True)
class Item:
    """A change, an item to decide or an error, at ``range`` in the file as written (in a
    notebook: in its cell)."""

    path: str
    kind: str  # "change", "pending" (an unsafe fix withheld), "decide" or "error"
    rule: str | None
    message: str
    range: Range
    fix: Fix | None = None  # None: an error
    # The long text: the message whole, with its cites and the finding's detail (``message``
    # is that, shortened to one short line).
    detail: str = ""
    # In a notebook: the cell (1-based), whose lines ``range`` counts, and the line of the
    # notebook's file it is on (what GitHub's annotations point at).
    cell: int | None = None
    file_line: int = 0
    use: str = ""  # Finding.use
    caveat: str = ""  # Finding.caveat

    @property
    def where(self) -> str:
        """``path:line:column`` (``path:cell 3:line:column`` in a notebook), as ruff says it."""
        at = self.range
        return f"{self.path}:{'' if self.cell is None else f'cell {self.cell}:'}{at.start_line}:{at.start_column}"

    def record(self) -> dict:
        record = {
            "rule": self.rule,
            "message": self.message,
            "range": self.range.record(),
            "fix": self.fix and self.fix.record(),
            "detail": self.detail,
        }
        # (only where there are: an item's record is the same as ever without)
        record.update((key, value) for key, value in (("use", self.use), ("caveat", self.caveat)) if value)
        return record if self.cell is None else {**record, "cell": self.cell}

    @property
    def extra(self) -> str:
        """What the item says beyond its message, for a line of its own: the line to use,
        or what the change does not keep."""
        return f"use: {self.use}" if self.use else f"note: {self.caveat}" if self.caveat else ""


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def one_line(message: str) -> str:
    """A message that may quote a tool's output over several lines, on one line."""
    return " / ".join(line.strip() for line in message.splitlines() if line.strip())


# Where a text too long for its room is cut, strongest first: the end of a clause, then of
# a phrase; the words it keeps are followed by this mark.
_CLAUSE_ENDS = (": ", "; ")
_PHRASE_ENDS = (", ", " (", " - ")
CUT = "..."


def shortened(text: str, room: int) -> str:
    """``text`` on one line in at most ``room`` characters: whole when it fits, else cut at
    the last clause end (else phrase end, else word) that keeps at least half of the room,
    marked with "...". What it does not say is the finding's long text (``Finding.detail``)."""
    text = one_line(text)
    if len(text) <= room:
        return text
    keep = max(room - len(CUT), 1)
    for ends in (_CLAUSE_ENDS, _PHRASE_ENDS, (" ",)):
        at = max(text.rfind(end, 0, keep + 1) for end in ends)
        if at >= room // 2:
            return text[:at].rstrip(" ,;:(-") + CUT
    return text[:keep] + CUT


@dataclass
class Run:
    """The results of one run, in ``mode``."""

    results: list[FileResult]
    mode: str = "preview"
    ignored: int = 0  # files skipped as ignored
    inventory: list | None = None  # inventory.Entry's, with --inventory

    @cached_property
    def summary(self) -> Summary:
        return Summary.of(self.results, written=self.mode == "write", ignored=self.ignored)

    @property
    def interesting(self) -> list[FileResult]:
        # Files that were only looked at stay out of the listings; the summary counts them.
        return [r for r in self.results if r.changes or r.manual or r.error or r.changed]

    def verb(self, result: FileResult) -> str:
        if result.only_todo_lines:
            return "gained TODO lines only" if self.mode == "write" else "would gain TODO lines only"
        return "changed" if self.mode == "write" else "would change"

    def items(self, result: FileResult) -> list[Item]:
        """Every item of ``result``, placed in the file as written."""
        path = quoted(result.path)
        if result.error is not None:
            error = one_line(result.error)
            return [Item(path, "error", None, error, result.error_range or Range.at(1), detail=error)]
        written = self.mode == "write" and result.changed
        lines = result.updated.splitlines() if written else []
        out = []
        for kind, findings in (("change", result.made), ("pending", result.pending), ("decide", result.manual)):
            for f in findings:
                shown = one_line(self._cited_as_written(result, f, lines) if written else f.shown())
                detail = f"{shown}: {one_line(f.detail)}" if f.detail else shown
                # the message short, the lines it cites whole: they say where to look
                short = replace(f, message=shortened(f.message, MESSAGE_ROOM))
                message = one_line(self._cited_as_written(result, short, lines) if written else short.shown())
                at, file_at = self._placed(result, f, lines) if written else (f.cell_range or f.range, f.range)
                out.append(
                    Item(
                        path,
                        kind,
                        f.rule,
                        message,
                        at,
                        f.fix,
                        detail=detail,
                        cell=f.cell,
                        file_line=file_at.start_line,
                        use=f.use,
                        caveat=f.caveat,
                    )
                )
        # in the file's order (a notebook's cells too); stable: a line's items keep their order
        return sorted(out, key=lambda item: (item.file_line, item.range.start_line, item.range.start_column))

    def _placed(self, result: FileResult, finding: Finding, lines: list[str]) -> tuple[Range, Range]:
        """Where ``finding`` is after --write, on the code of the new file (``lines``): in its
        cell (in the file, outside a notebook), and in the file."""
        in_file = finding.range.through(lambda line: self._new_line(result, line)).on_code(lines)
        if finding.cell is None:
            return in_file, in_file
        moves = self._cell_moves(result, finding.cell)
        if moves is None:
            return finding.cell_range, in_file
        return finding.cell_range.through(moves.of).on_code(self._cells(result)[1][finding.cell - 1]), in_file

    def _new_line(self, result: FileResult, line: int) -> tuple[int, int]:
        """Where line ``line`` of the file as read is in the new file: its statement's line
        (the TODO lines written above it skipped), and the last line of what replaced it."""
        cache = self.__dict__.setdefault("_moves", {})
        if result.path not in cache:
            cache[result.path] = _Moves(result.original.splitlines(), result.updated.splitlines())
        return cache[result.path].of(line)

    def _cited_as_written(self, result: FileResult, finding: Finding, lines: list[str]) -> str:
        """``finding`` shown with the lines it cites numbered, and their text quoted, in the file
        as written (``lines``): a second pass, which reads that file, says the same. A
        notebook's cites of its cells' lines count in their cells."""

        def number(cite: Cite) -> int:
            if cite.cell is None:
                return self._new_line(result, cite.line)[0]
            moves = self._cell_moves(result, cite.cell)
            return moves.of(cite.line)[0] if moves else cite.line

        def text(cite: Cite) -> str | None:
            if cite.cell is not None and self._cell_moves(result, cite.cell) is None:
                return None
            written = lines if cite.cell is None else self._cells(result)[1][cite.cell - 1]
            at = number(cite)
            return written[at - 1] if 1 <= at <= len(written) else None

        return finding.shown(number, text)

    def _cells(self, result: FileResult) -> tuple[list[list[str]], list[list[str]], dict]:
        """The lines of each cell of a notebook as read and as written, and their moves."""
        cache = self.__dict__.setdefault("_cells_cache", {})
        if result.path not in cache:
            cache[result.path] = (cell_lines(result.original), cell_lines(result.updated), {})
        return cache[result.path]

    def _cell_moves(self, result: FileResult, cell: int) -> "_Moves | None":
        """Where each line of ``cell`` (1-based) is in the cell as written; None for a cell the
        notebook as read or as written does not have."""
        old, new, moves = self._cells(result)
        if not (1 <= cell <= min(len(old), len(new))):
            return None
        if cell not in moves:
            moves[cell] = _Moves(old[cell - 1], new[cell - 1])
        return moves[cell]


def cell_lines(notebook: str) -> list[list[str]]:
    """The lines of each cell of ``notebook`` (its JSON text); none when it does not read."""
    try:
        cells = json.loads(notebook)["cells"]
        return [("".join(c["source"]) if isinstance(c["source"], list) else c["source"]).splitlines() for c in cells]
    except (ValueError, KeyError, TypeError):
        return []


# The largest replaced block (lines before times lines after) whose lines are matched one
# by one: beyond it, lines are taken in order (the cost is their product).
_MATCHED_AT_MOST = 2_500


class _Moves:
    """Where each line of ``old`` is in ``new``, its rewrite.

    The TODO lines are set aside before the two are matched: a TODO line written between
    two lines that recur in the file (``def main(index):`` above a spawn) split them, and
    the matcher then paired them with a later copy, placing an item in another function."""

    def __init__(self, old: list[str], new: list[str]):
        self.old_kept = [i for i, text in enumerate(old) if TODO_MARK not in text]
        self.new_kept = [j for j, text in enumerate(new) if TODO_MARK not in text]
        self.old = [old[i] for i in self.old_kept]
        self.new = [new[j] for j in self.new_kept]
        self.opcodes = diff.matcher(self.old, self.new).get_opcodes()
        self.ends = [op[2] for op in self.opcodes]

    def of(self, line: int) -> tuple[int, int]:
        """Line ``line``'s statement's line in ``new`` (the TODO lines written above it
        skipped), and the last line of what replaced it."""
        i = bisect.bisect_left(self.old_kept, line - 1)
        if i == len(self.old_kept) or self.old_kept[i] != line - 1:
            return line, line  # a TODO line, or past the end
        # the opcode holding the line, found by its end (a loop over all of them, for each of a
        # large file's items, was quadratic)
        k = bisect.bisect_right(self.ends, i)
        if k == len(self.opcodes) or not self.new_kept:
            return line, line
        tag, i1, i2, j1, j2 = self.opcodes[k]
        at = min(j1 + i - i1, max(j2 - 1, j1), len(self.new_kept) - 1)
        if tag == "replace" and i2 - i1 != j2 - j1 and (i2 - i1) * (j2 - j1) <= _MATCHED_AT_MOST:
            at = self._likest(i, j1, j2, at)
        last = self.new_kept[max(at, j2 - 1)] if tag != "equal" and j2 > j1 else self.new_kept[at]
        return self.new_kept[at] + 1, last + 1

    def _likest(self, i: int, j1: int, j2: int, guess: int) -> int:
        """The line of ``new[j1:j2]`` most like ``old[i]`` (nearest ``guess`` among equals):
        where a block grew or shrank (an import added above a rewritten call, in one block),
        lines do not follow one another one for one."""
        return max(
            range(j1, j2),
            key=lambda j: (difflib.SequenceMatcher(None, self.old[i], self.new[j]).ratio(), -abs(j - guess)),
        )


# --- renderings -------------------------------------------------------------------


def to_text(
    run: Run, apply: str = "xrt2pjrt migrate --write, with the same paths and options"
) -> list[tuple[str, str]]:
    """The human report, as (style, line): style "file", "decide", "note", "use", "error",
    "summary", "next". Each file's line comes first, then its items: FILE:LINE:COLUMN: lines, as
    editors and CI read them (one line each). A preview or check ends with the next step:
    ``apply``, the command that makes the changes, and how to settle what is open."""
    out = []
    for r in run.interesting:
        if r.error is None and r.changed:
            details = [plural(len(r.made), "change")] if r.made else []
            details += [plural(len(r.manual), "item") + " to decide"] if r.manual else []
            out.append(("file", f"{quoted(r.path)}: {run.verb(r)}" + (f" ({', '.join(details)})" if details else "")))
        for item in run.items(r):
            where = f"{item.where}:"
            if item.kind == "change":
                if item.caveat:  # the diff shows the change, not what it does not keep
                    out.append(("note", f"{where} note [{item.rule}] {item.caveat}"))
                continue  # -v lists them
            if item.kind == "error":
                out.append(("error", f"{item.path}: error: {item.message}"))
            elif item.kind == "pending":
                out.append(("decide", f"{where} pending [{item.rule}] {item.message} ({PENDING})"))
            else:
                out.append(("decide", f"{where} decide [{item.rule}] {item.message}"))
            if item.use:
                out.append(("use", f"    use: {item.use}"))
    out.append(("summary", summary_line(run)))
    if run.mode != "write" and run.summary.files_changed:
        out.append(("next", f"To apply them: {apply}"))
    if run.summary.manual:
        out.append(
            (
                "next",
                "To settle a spot to decide: fix it as its item says, or keep it with "
                "`# xrt2pjrt: ignore[RULE-ID]` in place of its TODO line.",
            )
        )
    return out


def statistics(run: Run, families: Sequence[str]) -> list[str]:
    """Changes (and pending fixes, where there are any) and items to decide counted by family,
    in the order of ``families`` (the checklist's), and by rule, as ``ruff --statistics``
    counts: what each pull request of the checklist will hold."""
    counts: dict[str, list[int]] = {}
    for r in run.results:
        if r.error is None:
            for column, findings in enumerate((r.made, r.pending, r.manual)):
                for f in findings:
                    counts.setdefault(f.rule, [0, 0, 0])[column] += 1
    titles = ("changes", "pending", "items")
    columns = [k for k in range(len(titles)) if titles[k] != "pending" or run.summary.pending]
    rank = {family: k for k, family in enumerate(families)}
    by_family = itertools.groupby(sorted(counts, key=lambda rule: (rank.get(family(rule), len(rank)), rule)), family)
    width = max(map(len, counts), default=0) + 4

    def row(name: str, rules: list[str]) -> str:
        return name.ljust(width) + "".join(f"{sum(counts[r][k] for r in rules):>{len(titles[k]) + 2}}" for k in columns)

    lines = [" " * width + "".join(f"{titles[k]:>{len(titles[k]) + 2}}" for k in columns)]
    for name, rules in by_family:
        rules = list(rules)
        lines += [row(name, rules), *(row(f"  {rule}", [rule]) for rule in rules)]
    return lines + [row("total", list(counts))]


def family(rule: str) -> str:
    return rule.split("-", 1)[0]


# What a pending change is, where it is listed.
PENDING = "unsafe fix, not made: review it, and apply it with --unsafe-fixes"


def change_lines(run: Run) -> list[str]:
    """Every change, one FILE:LINE:COLUMN: line each (for -v)."""
    return [
        f"{i.where}: {'changed' if run.mode == 'write' else 'change'} [{i.rule}] {i.message}"
        for r in run.interesting
        for i in run.items(r)
        if i.kind == "change"
    ]


def summary_line(run: Run) -> str:
    s = run.summary
    done = "changed" if run.mode == "write" else "would change"
    parts = [
        f"{plural(s.files_seen, 'file')} seen",
        f"{s.files_changed - s.files_only_todo_lines} {done}" + f" ({plural(s.changes, 'change')})",
    ]
    if s.files_only_todo_lines:
        parts.append(f"{s.files_only_todo_lines} {'gained' if run.mode == 'write' else 'would gain'} TODO lines only")
    if s.pending:
        parts.append(f"{s.pending} unsafe {'fix' if s.pending == 1 else 'fixes'} pending (--unsafe-fixes makes them)")
    parts.append(f"{plural(s.manual, 'item')} to decide by hand")
    if s.todo_lines:
        parts.append(
            f"{plural(s.todo_lines, 'TODO(xrt2pjrt) line')} {'' if run.mode == 'write' else 'already '}"
            f"in {plural(s.files_with_todo_lines, 'file')} (grep -rn 'TODO(xrt2pjrt)' finds them)"
        )
    if s.files_failed:
        parts.append(f"{s.files_failed} could not be processed")
    if s.files_ignored:
        parts.append(f"{s.files_ignored} skipped as ignored")
    return ", ".join(parts) + "."


def to_json(run: Run) -> str:
    files = []
    for r in run.interesting:
        items = run.items(r)
        record = {
            "path": quoted(r.path),
            "kind": r.kind,
            "changed": r.changed,
            "changes": [i.record() for i in items if i.kind == "change"],
            "manual": [i.record() for i in items if i.kind == "decide"],
            "error": r.error,
            "error_range": r.error_range and r.error_range.record(),
        }
        if r.pending:  # (only where there are: a file's record is the same as ever without)
            record["pending"] = [i.record() for i in items if i.kind == "pending"]
        files.append(record)
    document = {"mode": run.mode, "files": files, "summary": asdict(run.summary)}
    if run.inventory is not None:
        document["inventory"] = [entry.record() for entry in run.inventory]
    return json.dumps(document, indent=2) + "\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def to_github(run: Run) -> str:
    """GitHub Actions workflow commands: one annotation per change, per item to decide and per error."""
    lines = []
    for r in run.interesting:
        for i in run.items(r):
            level = {"error": "error", "decide": "warning", "pending": "warning"}.get(
                i.kind, "notice" if run.mode == "write" else "warning"
            )
            title = "xrt2pjrt" if i.rule is None else f"xrt2pjrt {i.rule}"
            what = {
                "change": "changed" if run.mode == "write" else "would change",
                "decide": "decide by hand",
                "pending": "unsafe fix pending (--unsafe-fixes)",
                "error": "not processed",
            }[i.kind]
            if i.cell is None:
                at = i.range
                props = (
                    f"file={_escape_property(i.path)},line={at.start_line},col={at.start_column},"
                    f"endLine={at.end_line},endColumn={at.end_column},title={_escape_property(title)}"
                )
            else:  # GitHub shows a notebook's file: the line of the cell's source, and the cell's place said
                props = f"file={_escape_property(i.path)},line={i.file_line},title={_escape_property(title)}"
                what = f"cell {i.cell}:{i.range.start_line}:{i.range.start_column}: {what}"
            extra = f" ({i.extra})" if i.extra else ""
            lines.append(f"::{level} {props}::{_escape_data(f'{what}: {i.message}{extra}')}")
    return "".join(line + "\n" for line in lines)


SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def to_sarif(run: Run) -> str:
    """SARIF 2.1.0: one run, the rules that appear as the driver's rules, one result per
    change and item to decide; files that could not be processed are the invocation's
    notifications."""
    items = [i for r in run.interesting for i in run.items(r)]
    rule_ids = sorted({i.rule for i in items if i.rule})
    index = {rid: n for n, rid in enumerate(rule_ids)}
    rules = []
    for rid in rule_ids:
        kind, fix, summary = RULES.get(rid, (None, None, rid))
        rules.append(
            {
                "id": rid,
                "shortDescription": {"text": summary},
                "fullDescription": {"text": WHY.get(rid) or summary},
                "help": {"text": f"{summary}. `xrt2pjrt rules {rid}` shows why, and its examples."},
                "properties": {"kind": kind, "safe": fix != "unsafe" if fix else None},
            }
        )

    def location(i: Item) -> dict:
        return {
            "physicalLocation": {
                "artifactLocation": {"uri": i.path.replace("\\", "/")},
                "region": {
                    "startLine": i.range.start_line,
                    "startColumn": i.range.start_column,
                    "endLine": i.range.end_line,
                    "endColumn": i.range.end_column,
                },
            }
        }

    results, notifications = [], []
    for i in items:
        if i.kind == "error":
            notifications.append(
                {"level": "error", "message": {"text": f"not processed: {i.message}"}, "locations": [location(i)]}
            )
            continue
        what = {
            "change": "changed" if run.mode == "write" else "would change",
            "decide": "decide by hand",
            "pending": "unsafe fix pending (--unsafe-fixes)",
        }[i.kind]
        results.append(
            {
                "ruleId": i.rule,
                "ruleIndex": index[i.rule],
                "level": "note" if i.kind == "change" and run.mode == "write" else "warning",
                "message": {"text": f"{what}: {i.message}" + (f" ({i.extra})" if i.extra else "")},
                "locations": [location(i)],
                "properties": {
                    "xrt2pjrt": i.kind,
                    "fix": i.fix.record(),
                    "detail": i.detail,
                    **({} if i.cell is None else {"cell": i.cell}),
                },
            }
        )
    document = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "xrt2pjrt", "version": __version__, "rules": rules}},
                "invocations": [
                    {"executionSuccessful": not notifications, "toolExecutionNotifications": notifications}
                ],
                "results": results,
            }
        ],
    }
    return json.dumps(document, indent=2) + "\n"


def to_markdown(run: Run) -> str:
    lines = ["# xrt2pjrt migration report", "", summary_line(run), ""]
    for r in run.interesting:
        lines += [f"## `{quoted(r.path)}`", ""]
        if r.error:
            lines += [f"**Not processed:** {r.error}", ""]
        elif r.changed:
            lines += [f"{run.verb(r).capitalize()}.", ""]
        items = run.items(r)
        for title, kind in (
            ("Changes", "change"),
            ("Unsafe fixes pending (--unsafe-fixes)", "pending"),
            ("Decide by hand", "decide"),
        ):
            chosen = [i for i in items if i.kind == kind]
            if chosen:
                lines += [f"### {title}", ""]
                lines += [
                    f"- {'' if i.cell is None else f'cell {i.cell}, '}line {i.range.start_line} `{i.rule}`: {i.message}"
                    + (f" ({i.extra})" if i.extra else "")
                    for i in chosen
                ]
                lines.append("")
    if run.inventory is not None:
        lines += ["## Inventory", "", "| status | kind | name | why | where |", "|---|---|---|---|---|"]
        lines += [
            f"| {e.status} | {e.kind} | `{e.name}` | {e.why.replace('|', '/')} | {', '.join(e.places)} |"
            for e in run.inventory
        ]
        lines.append("")
    return "\n".join(lines)


FORMATS = {"json": to_json, "github": to_github, "sarif": to_sarif, "markdown": to_markdown}
