"""What each torch_xla release has: the API surface tables, as data, and the questions
the rules ask of them.

The data (api_surface.txt, beside this file) is generated from the released wheels of
torch_xla 2.1 … 2.9 by tools/api_surface.py; tests/python/test_api_surface.py holds its 2.9
entries to the installed torch_xla. Each line is ``DOTTED  RELEASES  ENTRY``, see the
file's header.

``lacks(dotted, release)`` answers whether a dotted name a program reaches (a module, a
name in one, a member of a class) is missing from a release, naming the first missing
part; ``keyword_lacks`` does the same for the keywords and positional arguments of a
call. Neither guesses: a name under an open module (one with ``__getattr__`` or names
from elsewhere; ``_XLAC`` for names not shaped like a binding), a value's attributes and a
call of unknown signature are never lacking.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

Release = tuple[int, int]
RELEASES: tuple[Release, ...] = tuple((2, minor) for minor in range(1, 10))
DATA = Path(__file__).with_name("api_surface.txt")
# _XLAC is open but for the names shaped like its bindings, all of which the table lists
# (tools/api_surface.py reads them from the extension's strings).
XLAC = "torch_xla._XLAC"
BINDING = re.compile(r"_[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class Entry:
    releases: frozenset[Release]
    kind: str  # module, def, class, member, value
    open: bool = False  # a module or class that may hold names not listed
    params: tuple[str, ...] | None = None  # a def's or constructor's parameters; None: not known

    def takes(self, keyword: str) -> bool:
        """Whether a call may pass ``keyword`` (True when the signature is not known)."""
        if self.params is None or any(p.startswith("**") for p in self.params):
            return True
        by_name = self.params[self.params.index("/") + 1 :] if "/" in self.params else self.params
        return keyword in (p.rstrip("=") for p in by_name if not p.startswith("*"))

    def required(self) -> list[tuple[str, int | None]]:
        """The parameters a call must pass, each with its position (None: keyword only)."""
        if self.params is None:
            return []
        out, position, keyword_only = [], 0, False
        for p in self.params:
            if p == "/":
                continue
            if p.startswith("*"):
                keyword_only = True
                continue
            if not p.endswith("="):
                out.append((p, None if keyword_only else position))
            position += not keyword_only
        return out

    def positional_limit(self) -> int | None:
        """How many arguments a call may pass by position (None: any number, or not known)."""
        if self.params is None or any(p.startswith("*") and not p.startswith("**") and p != "*" for p in self.params):
            return None
        count = 0
        for p in self.params:
            if p.startswith("*"):
                break
            count += p != "/"
        return count


def _releases(text: str) -> frozenset[Release]:
    out = set()
    for run in text.split(","):
        first, _, last = run.partition("-")
        lo, hi = (tuple(int(x) for x in v.split(".")) for v in (first, last or first))
        out.update(r for r in RELEASES if lo <= r <= hi)
    return frozenset(out)


def _entry(releases: str, text: str) -> Entry:
    head, _, params = text.partition("(")
    words = head.split()
    parsed = tuple(p.strip() for p in params.rstrip(")").split(",") if p.strip()) if params else None
    return Entry(_releases(releases), words[0], "open" in words[1:], parsed)


@functools.cache
def table() -> dict[str, tuple[Entry, ...]]:
    out: dict[str, list[Entry]] = {}
    for line in DATA.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        dotted, releases, entry = line.split(None, 2)
        out.setdefault(dotted, []).append(_entry(releases, entry))
    return {dotted: tuple(entries) for dotted, entries in out.items()}


def entry(dotted: str, release: Release) -> Entry | None:
    return next((e for e in table().get(dotted, ()) if release in e.releases), None)


def releases_of(dotted: str) -> frozenset[Release]:
    return frozenset().union(*(e.releases for e in table().get(dotted, ())))


@dataclass(frozen=True)
class Lack:
    """``name`` (a dotted name, or ``name(keyword=)``) is not in ``release``."""

    name: str
    release: Release
    had: frozenset[Release]  # the releases that have it

    @property
    def history(self) -> str:
        """When it went, or came: "removed in 2.5", "added in 2.8", "in no 2.x release"."""
        before = [r for r in self.had if r < self.release]
        if before:
            last = max(before)
            return f"removed in {_spelled(RELEASES[RELEASES.index(last) + 1])}"
        after = [r for r in self.had if r > self.release]
        if after:
            return f"added in {_spelled(min(after))}"
        return "in no torch_xla 2.x release"


def _spelled(release: Release) -> str:
    return f"{release[0]}.{release[1]}"


def lacks(dotted: str, release: Release) -> Lack | None:
    """The first part of ``dotted`` (a torch_xla name) that ``release`` does not have."""
    parts = dotted.split(".")
    if parts[0] != "torch_xla" or release not in RELEASES:
        return None
    path, current = parts[0], entry(parts[0], release)
    for part in parts[1:]:
        if current is None or current.kind not in ("module", "class"):
            return None  # attributes of a function or a value: not tracked
        if part.startswith("__") and part.endswith("__"):
            return None  # what every module and class has (__name__, __file__, __dict__), not in the tables
        parent, path = path, f"{path}.{part}"
        found = entry(path, release)
        if found is None:
            if current.open and not (parent == XLAC and BINDING.fullmatch(part)):
                return None
            return Lack(path, release, releases_of(path))
        current = found
    return None


def keyword_lacks(dotted: str, keywords: list[str], positional: int | None, release: Release) -> list[Lack]:
    """The keywords (and, as ``name(argument N)``, a positional argument) a call of
    ``dotted`` passes that ``release``'s signature of it does not take, and, as
    ``name(param)``, the parameters it needs that the call does not pass (``positional``
    None: a call with ``*args`` or ``**kwargs``, whose arguments are not known)."""
    target = entry(dotted, release)
    if target is None or target.kind not in ("def", "class"):
        return []
    out = []
    for keyword in keywords:
        if not target.takes(keyword):
            had = frozenset(r for e in table()[dotted] if e.params is not None and e.takes(keyword) for r in e.releases)
            out.append(Lack(f"{dotted}({keyword}=)", release, had))
    for param, position in target.required() if positional is not None else ():
        if param not in keywords and (position is None or position >= positional):
            had = frozenset(
                r
                for e in table()[dotted]
                if e.params is not None and param not in (p for p, _ in e.required())
                for r in e.releases
            )
            out.append(Lack(f"{dotted}({param})", release, had))
    limit = target.positional_limit()
    if limit is not None and positional is not None and positional > limit:
        had = frozenset(r for e in table()[dotted] if (e.positional_limit() or 0) >= positional for r in e.releases)
        out.append(Lack(f"{dotted}(argument {positional})", release, had))
    return out
