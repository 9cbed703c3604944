"""The rule registry: every rule of every file kind, found by discovery.

A rule id is ``FAMILY-NAME``: the family says what the rule migrates (``env``: XRT-era
variables), whatever the file kind, so ``--select env`` migrates the variables in Python,
shell, Dockerfiles and YAML alike. Each family is a package of ``xrt2pjrt/rules/``, whose
docstring's first line says what its rules migrate; CHECKLIST orders them as the guide's
checklist takes them, one per pull request. RENAMED keeps the ids of earlier releases
working, with a note.

A rule is one class in a module of its own, ``rules/<family>/<id with underscores>.py``
(xrt2pjrt/rules/__init__.py says how to add one). Discovery (``all_rules``) imports every
module of every family package whose name does not start with ``_``: nothing lists the
rules. Its examples are its documentation (``xrt2pjrt rules``, docs/RULES.md) and its tests
(tests/test_rule_examples.py runs each one through the rewriter of the rule's kind with only
that rule selected, then once more to show that a second pass changes nothing).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import textwrap
from dataclasses import dataclass, field, replace
from typing import Callable, ClassVar

from xrt2pjrt.rule_index import RULES as INDEX

TARGETS = ("native", "shim")
TARGET_VERSIONS = tuple((2, minor) for minor in range(1, 10))
# What a rule's fix is (ruff's applicability): ``safe`` keeps the program's meaning and
# --write applies it; ``unsafe`` needs a reviewer's eye, and --write applies it only with
# --unsafe-fixes (without, it is reported as pending); ``none``: the rule only reports.
FIXES = ("safe", "unsafe", "none")


@dataclass(frozen=True)
class Example:
    before: str
    after: str
    # Substrings of the manual items the rule must report for ``before`` (empty: none).
    manual: tuple[str, ...] = ()
    # Options this example needs, e.g. {"target": "shim"}.
    options: dict = field(default_factory=dict)

    @classmethod
    def unchanged(cls, text: str, manual: tuple[str, ...] = (), options: dict | None = None) -> "Example":
        """An example the rule leaves as it is (it may still report ``manual`` items)."""
        return cls(text, text, manual, options or {})


def dedent(block: str) -> str:
    """An example's text written as the code it is, a triple-quoted block indented with the
    call around it: the newline after the opening quotes goes, and so does the indent its
    lines share (``dedent('''\n    x = 1\n''')`` is ``'x = 1\n'``)."""
    return textwrap.dedent(block.removeprefix("\n"))


class Rule:
    id: ClassVar[str]
    kind: ClassVar[str]  # the rewriter its examples run through: "python" or "shell" (every text kind)
    summary: ClassVar[str]  # one line: what it does (`xrt2pjrt rules`, the rules' table)
    # The longer why, its docs (`xrt2pjrt rules ID`, docs/RULES.md): its module's docstring,
    # set on discovery.
    why: ClassVar[str] = ""
    fix: ClassVar[str] = "safe"  # one of FIXES
    # Trigger: patterns (regular expressions) one of which a file holds wherever the rule can
    # act on it. A file of a kind holding none of its rules' is not parsed (rewriters.trigger_for).
    words: ClassVar[tuple[str, ...]] = ()
    # Gate: the --target values it runs under, and the first --target-version it runs for.
    targets: ClassVar[tuple[str, ...]] = TARGETS
    min_version: ClassVar[tuple[int, int]] = TARGET_VERSIONS[0]
    examples: ClassVar[tuple[Example, ...]] = ()
    # Ids whose ``# xrt2pjrt: ignore[...]`` marker settles this rule's items too: rules that ask
    # the same decision of the same spot (a second pass finds by this rule what the first
    # marked by another: an XRT GPU map written as PJRT_DEVICE=CUDA).
    settled_by: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def runs(cls, options: "Options") -> bool:
        """Whether a run with ``options`` takes this rule: selected, and through its gate."""
        return options.on(cls.id) and options.target in cls.targets and options.target_version >= cls.min_version

    @classmethod
    def gated(cls, options: "Options") -> bool:
        """Whether the gate withholds this rule's fixes: unsafe ones, without --unsafe-fixes."""
        return cls.fix == "unsafe" and not options.unsafe_fixes


# The families, in the order the guide's checklist takes them (one per pull request).
CHECKLIST = ("api", "spawn", "env", "launch", "install", "pjrt", "dist", "import", "manual", "shim")

# Ids of earlier releases -> today's, still accepted wherever an id is (users have them
# in CI configs). Renamed by one rule: the family comes first.
RENAMED: dict[str, str] = {
    "shell-env-xrt-tpu-config": "env-shell-xrt-tpu-config",
    "shell-env-xrt-cpu": "env-shell-xrt-cpu",
    "shell-env-xrt-unused": "env-shell-xrt-unused",
}

