"""The contract between the engine and the rewriter of each file kind.

A rewriter module provides:

- ``rewrite(text, options) -> Outcome``: one pass running every selected rule of its kind;
  raises ``SourceError`` for text it cannot parse;
- ``check(text) -> str | None``: a last look at the rewritten text (it parses, it loads);
  a message means the rewrite is discarded and the file reported, never written;
- optionally ``parsed_size(text) -> int``: the characters of code in ``text`` that the
  rewriter parses, when that is not the whole text (a notebook's cells, a document's code
  blocks): what the size limit (``--max-file-size``) bounds, as the cost of a rewrite is
  the cost of parsing. Without it, the file's size counts.

A file whose text matches none of the trigger words of the rules its rewriter runs
(``trigger_for``) cannot contain anything they act on, and is never parsed (most files of a
tree stop there). Modules are imported on first use so that ``xrt2pjrt --help`` stays light.
"""

from __future__ import annotations

import functools
import importlib
import re
from dataclasses import dataclass, field
from types import ModuleType

from xrt2pjrt.report import Finding, Range, shortened
from xrt2pjrt.rule_index import TRIGGERS

# file kind -> module implementing the contract above
MODULES: dict[str, str] = {
    "python": "xrt2pjrt.python.rewriter",
    "shell": "xrt2pjrt.text.shell",
    "dockerfile": "xrt2pjrt.text.dockerfile",
    "markdown": "xrt2pjrt.mixed.markdown",
    "yaml": "xrt2pjrt.text.yaml",
    "notebook": "xrt2pjrt.mixed.notebook",
    "jsonnet": "xrt2pjrt.text.jsonnet",
    "requirements": "xrt2pjrt.text.requirements",
    "metadata": "xrt2pjrt.text.metadata",
    "dotenv": "xrt2pjrt.text.dotenv",
    "terraform": "xrt2pjrt.text.terraform",
}


# The marker of an item to decide, left in the file above its statement (Python, shell,
# Dockerfile): one spelling, so that a second pass and a reader's grep find every one.
TODO = "# TODO(xrt2pjrt): "


def todo_comment(message: str, rule: str, width: int, indent: str = "") -> str:
    """The comment that marks an item to decide: ``# TODO(xrt2pjrt): <message> [rule]``,
    one line that fits ``width`` after ``indent`` (the project's line length, width.py):
    the message is shortened to fit, never wrapped, and the rule id always kept, as
    ``xrt2pjrt rules ID`` says the rest. A tab of the indent counts as one column, as the
    linters count it. Without ``indent`` in the result: the caller writes it."""
    room = width - len(indent) - len(TODO) - len(f" [{rule}]")
    return f"{TODO}{shortened(message, max(room, _LEAST_ROOM))} [{rule}]"


# The room a TODO's message keeps however deep the indent: a few words, over the width.
_LEAST_ROOM = 20


def same_todo(comment: str, other: str) -> bool:
    """Whether two TODO comments mark the same item: the same words, whichever rule wrote them
    (a second pass may find by another rule what the first marked: XRT_DEVICE_MAP's GPU map
    written as PJRT_DEVICE=CUDA, which torch_xla 2.9 lacks, is env-pjrt-device-gpu's then)."""
    return re.sub(r" \[[\w.-]+\]$", "", comment.strip()) == re.sub(r" \[[\w.-]+\]$", "", other.strip())


@dataclass
class Outcome:
    text: str
    changes: list[Finding] = field(default_factory=list)
    manual: list[Finding] = field(default_factory=list)


class Words:
    """A trigger made of plain words: ``word in text`` for each is about 3x faster than
    one regex of the words joined by ``|``, and the trigger reads every file of a tree."""

    def __init__(self, *words: str):
        self.words = words
        self.pattern = "|".join(map(re.escape, words))  # the same test as a regex (grep, bench)

    def search(self, text: str) -> bool:
        return any(word in text for word in self.words)


class SourceError(Exception):
    """Text a rewriter cannot parse, at ``line`` and ``column`` (1-based): ``range``."""

    def __init__(self, message: str, line: int, column: int = 1):
        super().__init__(message)
        self.range = Range.at(line, column)


class TooDeep(Exception):
    """Python nested deeper than Python allows, at ``line`` of the code parsed (a file's, a
    cell's or a block's; python/nesting.py): the whole file is reported, never passed over
    as a snippet that does not parse, as a document's may be."""

    def __init__(self, message: str, line: int):
        super().__init__(message)
        self.line = line


# file kind -> the kinds of rules its rewriter runs, when not only the text rules ("shell"):
# a notebook's and a document's code is Python or shell, and so is a Dockerfile's here-documents'.
RULE_KINDS: dict[str, tuple[str, ...]] = {
    "python": ("python",),
    "markdown": ("python", "shell"),
    "notebook": ("python", "shell"),
    "dockerfile": ("shell", "python"),
}


# What a notebook exported to .py holds: IPython's magics as nbconvert writes them
# (``get_ipython().system(...)``) or jupytext (``# %%`` cells, ``# !pip`` comments).
EXPORTED_MARKS = ("get_ipython()", "# %%", "jupytext:")
# ... or a notebook's code pasted into a .py as it is, its ``!pip``/``%env`` lines and all.
IPYTHON_LINE = re.compile(r"^[ \t]*[!%][\w$({'\"]", re.M)
# ... a Python file of code of two kinds, then: its rewriter is the one of files of several kinds.
EXPORTED = "xrt2pjrt.mixed.exported"


def exported(text: str) -> bool:
    """Whether Python ``text`` may hold a notebook's magics (mixed/exported.py reads them)."""
    return any(mark in text for mark in EXPORTED_MARKS) or bool(IPYTHON_LINE.search(text))


def module_for(kind: str, text: str = "") -> ModuleType:
    """The rewriter of a file of ``kind``; given the ``text`` it rewrites, the one for that
    text: Python with an exported notebook's marks goes to mixed/exported.py, any other
    straight to the Python rewriter."""
    if kind == "python" and exported(text):
        return importlib.import_module(EXPORTED)
    return importlib.import_module(MODULES[kind])


class Exported:
    """A Python file's trigger: its rules' words; in a notebook exported to .py, whose magics
    are shell commands (mixed/exported.py), the shell rules' words too."""

    def __init__(self, python: Words | re.Pattern, shell: Words | re.Pattern):
        self.python, self.shell = python, shell
        self.pattern = f"{python.pattern}|{shell.pattern}"  # (grep, bench: a few files more)

    def search(self, text: str) -> bool:
        return bool(self.python.search(text) or (exported(text) and self.shell.search(text)))


@functools.cache
def trigger_for(kind: str) -> Words | re.Pattern | Exported:
    """What a file of ``kind`` holds if a rule its rewriter runs may act on it: one of their
    trigger words (Rule.words), read from the generated index so that libcst and the rules
    stay unimported in the parent process. ``Words`` when they are all plain words."""
    if kind == "python":
        return Exported(_trigger(("python",)), _trigger(("shell",)))
    return _trigger(RULE_KINDS.get(kind, ("shell",)))


# Every file with a marker or a TODO line is read: what it leaves open is an item (settling.py).
SETTLING_WORDS = ("xrt2pjrt:", "TODO(xrt2pjrt)")


def _trigger(kinds: tuple[str, ...]) -> Words | re.Pattern:
    patterns = list(dict.fromkeys(p for rules in kinds for p in TRIGGERS[rules]))
    if all(re.escape(p) == p for p in patterns):
        return Words(*patterns, *SETTLING_WORDS)
    return re.compile("|".join([*patterns, *map(re.escape, SETTLING_WORDS)]))
