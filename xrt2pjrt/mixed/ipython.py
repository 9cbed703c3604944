"""IPython's magics in Python text: a notebook exported to .py keeps them, out of sight.

nbconvert (and Kaggle's and Colab's "download as .py") writes each magic as the call
IPython makes of it: ``!cmd`` as ``get_ipython().system('cmd')``, ``x = !cmd`` as
``getoutput``, ``%env X=1`` as ``run_line_magic('env', 'X=1')``, a ``%%bash`` cell as
``run_cell_magic('bash', '', 'its lines')``. jupytext comments them out: ``# !pip install …``,
and a ``%%bash`` cell is ``# %% language="bash"`` with each of its lines commented.

``magics`` finds each one and gives the IPython text it stands for (mixed/magics.py says
what that text is and migrates it), the file line of each of its lines, and how a new text
is written back: into the string literal, keeping its quotes, prefix and implicit
concatenation, and the bytes (escapes included) of every line that did not change; into the
comment lines, keeping their ``# ``. Where a new text cannot be written so exactly (a raw
string that would need a backslash, a line split across two literals), ``write`` says so
(None) and the caller reports the spot. A literal it cannot read (an f-string, a name) is a
Magic without a source, for the caller to report if it mentions XRT-era words.
"""

from __future__ import annotations

import ast
import bisect
import difflib
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from xrt2pjrt.python.ipython_calls import METHODS, is_ipython_call
from xrt2pjrt.recorder import Edit


@dataclass
class Magic:
    """One magic of a Python file."""

    text: str  # as the file writes it (the call, the comment lines)
    source: str | None  # the IPython text it stands for (``!pip …``, ``%%bash\\n…``); None: not read
    lines: list[int]  # the file line of each line of ``source``
    statement: int  # offset of the line above which its TODO lines go
    margin: str  # the indentation of that line
    # Edits of the file that make it stand for a new IPython text (one of the same magic
    # line); None when that cannot be written exactly.
    write: Callable[[str], list[Edit] | None]
    todo_inside: bool = False  # its TODO lines stay in ``source`` (a commented bash cell)
    # The statement, whole and alone on its lines, that makes this call: (start, end) of
    # those lines; None when the call is part of a larger one.
    whole: tuple[int, int] | None = None
    top_level: bool = False  # ``whole`` is a statement of the module's own body
    # The edit that takes the magic away (its lines; ``pass`` for the only statement of a
    # block); None when it cannot go (a call inside a larger statement).
    removal: Edit | None = None

    @property
    def line(self) -> int:
        return self.lines[0]


def magics(text: str, tree: ast.Module) -> list[Magic]:
    """The magics of a Python file, in the order of the file."""
    lines = _Lines(text)
    found = list(_calls(text, tree, lines))
    if JUPYTEXT.search(text):
        found += _comments(text, lines)
    return sorted(found, key=lambda m: m.statement)


# A file jupytext (or VS Code, Spyder) writes: `# %%` cells, or jupytext's header.
JUPYTEXT = re.compile(r"^# %%(?:[ \t].*)?$|^#[ \t]+jupytext:", re.M)


# --- nbconvert: calls of get_ipython() ----------------------------------------------------------


def _calls(text: str, tree: ast.Module, lines: "_Lines"):
    # Only a statement with the word on one of its lines can make such a call: the others are
    # not walked (a file's identifiers are its words when it is ASCII: no NFKC spelling).
    holding = sorted({lines.line_of(m.start()) for m in re.finditer("get_ipython", text)}) if text.isascii() else None
    for call, statement, body in _ipython_calls(tree, holding):
        count = METHODS[call.func.attr]
        args = call.args[:count]
        literals = [StringLiteral.of(text, lines, arg) for arg in args]
        whole = None
        if isinstance(statement, ast.Expr) and statement.value is call and lines.alone(statement):
            whole = (lines.start(statement.lineno), lines.end(statement.end_lineno))
        first = lines.start(statement.lineno)
        margin = re.match(r"[ \t]*", text[first:]).group()
        start, end = lines.offset(call.lineno, call.col_offset), lines.offset(call.end_lineno, call.end_col_offset)
        removal = whole and Edit(*whole, "" if len(body) > 1 else f"{margin}pass\n")
        magic = Magic(
            text[start:end],
            None,
            [call.lineno],
            first,
            margin,
            lambda new: None,
            whole=whole,
            top_level=whole is not None and body is tree.body,
            removal=removal,
        )
        if (
            len(args) == count
            and not call.keywords
            and all(lit is not None and lit.value is not None for lit in literals)
        ):
            _read(magic, call.func.attr, literals)
        yield magic


