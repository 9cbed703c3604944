"""Inline suppression: the comments that keep a line, a statement or a file as it is.

    x = xm.xrt_world_size()  # xrt2pjrt: ignore
    xmp.spawn(fn, nprocs=8)  # xrt2pjrt: ignore[spawn-nprocs-literal, api]
    # xrt2pjrt: ignore[manual-mesh-reduce-objects]
    acc = xm.mesh_reduce('acc', acc, np.mean)
    # xrt2pjrt: skip-file

Every file kind the tool rewrites writes comments with ``#`` (Python, shell, Dockerfile,
YAML; a Markdown code block or a notebook cell is rewritten as the code it holds), so one
reading serves all of them. A marker on a comment line of its own is for the code line below
it (past the other comment lines between): where a TODO line stood, the marker that replaces
it keeps its statement as the user decided. ``ignore`` with no list keeps every rule off; a
list names rule ids, id prefixes or families, as ``--ignore`` does. A marker covers every line of the
statement it is on: the Python rewriter gives the statements' spans (so a marker on any
line of ``xmp.spawn(...)`` over three lines keeps the call), and a command continued with
``\\`` (where a comment can only go on the last line) is covered whole.

The rewriters ask ``covers(rule, line)`` before they change or report anything: the
Python engine before it runs a rule on a node, ``recorder.Recorder`` before it takes a
change or an item to decide; the engine (codemod.py) leaves a ``skip-file`` file unread.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from xrt2pjrt.registry import names
from xrt2pjrt.rule_index import SETTLED_BY

_MARKER = re.compile(r"#\s*xrt2pjrt:\s*ignore(?:\[(?P<ids>[^\]]*)\])?(?![\w\[-])")
_SKIP_FILE = re.compile(r"#\s*xrt2pjrt:\s*skip-file\b")
_QUICK = "xrt2pjrt:"  # no marker without it: most files stop at this test

EVERY_RULE = None  # a line's entry when ``ignore`` names no rule


@dataclass
class Marker:
    """One marker: the line it is on, the rule words it names (EVERY_RULE: all), and the
    lines it covers."""

    line: int
    words: frozenset[str] | None
    lines: set[int] = field(default_factory=set)


class Suppressions:
    """The suppression markers of one text: line -> the rule words it names (EVERY_RULE: all)."""

    def __init__(self, text: str, statements: Callable[[], Iterable[tuple[int, int]]] | None = None):
        """``statements``: the (first, last) lines of the statements of ``text``, asked for
        only when the text holds a marker."""
        self.lines: dict[int, frozenset[str] | None] = {}
        self.markers: list[Marker] = []
        if _QUICK not in text:
            return
        continued_from = 1  # the first line of the logical line being read
        above: list[Marker] = []  # the markers of this logical line and the comment lines just above it
        for number, line in enumerate(text.splitlines(), start=1):
            match = _MARKER.search(line)
            if match:
                self.markers.append(
                    Marker(
                        number,
                        EVERY_RULE
                        if match["ids"] is None
                        else frozenset(w.strip() for w in match["ids"].split(",") if w.strip()),
                    )
                )
                above.append(self.markers[-1])
            if line.lstrip().startswith("#"):  # a comment line: its marker is for the code below it
                continue
            for marker in above:
                marker.lines.update(range(continued_from, number + 1))
            if not line.endswith("\\"):  # the logical line ends: so do the markers' lines
                continued_from, above = number + 1, []
        if self.markers and statements is not None:
            spans = list(statements())
            for marker in self.markers:
                for first, last in spans:
                    if marker.lines & set(range(first, last + 1)):
                        marker.lines.update(range(first, last + 1))
        for marker in self.markers:
            for covered in marker.lines:
                self._add(covered, marker.words)

    def _add(self, line: int, words: frozenset[str] | None) -> None:
        if words is EVERY_RULE or (line in self.lines and self.lines[line] is EVERY_RULE):
            self.lines[line] = EVERY_RULE
        else:
            self.lines[line] = self.lines.get(line, frozenset()) | words

    def __bool__(self) -> bool:
        return bool(self.lines)

    def settles(self, line: int) -> bool:
        """True when a marker covers ``line`` for some rule: the user decided the spot, and
        the rules that speak only where no other did (api-not-in-target on what another
        rule reported) keep quiet there too."""
        return line in self.lines

    def covers(self, rule_id: str, *lines: int) -> bool:
        """True when a marker on one of ``lines`` keeps ``rule_id`` off: one naming it, or a rule
        that asks the same decision there (Rule.settled_by)."""
        for line in lines:
            words = self.lines.get(line, frozenset())
            if words is EVERY_RULE or any(keeps_off(word, rule_id) for word in words):
                return True
        return False


def keeps_off(word: str, rule_id: str) -> bool:
    """Whether a marker's ``word`` keeps ``rule_id`` off: it names the rule, or a rule that asks
    the same decision (Rule.settled_by)."""
    return any(names(word, r) for r in (rule_id, *SETTLED_BY.get(rule_id, ())))


def skips_file(text: str) -> bool:
    """True when ``# xrt2pjrt: skip-file`` asks to leave the whole file alone (anywhere: in a
    notebook the comment is inside the JSON of a cell)."""
    return _QUICK in text and _SKIP_FILE.search(text) is not None


def has_markers(text: str) -> bool:
    """Whether ``text`` holds an ``ignore`` marker."""
    return _QUICK in text and _MARKER.search(text) is not None


def blank_markers(text: str) -> str:
    """``text`` with every ``ignore`` marker's words turned to spaces: the same lines and
    columns, as if no marker were there (settling.py rewrites it to see what they keep off)."""
    return _MARKER.sub(lambda m: "#" + " " * (len(m.group()) - 1), text)
