"""The rule registry: every rule of every file kind, with the examples that document it.

A rule id is ``FAMILY-NAME``: the family says what the rule migrates (``env``: XRT-era
variables), whatever the file kind, so ``--select env`` migrates the variables in Python,
shell, Dockerfiles and YAML alike. FAMILIES lists them; a rule outside them does not
register. RENAMED keeps the ids of earlier releases working, with a note.

A rule is one class. Its examples are its documentation (``xrt2pjrt rules``,
docs/RULES.md) and its tests (tests/test_rule_examples.py runs each one through the
rewriter of the rule's kind with only that rule selected, then once more to show that a
second pass changes nothing).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, ClassVar

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


# Family -> what its rules migrate. The guide's checklist takes one family per pull request.
FAMILIES: dict[str, str] = {
    "api": "xm / xr calls renamed or removed in torch_xla 2.x",
    "spawn": "xmp.spawn's arguments, and what runs before it",
    "env": "XRT-era environment variables, in code, scripts, Dockerfiles and YAML",
    "launch": "xla_dist launches",
    "install": "install lines that bring back an XRT-era torch_xla",
    "pjrt": "the early torch_xla.experimental.pjrt module",
    "dist": "torch.distributed on XLA",
    "import": "imports of torch_xla modules that are gone",
    "manual": "what only a person can migrate: reported, with a TODO line",
    "shim": "--target shim: imports pointed at xrt2pjrt.shim",
}

# Ids of earlier releases -> today's, still accepted wherever an id is (users have them
# in CI configs). Renamed by one rule: the family comes first.
RENAMED: dict[str, str] = {
    "shell-env-xrt-tpu-config": "env-shell-xrt-tpu-config",
    "shell-env-xrt-cpu": "env-shell-xrt-cpu",
    "shell-env-xrt-unused": "env-shell-xrt-unused",
}

RULES: dict[str, type[Rule]] = {}


def family(rule_id: str) -> str:
    return rule_id.split("-", 1)[0]


def register(cls: type[Rule]) -> type[Rule]:
    if family(cls.id) not in FAMILIES:
        raise ValueError(f"rule id {cls.id!r} must start with a family: {', '.join(FAMILIES)}")
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


def split_words(values: list[str] | None) -> list[str]:
    """``--select a,b --select c`` (and config lists) as one list of words."""
    return [word.strip() for value in values or [] for word in value.split(",") if word.strip()]


def names(word: str, rule_id: str) -> bool:
    """Whether ``word`` (a family, an id, an id prefix, or one of an earlier release) names
    ``rule_id``: how --select, --ignore, the configuration and ``# xrt2pjrt: ignore[...]``
    read their words."""
    return rule_id.startswith(word) or any(old.startswith(word) and new == rule_id for old, new in RENAMED.items())


def known_ids() -> frozenset[str]:
    """Every rule id, from the generated index (xrt2pjrt/rule_index.py): the parent process
    checks the user's words against it without importing the rules (and libcst)."""
    from xrt2pjrt.rule_index import RULES as INDEX

    return frozenset(INDEX)


def expand(word: str, note: Callable[[str], None] | None = None, ids: frozenset[str] | None = None) -> set[str]:
    """The rule ids (of ``ids``, default every rule) a word names; a word of an earlier
    release comes with a note. UnknownRule when it names none."""
    ids = known_ids() if ids is None else ids
    matched = {rid for rid in ids if rid.startswith(word)}
    if not matched:
        matched = {rid for rid in ids if names(word, rid)}
        if matched and note:
            note(f"{word!r} is an old rule id: use {', '.join(sorted(matched))}")
    if not matched:
        raise UnknownRule(f"no rule id starts with {word!r}; see `xrt2pjrt rules`")
    return matched


@dataclass(frozen=True)
class Selection:
    """The rules a run takes: those ``select`` names (None: every rule), minus those
    ``ignore`` names and the ``removed`` ids. Words are matched when a rule asks
    (``rule_id in selection``), so a rule is on without any list of ids in hand."""

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    removed: frozenset[str] = frozenset()

    def __contains__(self, rule_id: str) -> bool:
        return (rule_id not in self.removed
                and (self.select is None or any(names(word, rule_id) for word in self.select))
                and not any(names(word, rule_id) for word in self.ignore))

    def __sub__(self, ids) -> "Selection":
        return replace(self, removed=self.removed | frozenset(ids))

    def ignoring(self, words: list[str]) -> "Selection":
        return replace(self, ignore=self.ignore + tuple(words)) if words else self


def select(chosen: list[str] | None, ignored: list[str] | None,
           note: Callable[[str], None] | None = None) -> Selection:
    """The rules ``--select``/``--ignore`` pick: families, ids or id prefixes, each option
    repeatable and comma-separated. UnknownRule for a word that names no rule."""
    chosen, ignored = split_words(chosen), split_words(ignored)
    for word in chosen + ignored:
        expand(word, note)
    return Selection(tuple(chosen) or None, tuple(ignored))


@dataclass(frozen=True)
class Options:
    """What the user asked for, handed to every rewriter."""

    rules: Selection | frozenset[str]
    target: str = "native"
    target_version: tuple[int, int] = (2, 9)
    zone: str | None = None
    project: str | None = None
    launcher: str = "gcloud"
    # A file a rewriter would parse is skipped, and reported, above this size (--max-file-size).
    max_file_bytes: int = 2_000_000
    # The line length of the project's formatter (ruff's or black's) for the file, if it has
    # one: a statement a rule rewrote past it is split as the formatter would (config.line_length).
    line_length: int | None = None
    # Whether the file uses PyTorch, for the text rules whose words JAX and TensorFlow share
    # (libtpu nightlies, cloud-tpu-client, COLAB_TPU_ADDR); None: the text at hand tells
    # (text/installs.py, torch_file).
    torch_file: bool | None = None

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