def _ipython_calls(tree: ast.Module, holding: list[int] | None = None):
    """(call, the statement it is in, the block of statements that is in) of each
    ``get_ipython().METHOD(...)`` call; ``holding``: the only lines where one can be (None:
    anywhere)."""

    def may_hold(statement: ast.stmt) -> bool:
        first = min([statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", ()))])
        last = statement.end_lineno
        return holding is None or bisect.bisect_left(holding, first) != bisect.bisect_right(holding, last)

    pending: list[tuple[ast.AST, ast.stmt | None, list]] = [(tree, None, tree.body)]
    while pending:
        node, statement, body = pending.pop()
        for field in ast.iter_fields(node):
            values = field[1] if isinstance(field[1], list) else [field[1]]
            for child in values:
                if isinstance(child, ast.stmt):
                    if may_hold(child):
                        pending.append((child, child, values))
                elif isinstance(child, ast.AST):
                    if is_ipython_call(child):
                        yield child, statement, body
                    pending.append((child, statement, body))


def _read(magic: Magic, method: str, literals: list["StringLiteral"]) -> None:
    """Fill in what ``magic``, a call of ``method`` with these string literals, stands for."""
    *head, last = literals
    if method in ("system", "getoutput"):
        lead = "!"
    elif method == "run_line_magic":
        lead = f"%{head[0].value} " if last.value else f"%{head[0].value}"
    else:  # the magic's name and line, then its body
        lead = f"%%{head[0].value} {head[1].value}".rstrip() + "\n"
    magic.source = lead + last.value
    head_lines = [magic.line] * lead.count("\n")
    magic.lines = head_lines + [last.line_of(k) for k in last.line_starts()]

    def write(new: str) -> list[Edit] | None:
        if not new.startswith(lead):
            return None
        return last.edits(new[len(lead) :])

    magic.write = write


class _Lines:
    """Offsets of a text's lines, as Python's tokenizer ends them, and of ast positions
    (whose columns count UTF-8 bytes)."""

    def __init__(self, text: str):
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]

    def start(self, line: int) -> int:
        return self.starts[line - 1]

    def end(self, line: int) -> int:
        """The offset after line ``line``, its line break included."""
        return self.starts[line] if line < len(self.starts) else len(self.text)

    def offset(self, line: int, column: int) -> int:
        start = self.starts[line - 1]
        head = self.text[start : start + column]
        if head.isascii():
            return start + column
        return start + len(self.text[start : self.end(line)].encode()[:column].decode(errors="ignore"))

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)

    def alone(self, statement: ast.stmt) -> bool:
        """Whether ``statement`` has its lines to itself (no ``a; b``, no code before it)."""
        first = self.text[self.start(statement.lineno) : self.offset(statement.lineno, statement.col_offset)]
        last = self.text[self.offset(statement.end_lineno, statement.end_col_offset) : self.end(statement.end_lineno)]
        return not first.strip() and (not last.strip() or last.lstrip().startswith("#"))


# --- string literals ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Part:
    """One literal of an implicit concatenation: its prefix, its quotes, where its body is."""

    prefix: str  # lower case: "", "r", "u"
    quote: str
    start: int
    end: int


