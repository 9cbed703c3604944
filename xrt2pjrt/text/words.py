"""The shell-word model every text rewriter shares: source text -> simple commands of words.

Not a full shell parser: it finds what the rules need — the words of each simple command,
with their exact source spans, their literal values where they have one, and the
expansions (``$VAR``, ``${…}``, ``$(…)``, backquotes) they contain — and it never fails:
text it does not understand (here-document bodies, ``case`` patterns) becomes words that
no rule matches. Rules edit source spans, so everything they do not touch stays
byte-identical.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

OPERATORS = ("&&", "||", ";;", "|&", "|", "&", ";", "(", ")")
REDIRECT = re.compile(r"\d*(>>|>&|>\||<<-|<<<|<<|<&|<>|&>>|&>|>|<)")
# Words that open or continue a compound command; the simple command starts after them.
KEYWORDS = frozenset(
    {"if", "then", "else", "elif", "do", "while", "until", "!", "time", "{", "}", "fi", "done", "$"}
)  # `$`: a prompt in a documentation block (`$ python3 …`)
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Characters a word can carry without any quoting, in every shell context.
PLAIN = re.compile(r"[A-Za-z0-9_./=:,+@%^-]+")
GLOB = re.compile(r"[*?\[]")
DESCRIPTOR = re.compile(r"[0-9]+-?|-")


def expansion(name: str = r"[A-Za-z_]\w*") -> str:
    """The regex of an expansion ``$NAME`` or ``${NAME}`` of the names ``name`` (a regex) matches,
    the name its first group."""
    return rf"\$\{{?({name})\b\}}?"


EXPANSION = re.compile(expansion())
# A shell assignment of a line of its own (``VERSION=1.13``, ``export ENV="torch-xla-$VERSION"``).
_ASSIGNMENT = re.compile(r"^[ \t]*(?:export[ \t]+)?([A-Za-z_]\w*)=(\S*)", re.M)


def expanded(word: str, text: str, before: int) -> str:
    """``word`` with each ``$NAME`` that ``text`` assigns a value on a line above ``before`` put
    in, twice over, as a value may name another (``CONDAENV=torch-xla-$VERSION``); others stay."""
    values = {m[1]: m[2].strip("'\"") for m in _ASSIGNMENT.finditer(text, 0, before)}
    for _ in range(2):
        word = EXPANSION.sub(lambda m: values.get(m[1], m[0]), word)
    return word


@dataclass(frozen=True)
class Part:
    """A piece of a word: literal text (its value), or an expansion (its source text)."""

    text: str
    expansion: bool = False
    quoted: bool = False  # inside quotes: no word splitting or globbing of this piece


@dataclass
class Word:
    start: int
    end: int
    parts: list[Part]
    # Source between the previous token and this word: spaces, tabs, `\`-newlines.
    gap: str = " "

    @classmethod
    def literal(cls, value: str) -> "Word":
        """A word known only by its value, e.g. an argv entry of `xrt2pjrt launch`."""
        return cls(0, 0, [Part(value, quoted=True)])

    @property
    def value(self) -> str | None:
        """The word's value when it has no expansion, else None."""
        if any(p.expansion for p in self.parts):
            return None
        return "".join(p.text for p in self.parts)

    @property
    def head(self) -> str:
        """The literal text the word starts with (all of it when it has no expansion)."""
        return self.parts[0].text if self.parts and not self.parts[0].expansion else ""

    @property
    def expansions(self) -> list[str]:
        return [p.text for p in self.parts if p.expansion]

    def source(self, text: str) -> str:
        return text[self.start : self.end]

    def assignment(self, quoted_name: bool = False) -> tuple[str, "Word"] | None:
        """(NAME, value word) when the word is ``NAME=value`` with a literal NAME.

        The shell takes a quoted ``"NAME=value"`` for an argument, not an assignment; a
        program given it as an argument (xla_dist's ``--env``) sees NAME=value:
        ``quoted_name`` says which reading is wanted.
        """
        first = self.parts[0] if self.parts else None
        if first is None or first.expansion or (first.quoted and not quoted_name):
            return None
        m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)=", first.text)
        if not m:
            return None
        rest = first.text[m.end() :]
        parts = ([Part(rest, quoted=first.quoted)] if rest else []) + self.parts[1:]
        return m.group(1), Word(self.start + m.end(), self.end, parts)


@dataclass
class Redirect:
    start: int
    end: int  # end of the target word (or of the operator for `2>&1`)