RULES: dict[str, type[Rule]] = {}
FAMILIES: dict[str, str] = {}  # family -> what its rules migrate, filled by discovery
PACKAGE = "xrt2pjrt.rules"


def family(rule_id: str) -> str:
    return rule_id.split("-", 1)[0]


def module_name(rule_id: str) -> str:
    """The module a rule lives in: ``spawn-nprocs-literal`` in rules/spawn/spawn_nprocs_literal.py."""
    return f"{PACKAGE}.{family(rule_id)}.{rule_id.replace('-', '_').replace('.', '_')}"


def register(cls: type[Rule]) -> type[Rule]:
    if family(cls.id) not in CHECKLIST:
        raise ValueError(f"rule id {cls.id!r} must start with a family: {', '.join(CHECKLIST)}")
    if cls.id in RULES:
        raise ValueError(f"rule id {cls.id!r} registered twice")
    if cls.__module__ != module_name(cls.id):
        raise ValueError(f"rule {cls.id!r} must live in {module_name(cls.id)}, not {cls.__module__}")
    if cls.fix not in FIXES:
        raise ValueError(f"rule {cls.id!r}: fix must be one of {', '.join(FIXES)}, not {cls.fix!r}")
    if not cls.examples:
        raise ValueError(f"rule {cls.id!r} has no example")
    RULES[cls.id] = cls
    return cls


def _discover() -> None:
    """Import every rule module and register the rule each holds: the one class of the
    module with an ``id`` of its own. The only place that imports the rules."""
    package = importlib.import_module(PACKAGE)
    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("_"):
            continue
        if not info.ispkg or info.name not in CHECKLIST:
            raise ValueError(f"{PACKAGE}.{info.name}: the rules live in the family packages {', '.join(CHECKLIST)}")
        members = importlib.import_module(f"{PACKAGE}.{info.name}")
        found[info.name] = (members.__doc__ or "").strip().splitlines()[0].rstrip(".")
        for rule_module in pkgutil.iter_modules(members.__path__):
            if rule_module.name.startswith("_"):
                continue  # a family's shared helpers
            module = importlib.import_module(f"{members.__name__}.{rule_module.name}")
            rules = [
                value
                for value in vars(module).values()
                if isinstance(value, type)
                and issubclass(value, Rule)
                and value.__module__ == module.__name__
                and "id" in vars(value)
            ]
            if len(rules) != 1:
                raise ValueError(f"{module.__name__} must hold one rule, not {len(rules)}")
            doc = (module.__doc__ or "").strip()
            # (a docstring that only says the summary again is no why)
            rules[0].why = "" if doc.split() == rules[0].summary.split() else doc
            register(rules[0])
    FAMILIES.update((name, found[name]) for name in CHECKLIST if name in found)


def all_rules() -> dict[str, type[Rule]]:
    """Every rule, discovered on first use."""
    if not RULES:
        _discover()
    return dict(sorted(RULES.items()))


def families() -> dict[str, str]:
    """Family -> what its rules migrate, in the checklist's order."""
    all_rules()
    return dict(FAMILIES)


def selected(options: "Options", kind: str) -> list[type[Rule]]:
    """The rules of ``kind`` a run with ``options`` takes, by id."""
    return [cls for cls in all_rules().values() if cls.kind == kind and cls.runs(options)]


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
        return (
            rule_id not in self.removed
            and (self.select is None or any(names(word, rule_id) for word in self.select))
            and not any(names(word, rule_id) for word in self.ignore)
        )

    def __sub__(self, ids) -> "Selection":
        return replace(self, removed=self.removed | frozenset(ids))

    def ignoring(self, words: list[str]) -> "Selection":
        return replace(self, ignore=self.ignore + tuple(words)) if words else self


def select(chosen: list[str] | None, ignored: list[str] | None, note: Callable[[str], None] | None = None) -> Selection:
    """The rules ``--select``/``--ignore`` pick: families, ids or id prefixes, each option
    repeatable and comma-separated. UnknownRule for a word that names no rule."""
    chosen, ignored = split_words(chosen), split_words(ignored)
    for word in chosen + ignored:
        expand(word, note)
    return Selection(tuple(chosen) or None, tuple(ignored))