_OPENING = re.compile(r"([rRuUbBfF]{0,2})('''|\"\"\"|'|\")")
_BETWEEN = re.compile(r"(?:[ \t\f\r\n]|\\\r?\n|#[^\r\n]*)*")
_SIMPLE = {"\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_NUMERIC = {"x": 2, "u": 4, "U": 8}


class StringLiteral:
    """A string literal of the source, read with the place of each of its characters."""

    def __init__(
        self,
        text: str,
        lines: _Lines,
        start: int,
        end: int,
        parts: list[_Part],
        value: str,
        starts: list[int],
        ends: list[int],
        owners: list[int],
    ):
        self.text, self._lines, self.start, self.end, self.parts = text, lines, start, end, parts
        self.value = value
        # per character of ``value``: where its spelling starts and ends, and its part
        self._starts, self._ends, self._owners = starts, ends, owners

    @classmethod
    def of(cls, text: str, lines: _Lines, node: ast.expr) -> "StringLiteral | None":
        """The literal ``node`` is; None when it is no plain string literal (a name, an
        f-string, bytes); one whose value is None when its spelling could not be read back."""
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            return None
        start, end = lines.offset(node.lineno, node.col_offset), lines.offset(node.end_lineno, node.end_col_offset)
        parts = _parts(text, start, end)
        literal = None
        if parts is not None:
            chars, starts, ends, owners = [], [], [], []
            for k, part in enumerate(parts):
                for char, a, b in _decoded(text, part):
                    chars.append(char)
                    starts.append(a)
                    ends.append(b)
                    owners.append(k)
            if "".join(chars) == node.value:
                literal = cls(text, lines, start, end, parts, node.value, starts, ends, owners)
        return literal or cls(text, lines, start, end, [], None, [], [], [])

    def line_starts(self) -> list[int]:
        """The index in ``value`` of the first character of each of its lines."""
        return [0] + [m.end() for m in re.finditer("\n", self.value) if m.end() < len(self.value)]

    def line_of(self, index: int) -> int:
        """The file line the character ``index`` of ``value`` is spelled on."""
        if index < len(self._starts):
            return self._lines.line_of(self._starts[index])
        return self._lines.line_of(self.end)

    def edits(self, new: str) -> list[Edit] | None:
        """Edits of the file that make this literal's value ``new``: each changed line of the
        value is spelled again in its part's quoting, every other byte stays. None when the
        new lines cannot be spelled there (or the result would not read back as ``new``)."""
        old_lines, new_lines = self.value.splitlines(keepends=True), new.splitlines(keepends=True)
        offsets = [0]
        for line in old_lines:
            offsets.append(offsets[-1] + len(line))
        edits = []
        matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                continue
            a, b = offsets[i1], offsets[i2]
            if a < b and self._owners[a] != self._owners[b - 1]:
                return None  # the lines run across two literals
            owner = self._owners[a] if a < len(self._owners) else len(self.parts) - 1
            where = (
                (self._starts[a], self._ends[b - 1])
                if a < b
                else ((self._starts[a], self._starts[a]) if a < len(self._starts) else (self.parts[-1].end,) * 2)
            )
            spelled = _spell("".join(new_lines[j1:j2]), self.parts[owner])
            if spelled is None:
                return None
            edits.append(Edit(*where, spelled))
        if not edits:
            return []
        source, pos = [], self.start
        for e in edits:
            source += [self.text[pos : e.start], e.text]
            pos = e.end
        source.append(self.text[pos : self.end])
        try:
            if ast.literal_eval("(" + "".join(source) + "\n)") != new:
                return None
        except (SyntaxError, ValueError):
            return None
        return edits


def _parts(text: str, start: int, end: int) -> list[_Part] | None:
    """The literals of an implicit concatenation spelled in ``text[start:end]``; None for
    bytes or f-strings."""
    parts, pos = [], start
    while True:
        pos = _BETWEEN.match(text, pos, end).end()
        if pos >= end:
            return parts
        opening = _OPENING.match(text, pos, end)
        if opening is None or set(opening.group(1).lower()) & set("bf"):
            return None
        quote, i = opening.group(2), opening.end()
        while not text.startswith(quote, i):
            if i >= end:
                return None
            i += 2 if text[i] == "\\" else 1
        parts.append(_Part(opening.group(1).lower(), quote, opening.end(), i))
        pos = i + len(quote)


def _decoded(text: str, part: _Part):
    """(character, start, end) of each character of a literal's value, with where its
    spelling is."""
    i, raw = part.start, "r" in part.prefix
    while i < part.end:
        c = text[i]
        if c == "\r":  # a line break inside triple quotes reads as "\n"
            j = i + 2 if text.startswith("\r\n", i) else i + 1
            yield "\n", i, j
            i = j
            continue
        if c != "\\" or raw:
            yield c, i, i + 1
            i += 1
            continue
        nxt = text[i + 1]
        if nxt in "\r\n":  # a line continued: no character
            i += 3 if text.startswith("\r\n", i + 1) else 2
        elif nxt in _SIMPLE:
            yield _SIMPLE[nxt], i, i + 2
            i += 2
        elif nxt in "01234567":
            digits = re.match(r"[0-7]{1,3}", text[i + 1 : i + 4]).group()
            yield chr(int(digits, 8)), i, i + 1 + len(digits)
            i += 1 + len(digits)
        elif nxt in _NUMERIC:
            width = _NUMERIC[nxt]
            yield chr(int(text[i + 2 : i + 2 + width], 16)), i, i + 2 + width
            i += 2 + width
        elif nxt == "N":
            close = text.index("}", i)
            yield unicodedata.lookup(text[i + 3 : close]), i, close + 1
            i = close + 1
        else:  # an escape Python does not know keeps its backslash
            yield "\\", i, i + 1
            i += 1


def _spell(value: str, part: _Part) -> str | None:
    """``value`` spelled inside ``part``'s quotes; None when it cannot be (a raw string)."""
    triple, quote = len(part.quote) == 3, part.quote[0]
    if "r" in part.prefix:  # as it is, or not at all (``edits`` reads the result back)
        return None if quote in value or (not triple and re.search(r"[\r\n]", value)) else value
    out = []
    for c in value:
        if c == "\\":
            out.append("\\\\")
        elif c == quote:
            out.append("\\" + c)
        elif c == "\n":
            out.append("\n" if triple else "\\n")
        elif c == "\t":
            out.append("\\t")
        elif c == "\r" or not c.isprintable():
            out.append(repr(c)[1:-1])
        else:
            out.append(c)
    return "".join(out)


# --- jupytext: commented magics -----------------------------------------------------------------

_MARKER = re.compile(r"# %%(?:[ \t](.*))?$")
_TEXT_CELL = re.compile(r"\[(?:markdown|md|raw)\]")
_SCRIPT_CELL = re.compile(r"""language=["'](bash|sh)["']""")
_COMMENTED_MAGIC = re.compile(r"# ([ \t]*)((?:!|%)[A-Za-z!].*)")
_COMMENTED_CELL_MAGIC = re.compile(r"# (%%(?:bash|sh|script[ \t]+(?:ba)?sh)\b.*)")


def _comments(text: str, lines: _Lines) -> list[Magic]:
    """The commented magics of a jupytext file: ``# !cmd`` and ``# %magic`` lines of its code
    cells, and its cells of bash or sh, each of whose lines is commented."""
    found = []
    rows = text.splitlines(keepends=True)
    markers = [(k, m.group(1) or "") for k, row in enumerate(rows) if (m := _MARKER.match(row.rstrip("\r\n")))]
    # (the marker line of each cell, -1 for the lines above the first one, and its options)
    for (marker, options), after in zip([(-1, ""), *markers], [*(k for k, _ in markers), len(rows)]):
        body = range(marker + 1, after)
        if not body or _TEXT_CELL.search(options):
            continue
        script = _script_cell(text, lines, rows, marker, body, options)
        if script is not None:
            found.append(script)
            continue
        k = body.start
        while k < body.stop:
            m = _COMMENTED_MAGIC.fullmatch(rows[k].rstrip("\r\n"))
            if m is None:
                k += 1
                continue
            last = k
            while rows[last].rstrip("\r\n").endswith("\\") and last + 1 < body.stop and rows[last + 1].startswith("#"):
                last += 1
            found.append(_commented(text, lines, rows, k, last, m.group(1)))
            k = last + 1
    return found


def _uncommented(row: str) -> str:
    line = row.rstrip("\r\n")
    return line[2:] if line.startswith("# ") else line[1:]


def _commented(text: str, lines: _Lines, rows: list[str], first: int, last: int, margin: str) -> Magic:
    """The magic of comment lines ``first`` to ``last`` (indexes of ``rows``)."""
    source = "\n".join(_uncommented(rows[k]) for k in range(first, last + 1))[len(margin) :]
    start = lines.start(first + 1)

    def write(new: str) -> list[Edit] | None:
        return _rewrite_lines(rows, range(first, last + 1), [f"# {line}" for line in (margin + new).split("\n")])

    end = lines.end(last + 1)
    return Magic(
        text[start:end],
        source,
        list(range(first + 1, last + 2)),
        start,
        margin,
        write,
        whole=(start, end),
        removal=Edit(start, end, ""),
    )


def _script_cell(text: str, lines: _Lines, rows: list[str], first: int, body: range, options: str) -> Magic | None:
    """A cell of bash or sh, its lines commented: ``# %% language="bash"``, or the
    ``# %%bash`` line of its first line."""
    language = _SCRIPT_CELL.search(options)
    head_row = None
    if language:
        head = f"%%{language.group(1)}"
    elif body and (m := _COMMENTED_CELL_MAGIC.fullmatch(rows[body.start].rstrip("\r\n"))):
        head, head_row = m.group(1), body.start
        body = range(body.start + 1, body.stop)
    else:
        return None
    stop = body.stop
    while stop > body.start and not rows[stop - 1].strip():
        stop -= 1  # the blank lines between cells
    script = range(body.start, stop)
    if not all(rows[k].startswith("#") for k in script):
        return None
    source = head + "\n" + "\n".join(_uncommented(rows[k]) for k in script)
    marker = first if head_row is None else head_row
    start = lines.start(marker + 1)

    def write(new: str) -> list[Edit] | None:
        new_head, _, new_body = new.partition("\n")
        if new_head != head:
            return None
        return _rewrite_lines(rows, script, [f"# {line}" if line else "#" for line in new_body.split("\n")])

    return Magic(
        text[start : lines.end(stop)],
        source,
        [marker + 1, *(k + 1 for k in script)],
        start,
        "",
        write,
        todo_inside=True,
    )


def _rewrite_lines(rows: list[str], span: range, new: list[str]) -> list[Edit]:
    """Edits that make the comment lines ``span`` of ``rows`` the comment lines ``new``: a
    line that reads the same uncommented keeps its bytes."""
    old = [rows[k].rstrip("\r\n") for k in span]
    starts = [0]
    for row in rows:
        starts.append(starts[-1] + len(row))
    ending = rows[span.start][len(old[0]) :] or "\n"
    edits = []
    matcher = difflib.SequenceMatcher(
        None, [_uncommented(line) for line in old], [_uncommented(line) for line in new], autojunk=False
    )
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            a, b = span.start + i1, span.start + i2
            replaced = "".join(line + ending for line in new[j1:j2])
            if b == len(rows) and not rows[-1].endswith(("\n", "\r")):
                replaced = replaced.removesuffix(ending)  # the file's last line has no line break
            edits.append(Edit(starts[a], starts[b], replaced))
    return edits
