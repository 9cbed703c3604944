"""What one pass over one text records: its span edits, its changes and its items to decide.

Every rewriter that edits text by spans (the text kinds, the magics of a notebook, a
document's code blocks) records through a ``Recorder``; the rules of the text kinds are
handed one (text/rule.py). It stands beside rewriters.py, below every rewriter.
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass, field

from xrt2pjrt.registry import Options
from xrt2pjrt.report import Finding, Fix, Range
from xrt2pjrt.rewriters import TODO, Outcome, same_todo, todo_comment
from xrt2pjrt.suppress import Suppressions
from xrt2pjrt.width import NOT_PYTHON


@dataclass(frozen=True)
class Edit:
    start: int
    end: int
    text: str


@dataclass
class Recorder:
    """What the rules of one pass want done to ``text``: edits, changes, manual items."""

    text: str
    options: Options
    # A requirements file: the project's dependencies, whatever device the text names.
    lists_dependencies: bool = False
    edits: list[Edit] = field(default_factory=list)
    changes: list[Finding] = field(default_factory=list)
    manual: list[Finding] = field(default_factory=list)

    def __post_init__(self):
        self.suppressions = Suppressions(self.text)  # `# xrt2pjrt: ignore` markers (suppress.py)
        # Where each line ends, and the edits so far sorted by place, built as needed: a line
        # number or an overlap test must not cost a walk over the whole text or every edit
        # (a large script of many findings was quadratic).
        self._newlines: list[int] | None = None
        self._spans: list[tuple[int, int]] = []
        self._spanned = 0  # how many of ``edits`` are in _spans (rewriters also append to it)

    def on(self, rule: str, offset: int) -> bool:
        """Whether ``rule`` is selected and no marker keeps it off at ``offset``: what a rule
        that plans several places together asks first, so a kept one counts as absent."""
        return self.options.on(rule) and not (self.suppressions and self.suppressions.covers(rule, self.line(offset)))

    def line(self, offset: int) -> int:
        if self._newlines is None:
            self._newlines = [m.start() for m in re.finditer("\n", self.text)]
        return bisect.bisect_left(self._newlines, offset) + 1

    def _overlaps(self, e: Edit) -> bool:
        """Whether ``e`` overlaps an edit recorded so far (they do not overlap each other, so
        sorted by start their ends rise too: only the last one starting before ``e`` ends can)."""
        for o in self.edits[self._spanned :]:
            bisect.insort(self._spans, (o.start, o.end))
        self._spanned = len(self.edits)
        k = bisect.bisect_left(self._spans, (e.end, -1)) - 1  # the last edit starting before e ends
        return k >= 0 and self._spans[k][1] > e.start

    def change(self, rule: str, offset: int, message: str, *edits: Edit, caveat: str = "") -> None:
        """Record a change made of ``edits``; dropped whole when it overlaps an earlier one.
        One the fix-safety gate withholds is recorded as pending, its edits dropped.
        ``caveat``: what the change does not keep (report.Finding)."""
        if any(self._overlaps(e) for e in edits):
            return
        if self.suppressions and self.suppressions.covers(rule, self.line(offset)):
            return
        applied = not self.options.withholds(rule)
        if applied:
            self.edits.extend(edits)
        first = self.line(offset)
        last = max((self.line(max(e.end - 1, e.start)) for e in edits), default=first)
        self.changes.append(Finding(rule, Range.of_lines(first, last), message, Fix.of(rule, applied), caveat=caveat))

    def decide(self, rule: str, offset: int, message: str, detail: str = "", use: str = "") -> None:
        """Report a spot a person must decide: ``message`` what to do, ``detail`` why, ``use``
        the line to put in (report.Finding)."""
        self.decide_at_line(rule, self.line(offset), message, detail, use)

    def decide_at_line(self, rule: str, line: int, message: str, detail: str = "", use: str = "") -> None:
        finding = Finding(rule, Range.of_lines(line), message, Fix.of(rule, applied=False), detail=detail, use=use)
        if self.suppressions and self.suppressions.covers(rule, line):
            return
        if finding not in self.manual:
            self.manual.append(finding)

    def outcome(self) -> Outcome:
        out, pos = [], 0
        for e in sorted(self.edits, key=lambda e: (e.start, e.end)):
            out.append(self.text[pos : e.start])
            out.append(e.text)
            pos = e.end
        out.append(self.text[pos:])
        by_line = lambda f: f.line  # noqa: E731  (stable: same-line findings keep their order)
        return Outcome("".join(out), sorted(self.changes, key=by_line), sorted(self.manual, key=by_line))


def todo_line(message: str, rule: str, margin: str = "", width: int | None = None) -> str:
    """The comment line that marks an item to decide in a text, after ``margin``, fitting
    ``width`` (None: a shell script's, a Dockerfile's or YAML's, 100)."""
    return f"{margin}{todo_comment(message, rule, width or NOT_PYTHON, margin)}\n"


def without_new_todo_lines(before: str, after: str) -> str:
    """``after`` (a rewrite of ``before``) without the TODO lines the rewrite added."""
    had = {line.strip() for line in before.splitlines()}
    return "".join(
        line
        for line in after.splitlines(keepends=True)
        if not (line.lstrip().startswith(TODO) and line.strip() not in had)
    )


def leave_todo_comments(rec: Recorder, statements: list[tuple[int, int]]) -> None:
    """Mark each item to decide with a ``# TODO(xrt2pjrt): ...`` line above the statement it
    is in, as the Python rules do, so that it outlives ``--write``. ``statements`` are the
    (first, last) lines of the statements a comment line may go above; an item in none of
    them stays in the report only. A comment already there is not written again."""
    lines = re.findall(r"[^\n]*\n|[^\n]+$", rec.text)  # as Recorder.line counts them
    starts = list(itertools.accumulate(map(len, lines), initial=0))
    written: set[tuple[int, str]] = set()
    for f in rec.manual:
        first = next((a for a, b in statements if a <= f.line <= b), None)
        if first is None or first > len(lines):
            continue
        line = lines[first - 1]
        margin = line[: len(line) - len(line.lstrip(" \t"))]
        comment = todo_line(f.message, f.rule, margin, rec.options.width)
        if (first, comment) in written or comment_above(lines, first, comment):
            continue
        written.add((first, comment))
        rec.edits.append(Edit(starts[first - 1], starts[first - 1], comment))


def comment_above(lines: list[str], first: int, comment: str) -> bool:
    """Whether ``comment`` is among the comment lines right above line ``first``."""
    above = first - 1
    while above > 0 and lines[above - 1].lstrip().startswith("#"):
        if same_todo(lines[above - 1], comment):
            return True
        above -= 1
    return False


def shifted(findings: list[Finding], lines: int) -> list[Finding]:
    """Findings of a snippet, renumbered for the file the snippet starts ``lines`` lines into,
    with the lines they cite (a markdown block's Python citing its own lines)."""
    return [f.moved(lines) for f in findings]


def merge_into(rec: Recorder, outcome: Outcome, lines: int) -> None:
    """Add the findings of a snippet's rewrite to the recorder of the enclosing file: its
    items but those a marker of the file keeps off (one above a command covers the string in it)."""
    rec.changes.extend(shifted(outcome.changes, lines))
    for f in shifted(outcome.manual, lines):
        if f not in rec.manual and not (rec.suppressions and rec.suppressions.covers(f.rule, f.line)):
            rec.manual.append(f)


def dedent(text: str, indent: str) -> str:
    """An embedded block (a YAML block scalar, a code block in a list item) without its indent."""
    return "".join(
        line[len(indent) :] if line.startswith(indent) else line.lstrip(" \t")
        for line in text.splitlines(keepends=True)
    )


def indent(text: str, prefix: str) -> str:
    """The inverse of ``dedent``: blank lines stay blank."""
    return "".join(prefix + line if line.strip() else line for line in text.splitlines(keepends=True))