# Spellings of XRT-era transformers code that transformers 4.52, the release install-library-pin
# asks for, lacks (read in its wheel), with what replaces them there: code that uses them fails.
TRANSFORMERS_GONE = {
    "is_torch_tpu_available": "is_torch_xla_available",  # (4.38+)
    "evaluation_strategy": "eval_strategy",  # TrainingArguments' keyword (4.41+)
}


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
    # one: a statement a rule rewrote past it is split as the formatter would (width.of).
    line_length: int | None = None
    # The width of the lines a rewriter writes into the file (its TODO lines): the project's
    # line length for Python and notebooks, 100 for the other kinds (width.py); None: the
    # width of a project without settings, for the kind of text at hand.
    width: int | None = None
    # Whether the file uses PyTorch, for the text rules whose words JAX and TensorFlow share
    # (libtpu nightlies, cloud-tpu-client, COLAB_TPU_ADDR); None: the text at hand tells
    # (uses_torch).
    torch_file: bool | None = None
    # Whether the file names torch_xla (installs or imports it), for a torch 1.x pin on a line of
    # its own (a notebook's `!pip` cell, read alone); None: the text at hand tells (names_torch_xla).
    torch_xla_file: bool | None = None
    # Whether the file is a notebook none of whose cells names torch_xla or starts a process:
    # the device settings it writes into os.environ reach no torch_xla (mixed/notebook.py).
    xla_unreached: bool = False
    # Whether the file is a notebook saved for a GPU runtime (its metadata's accelerator), where
    # a Colab TPU runtime's COLAB_TPU_ADDR was never set, under XRT either (mixed/notebook.py).
    gpu_runtime: bool = False
    # Whether the file is a notebook, or one exported to .py: cells a kernel runs one after
    # another, a program of its own (mixed/notebook.py, mixed/exported.py).
    notebook: bool = False
    # Whether the file runs Colab's pytorch-xla-env-setup.py (a notebook's cell after the one
    # that downloads it); None: the text at hand tells (runs_setup_script).
    setup_script_run: bool | None = None
    # Whether the code the file serves uses torch_xla (a Python file or notebook of its folder's
    # tree names it, code_trees.py): a requirements file pinning torch==1.13 alone then pins
    # XRT's torch (text/installs.py), and a library's pin the release whose calls fail.
    torch_xla_project: bool = False
    # The oldest torch_xla that has every spelling the migration writes into that code: a pin
    # of a release without XRT breaks it only below this (text/installs.py); None: the target.
    code_needs: tuple[int, int] | None = None
    # Whether that code holds its own copy of xla_spawn.py, migrated with it (code_trees.py).
    own_xla_spawn: bool = False
    # Whether that code uses transformers' Trainer or TrainingArguments, which call torch_xla;
    # None: no code is known (code_trees.py).
    transformers_trainer: bool | None = None
    # The spellings of that code that newer transformers lacks (TRANSFORMERS_GONE).
    transformers_gone: tuple[str, ...] = ()
    # Whether unsafe fixes are made too (--unsafe-fixes); without it they are pending.
    unsafe_fixes: bool = False

    def on(self, rule_id: str) -> bool:
        return rule_id in self.rules

    def withholds(self, rule_id: str) -> bool:
        """Whether the fix-safety gate keeps ``rule_id``'s fixes from being made."""
        return not self.unsafe_fixes and all_rules()[rule_id].gated(self)

    def uses_torch(self, text: str) -> bool:
        """Whether the file at hand, ``text`` unless ``torch_file`` says, uses PyTorch."""
        return bool(_TORCH.search(text)) if self.torch_file is None else self.torch_file

    def names_torch_xla(self, text: str) -> bool:
        """Whether the file at hand, ``text`` unless ``torch_xla_file`` says, names torch_xla."""
        return bool(_TORCH_XLA.search(text)) if self.torch_xla_file is None else self.torch_xla_file

    def runs_setup_script(self, text: str) -> bool:
        """Whether the file at hand, ``text`` unless ``setup_script_run`` says, runs pytorch-xla-env-setup.py."""
        return bool(_RUNS_SETUP_SCRIPT.search(text)) if self.setup_script_run is None else self.setup_script_run

    def in_file(self, text: str) -> "Options":
        """These options for the snippets of the file ``text`` (a Dockerfile's RUN lines, a
        document's code blocks): whether it uses PyTorch or names torch_xla, and runs the set-up
        script, is the whole file's to say."""
        if self.torch_file is not None:
            return self
        return replace(
            self,
            torch_file=self.uses_torch(text),
            torch_xla_file=self.names_torch_xla(text),
            setup_script_run=self.runs_setup_script(text),
        )


# What makes a file PyTorch's: JAX and TensorFlow set-ups install libtpu nightlies and
# cloud-tpu-client too, and TensorFlow's Colab notebooks read COLAB_TPU_ADDR.
_TORCH = re.compile(r"(?i)torch|XRT_|xla_dist")
_TORCH_XLA = re.compile(r"(?i)torch[_-]xla")
# Colab's set-up script run (its download is the other step: text/installs.py).
_RUNS_SETUP_SCRIPT = re.compile(r"\b(?:python[\d.]*|sh|bash)\s+\S*env-setup\.py\b")


def parse_version(text: str) -> tuple[int, int]:
    try:
        major, minor = (int(part) for part in text.split(".")[:2])
    except ValueError:
        raise ValueError(f"--target-version takes MAJOR.MINOR, e.g. 2.9; got {text!r}") from None
    if (major, minor) not in TARGET_VERSIONS:
        raise ValueError(f"--target-version must be one of 2.1 … 2.9; got {text!r}")
    return (major, minor)