@dataclass
class Command:
    """A simple command: its words (assignments and arguments) and redirections, in order."""

    words: list[Word]
    redirects: list[Redirect] = field(default_factory=list)
    # Set when a `|`, `&&`, ... joins this command to the next one.
    joined_by: str | None = None

    @property
    def start(self) -> int:
        return min([w.start for w in self.words] + [r.start for r in self.redirects])

    @property
    def end(self) -> int:
        return max([w.end for w in self.words] + [r.end for r in self.redirects])

    def argv(self) -> list[Word]:
        """The words after leading keywords (`then`, `do`, `!`, ...)."""
        words = self.words
        i = 0
        while i < len(words) and words[i].value in KEYWORDS:
            i += 1
        return words[i:]

    def argv_text(self, text: str) -> list[str]:
        """:meth:`argv` as text: each word's value, or as written where it expands (``$TPU``)."""
        return [w.value or w.source(text) for w in self.argv()]

    def only_shows(self, text: str) -> bool:
        """An ``echo`` or ``printf`` whose output reaches the terminal: not piped, captured
        by a file, or run for its exit code; what it reads changes only what is shown."""
        argv = self.argv()
        fds_only = all(re.fullmatch(r"\d*>&\d", text[r.start : r.end]) for r in self.redirects)
        return bool(argv) and argv[0].value in ("echo", "printf") and self.joined_by != "|" and fds_only


def without_word(words: list[Word], k: int) -> tuple[int, int]:
    """The span to delete to remove ``words[k]`` from a list of two or more words, layout kept:
    the first word goes with the gap after it, any other with the gap before it."""
    if k == 0:
        return words[0].start, words[1].start
    return words[k].start - len(words[k].gap), words[k].end


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


