"""The rule registry: every rule of every file kind, with the examples that document it.

A rule is one class. Its examples are its documentation (``xrt2pjrt rules``,
docs/MIGRATION.md) and its tests (tests/test_rule_examples.py runs each one through the
rewriter of the rule's kind with only that rule selected, then once more to show that a
second pass changes nothing).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

TARGETS = ("native", "shim")
TARGET_VERSIONS = tuple((2, minor) for minor in range(1, 10))


@dataclass(frozen=True)
class Example:
    before: str
    after: str
    # Substrings of the manual items the rule must report for ``before`` (empty: none).
    manual: tuple[str, ...] = ()
    # Options this example needs, e.g. {"target": "shim"}.
    options: dict = field(default_factory=dict)


class Rule:
    id: ClassVar[str]
    kind: ClassVar[str]  # the file kind whose rewriter applies it: "python", "shell", ...
    summary: ClassVar[str]
    # A safe fix keeps the program's meaning; an unsafe one needs a reviewer's eye.
    safe: ClassVar[bool] = True
    examples: ClassVar[tuple[Example, ...]] = ()


RULES: dict[str, type[Rule]] = {}


def register(cls: type[Rule]) -> type[Rule]:
    if cls.id in RULES:
        raise ValueError(f"rule id {cls.id!r} registered twice")
    if not cls.examples:
        raise ValueError(f"rule {cls.id!r} has no example")
    RULES[cls.id] = cls
    return cls


def all_rules() -> dict[str, type[Rule]]:
    """Every registered rule, loading the rule modules of every kind first."""
    from xrt2pjrt import rewriters

    rewriters.load_all()
    return dict(sorted(RULES.items()))


class UnknownRule(ValueError):
    pass


def select(chosen: list[str] | None, ignored: list[str] | None) -> frozenset[str]:
    """Rule ids picked by ``--select``/``--ignore``; each entry is an id or an id prefix."""
    rules = all_rules()

    def expand(words: list[str]) -> set[str]:
        ids: set[str] = set()
        for word in words:
            matched = {rid for rid in rules if rid == word or rid.startswith(word)}
            if not matched:
                raise UnknownRule(f"no rule id starts with {word!r}; see `xrt2pjrt rules`")
            ids |= matched
        return ids

    picked = expand(chosen) if chosen else set(rules)
    return frozenset(picked - expand(ignored or []))


@dataclass(frozen=True)
class Options:
    """What the user asked for, handed to every rewriter."""

    rules: frozenset[str]
    target: str = "native"
    target_version: tuple[int, int] = (2, 9)
    zone: str | None = None
    project: str | None = None
    launcher: str = "gcloud"

    def on(self, rule_id: str) -> bool:
        return rule_id in self.rules


def parse_version(text: str) -> tuple[int, int]:
    try:
        major, minor = (int(part) for part in text.split(".")[:2])
    except ValueError:
        raise ValueError(f"--target-version takes MAJOR.MINOR, e.g. 2.9; got {text!r}") from None
    if (major, minor) not in TARGET_VERSIONS:
        raise ValueError(f"--target-version must be one of 2.1 … 2.9; got {text!r}")
    return (major, minor)