class _Scanner:
    def __init__(self, text: str, operators: bool = True):
        self.text = text
        self.i = 0
        self.n = len(text)
        # Without operators (a Dockerfile ENV line), `;`, `|`, `&`, `<`, `>`, `(`, `)` and
        # `#` are characters of a word like any other: only blanks end one.
        self.operators = operators
        self.ends = " \t\r\n;&|()<>" if operators else " \t\r\n"
        self.pending_heredocs: list[tuple[str, bool]] = []
        self.heredocs: list[tuple[int, int]] = []  # spans of here-document bodies

    def commands(self) -> list[Command]:
        text, out = self.text, []
        current = Command([])
        gap_start = 0

        def finish(joined_by: str | None) -> None:
            nonlocal current
            if current.words or current.redirects:
                current.joined_by = joined_by
                out.append(current)
            current = Command([])

        while self.i < self.n:
            c = text[self.i]
            if c == "\\" and text.startswith("\\\n", self.i):
                self.i += 2
                continue
            if c in " \t\r":
                self.i += 1
                continue
            if c == "\n":
                finish(None)
                self.i += 1
                self._skip_heredoc_bodies()
                gap_start = self.i
                continue
            if not self.operators:
                current.words.append(self._word(gap=text[gap_start : self.i]))
                gap_start = self.i
                continue
            if c == "#":
                end = text.find("\n", self.i)
                self.i = self.n if end < 0 else end
                continue
            m = REDIRECT.match(text, self.i)
            if m:
                self.i = m.end()
                descriptor = m.group(1) in (">&", "<&") and DESCRIPTOR.match(text, self.i)
                if descriptor:  # 2>&1, >&2, <&-
                    self.i = descriptor.end()
                    current.redirects.append(Redirect(m.start(), self.i))
                else:
                    self._skip_blanks()
                    target = self._word(gap="")
                    if m.group(1) in ("<<", "<<-") and target is not None:
                        delimiter = "".join(p.text for p in target.parts)
                        self.pending_heredocs.append((delimiter, m.group(1) == "<<-"))
                    current.redirects.append(Redirect(m.start(), target.end if target else self.i))
                gap_start = self.i
                continue
            op = next((o for o in OPERATORS if text.startswith(o, self.i)), None)
            if op:
                self.i += len(op)
                finish(op)
                gap_start = self.i
                continue
            word = self._word(gap=text[gap_start : self.i])
            current.words.append(word)
            gap_start = self.i
        finish(None)
        return out

    def _skip_blanks(self) -> None:
        while self.i < self.n:
            if self.text.startswith("\\\n", self.i):
                self.i += 2
            elif self.text[self.i] in " \t":
                self.i += 1
            else:
                break

    def _skip_heredoc_bodies(self) -> None:
        for delim, strip_tabs in self.pending_heredocs:
            start = self.i
            while self.i < self.n:
                end = self.text.find("\n", self.i)
                end = self.n if end < 0 else end
                line = self.text[self.i : end]
                self.i = min(end + 1, self.n)
                if (line.lstrip("\t") if strip_tabs else line) == delim:
                    break
            self.heredocs.append((start, self.i))
        self.pending_heredocs = []

    def _word(self, gap: str) -> Word | None:
        text, start = self.text, self.i
        parts: list[Part] = []
        while self.i < self.n:
            c = text[self.i]
            if c in self.ends:
                break
            if c == "\\":
                if text.startswith("\\\n", self.i):
                    if self.i + 2 >= self.n or text[self.i + 2] in self.ends:
                        break  # the continuation ends the word: it belongs to the next gap
                    self.i += 2
                    continue
                parts.append(Part(text[self.i + 1 : self.i + 2], quoted=True))
                self.i += 2
            elif c == "'":
                end = text.find("'", self.i + 1)
                end = self.n if end < 0 else end
                parts.append(Part(text[self.i + 1 : end], quoted=True))
                self.i = end + 1
            elif c == "$" and text.startswith("$'", self.i):
                end = self._ansi_c_end(self.i + 2)
                parts.append(Part(text[self.i : end], expansion=True, quoted=True))
                self.i = end
            elif c == '"':
                self.i += 1
                parts.extend(self._double_quoted())
            elif c in "$`":
                end = self._expansion_end(self.i)
                if end == self.i + 1 and c == "$":
                    parts.append(Part("$"))
                else:
                    parts.append(Part(text[self.i : end], expansion=True))
                self.i = end
            else:
                parts.append(Part(c))
                self.i += 1
        if self.i == start:
            return None
        return Word(start, self.i, _merge(parts), gap=gap)

    def _double_quoted(self) -> list[Part]:
        text, parts = self.text, []
        while self.i < self.n and text[self.i] != '"':
            c = text[self.i]
            if c == "\\" and self.i + 1 < self.n and text[self.i + 1] in '$`"\\\n':
                if text[self.i + 1] != "\n":
                    parts.append(Part(text[self.i + 1], quoted=True))
                self.i += 2
            elif c in "$`":
                end = self._expansion_end(self.i)
                if end == self.i + 1 and c == "$":
                    parts.append(Part("$", quoted=True))
                else:
                    parts.append(Part(text[self.i : end], expansion=True, quoted=True))
                self.i = end
            else:
                parts.append(Part(c, quoted=True))
                self.i += 1
        self.i += 1  # the closing quote
        return parts

    def _ansi_c_end(self, i: int) -> int:
        while i < self.n and self.text[i] != "'":
            i += 2 if self.text[i] == "\\" else 1
        return min(i + 1, self.n)

    def _expansion_end(self, i: int) -> int:
        """End of the expansion starting at ``i`` (a `$` or a backquote)."""
        text = self.text
        if text[i] == "`":
            j = i + 1
            while j < self.n and text[j] != "`":
                j += 2 if text[j] == "\\" else 1
            return min(j + 1, self.n)
        nxt = text[i + 1 : i + 2]
        if nxt in ("(", "{"):
            return self._balanced_end(i + 1)
        m = NAME.match(text, i + 1)
        if m:
            return m.end()
        if nxt and (nxt.isdigit() or nxt in "@*#?$!-"):
            return i + 2
        return i + 1

    def _balanced_end(self, i: int) -> int:
        """End of the bracketed group opening at ``i``, skipping quoted text inside it."""
        text, depth = self.text, 0
        pairs = {"(": ")", "{": "}"}
        close = pairs[text[i]]
        opening = text[i]
        while i < self.n:
            c = text[i]
            if c == "\\":
                i += 2
                continue
            if c == "'":
                i = text.find("'", i + 1)
                i = self.n if i < 0 else i + 1
                continue
            if c == '"':
                i += 1
                while i < self.n and text[i] != '"':
                    i += 2 if text[i] == "\\" else 1
                i += 1
                continue
            if c == opening:
                depth += 1
            elif c == close:
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        return self.n


def _merge(parts: list[Part]) -> list[Part]:
    merged: list[Part] = []
    for p in parts:
        if merged and not p.expansion and not merged[-1].expansion and merged[-1].quoted == p.quoted:
            merged[-1] = Part(merged[-1].text + p.text, quoted=p.quoted)
        else:
            merged.append(p)
    return merged


def commands(text: str) -> list[Command]:
    """Every simple command of a shell text, in source order."""
    return _Scanner(text).commands()


def docker_words(text: str) -> list[Word]:
    """The words of a Dockerfile ENV/ARG line: quoted and escaped as in shell, but with no
    operators or comments (``ENV A=x;y`` sets A to ``x;y``)."""
    return [w for cmd in _Scanner(text, operators=False).commands() for w in cmd.words]


def heredocs(text: str) -> list[tuple[int, int]]:
    """The spans of a shell text's here-document bodies (text no command of it parses)."""
    scanner = _Scanner(text)
    scanner.commands()
    return scanner.heredocs
