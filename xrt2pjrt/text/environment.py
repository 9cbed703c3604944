"""XRT environment variables outside Python: what an env rule is, and the one way they are applied.

Every file kind finds its own *settings* of variables — ``export X=…``, ``X=… cmd``,
``unset X``, ``docker run -e X=…``, Dockerfile ``ENV``, YAML ``env:`` entries, ``%env`` —
and describes each as an ``EnvSetting`` that knows how to rename itself or delete itself
in its own syntax. The env rules (rules/env/env_shell_*.py) only decide *what* happens to
a variable (for the device variables, by its value: ``xrt_variables.device_for``, as in the
Python rules); ``apply`` does it the same way for every kind.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Callable, ClassVar, NamedTuple

from xrt2pjrt.registry import all_rules
from xrt2pjrt.report import Advice
from xrt2pjrt.recorder import Edit, Recorder
from xrt2pjrt.text.rule import TextRule
from xrt2pjrt.text.words import commands, expansion
from xrt2pjrt.xrt_variables import SHARED, UNPREFIXED, XRT_ERA_PATTERN, device_for, replacement


@dataclass
class EnvSetting:
    """One place a file sets (or unsets, or passes on) a variable."""

    name: str
    offset: int  # where it is, for the report
    # (new name, new value) -> edits; the value is ignored by forms that carry none.
    rename: Callable[[str, str], list[Edit]]
    # Edits that remove the setting; None when it cannot be removed on its own.
    delete: list[Edit] | None
    form: str = "set"  # "set", "unset" (unset X) or "pass" (export X, docker -e X)
    # Settings of one scope (one command's prefix, or the whole file for statements) need one
    # replacement: a second PJRT_DEVICE=CPU in the same scope is removed instead.
    scope: object = "file"
    # Edits removing the whole statement the setting is part of (`export A=1 B=2`, one ENV
    # instruction), shared by identity among its settings: used when all of them go.
    statement: list[Edit] | None = None
    # The value as written (quotes, `$X` and all); None when the form carries none or the
    # file kind does not say.
    value: str | None = None
    # Only its rule's advice is given: another rule rewrites it (xla_dist's --env: launch-xla-dist).
    advice_only: bool = False


# (name, value) that replaces a setting, or None: the setting goes; KEEP: it stays as it is
# (a setting the target still reads, or one whose loss a person must weigh: its item says why).
Replacement = tuple[str, str] | None
KEEP: Replacement = ("", "")


class EnvRule(TextRule):
    words = (XRT_ERA_PATTERN,)
    # The variables this rule handles, as a regex on the whole name.
    variables: ClassVar[str]
    # True for the rule of every variable no other env rule handles.
    catch_all: ClassVar[bool] = False
    # What replaces them when their value does not say otherwise.
    replacement: ClassVar[Replacement]

    @classmethod
    def choose(cls, setting: EnvSetting, target: tuple[int, int]) -> tuple[Replacement, Advice | None]:
        """What replaces ``setting`` for torch_xla ``target``, and what a person must decide."""
        return cls.replacement, None

    @classmethod
    def removed_because(cls, name: str, target: tuple[int, int]) -> str:
        """Why a setting of ``name`` goes, for torch_xla ``target``: its change's message."""
        return str(UNPREFIXED.get(name, "PJRT ignores it"))


class DeviceRule(EnvRule):
    """A variable that chose the device: it becomes the PJRT_DEVICE its value names."""

    @classmethod
    def choose(cls, setting, target):
        choice = device_for(setting.name, setting.value, target)
        chosen = None if choice.device is None else ("PJRT_DEVICE", choice.device)
        return chosen, None if setting.form == "unset" else choice.note


READ = re.compile(rf"\$\{{?({XRT_ERA_PATTERN})")
SETTING = re.compile(rf"\b({XRT_ERA_PATTERN})=")
MENTION = re.compile(rf"\b({XRT_ERA_PATTERN})\b")
# What a line holds before a mention it unsets, or comments out (``//`` in jsonnet, ``#``).
_UNSET_OR_COMMENT = re.compile(r"\bunset\s+(?:[\w-]+\s+)*$|^\s*(?://|#)", re.M)


class Plan(NamedTuple):
    """What ``apply`` does with one setting."""

    setting: EnvSetting
    rule: type[EnvRule] | None  # None: no rule (or no selected rule) handles it
    chosen: Replacement  # what replaces it
    drop: bool  # it goes instead


def replacing(start: int, end: int, with_value: bool) -> Callable[[str, str], list[Edit]]:
    """A rename that rewrites the span [start, end) as ``NAME=VALUE`` (or ``NAME`` alone)."""

    def rename(name: str, value: str) -> list[Edit]:
        return [Edit(start, end, f"{name}={value}" if with_value else name)]

    return rename


def rule_for(name: str) -> type[EnvRule] | None:
    """The env rule of the variable ``name``: the one whose variables name it, else the catch-all."""
    matching = [r for r in all_rules().values() if issubclass(r, EnvRule) and re.fullmatch(r.variables, name)]
    return min(matching, key=lambda r: r.catch_all, default=None)


# Variables torch_xla's own build still reads: TPUVM_MODE=1 adds bazel's --config=tpu
# (build_util.py at v2.9.0). Their settings stay in a file that runs a build (a setup.py
# build, or pytorch/xla's build scripts): nothing but torch_xla's build reads TPUVM_MODE, so
# a file setting it there builds torch_xla. A read of one is still reported.
BUILD_SETTINGS = frozenset({"TPUVM_MODE"})
_BUILD = re.compile(r"\bsetup\.py\s+(?:develop|bdist_wheel|install|build)\b|\bbuild_torch_(?:wheels|xla_libs)\.sh\b")


def builds_torch_xla(text: str) -> bool:
    return bool(_BUILD.search(text))


def rule_here(name: str, rec: Recorder) -> type[EnvRule] | None:
    """The selected rule for ``name`` in the file of ``rec``; None in a file that does not use
    PyTorch, for a variable other frameworks read too."""
    rule = rule_for(name)
    if rule is None or not rec.options.on(rule.id):
        return None
    return None if name in SHARED and not rec.options.uses_torch(rec.text) else rule


def mentions(text: str) -> bool:
    """Whether ``text`` names a variable an env rule handles (a quoted word worth reading as shell)."""
    return "XRT_" in text or bool(_handled().search(text))


@functools.cache
def _handled() -> re.Pattern:
    return re.compile(r"\b(?:" + "|".join(r.variables for r in all_rules().values() if issubclass(r, EnvRule)) + r")\b")


def apply(settings: list[EnvSetting], rec: Recorder, earlier_pjrt: Callable[[int], bool]) -> None:
    """Apply the environment rules to every setting of a file, in source order.

    ``earlier_pjrt(offset)`` tells whether the file sets PJRT_DEVICE before ``offset``;
    then an ``unset`` of an XRT variable is dropped instead of unsetting PJRT_DEVICE.
    """
    done: set = set()  # (scope, form, replacement) already written: a second one is removed
    plans: list[Plan] = []
    build = builds_torch_xla(rec.text)
    for s in settings:
        rule = None if build and s.name in BUILD_SETTINGS else rule_here(s.name, rec)
        if rule is None or not rec.on(rule.id, s.offset):
            plans.append(Plan(s, None, None, False))
            continue
        chosen, note = rule.choose(s, rec.options.target_version)
        if note:
            rec.decide(rule.id, s.offset, note.do, note.more)
        if chosen is KEEP or s.advice_only or chosen is None and _read_back(rec.text, s.name, s.offset):
            plans.append(Plan(s, None, None, False))
            continue
        key = (s.scope, s.form, chosen)
        # A repeated replacement is dropped only where it can be: a second PJRT_DEVICE=TPU
        # is harmless, and renaming it keeps a second pass from finding anything to do.
        repeated = key in done and (s.delete is not None or s.statement is not None)
        drop = chosen is None or repeated or (s.form == "unset" and earlier_pjrt(s.offset))
        done.add(key)
        plans.append(Plan(s, rule, chosen, drop))
    emptied, removed = _emptied_statements(plans), set()
    for s, rule, chosen, drop in plans:
        if rule is None:
            continue
        if not drop:
            name, value = chosen
            shown = {"unset": f"unset {name}", "pass": name}.get(s.form, f"{name}={value}")
            rec.change(rule.id, s.offset, f"{s.name} → {shown}", *s.rename(name, value))
            continue
        whole = id(s.statement) in emptied
        edits = [] if whole and id(s.statement) in removed else (s.statement if whole else s.delete)
        if edits is None:
            rec.decide(rule.id, s.offset, "remove it by hand: PJRT ignores it", f"{s.name} is not used under PJRT")
            continue
        why = (
            rule.removed_because(s.name, rec.options.target_version)
            if chosen is None
            else f"{'='.join(chosen)} is already set here"
        )
        rec.change(rule.id, s.offset, f"removed {s.name}: {why}", *edits)
        if whole:
            removed.add(id(s.statement))  # the statement goes once; its other settings with it


def _emptied_statements(plans: list[Plan]) -> set[int]:
    """Statements every setting of which is dropped: they are removed whole."""
    verdicts: dict[int, bool] = {}
    for s, rule, _, drop in plans:
        if s.statement is not None:
            verdicts[id(s.statement)] = verdicts.get(id(s.statement), True) and rule is not None and drop
    return {key for key, emptied in verdicts.items() if emptied}


def ask_about_heredoc(rec: Recorder, start: int, end: int) -> None:
    """Report each XRT-era setting in the here-document ``rec.text[start:end]``."""
    for m in SETTING.finditer(rec.text[start:end]):
        rule = rule_for(m.group(1))
        if rule is not None and rec.options.on(rule.id):
            rec.decide(
                rule.id,
                start + m.start(),
                "change it by hand (here-document)",
                f"{m.group(1)} set inside a here-document: change it by hand",
            )


def ask_about_mentions(rec: Recorder, where: str) -> None:
    """Report every XRT-era variable ``rec.text`` names (a text that is reported only), but in a
    comment, or one a shell line unsets: 2.9 reads none of them, so unsetting one changes nothing
    (a GPU command that unsets XRT_TPU_CONFIG asks for no TPU, and PJRT_DEVICE=TPU would be wrong
    there)."""
    for m in MENTION.finditer(rec.text):
        if _UNSET_OR_COMMENT.search(rec.text, rec.text.rfind("\n", 0, m.start()) + 1, m.start()):
            continue
        rule = rule_here(m.group(1), rec)
        if rule is not None:
            instead = replacement(m.group(1))
            rec.decide(rule.id, m.start(), instead.do, f"{m.group(1)} {where}: {instead}")


def _only_shown(text: str) -> list[tuple[int, int]]:
    """The spans of the commands of ``text`` that only show what they read (``echo $X``): its
    own, and those of a quoted word that is shell for another machine, whose reads the local
    shell expands (``gcloud compute ssh VM --command "export X=$X; echo $X"``)."""
    spans = []
    for cmd in commands(text):
        if cmd.only_shows(text):
            spans.append((cmd.start, cmd.end))
            continue
        for w in cmd.words:
            source = w.source(text)
            quote = min((source.find(q) for q in "'\"" if q in source), default=-1)
            if quote < 0 or not source.endswith(source[quote]) or not READ.search(source):
                continue
            inner, base = source[quote + 1 : -1], w.start + quote + 1
            spans += [(base + c.start, base + c.end) for c in commands(inner) if c.only_shows(inner)]
    return spans


def _read_back(text: str, name: str, offset: int) -> bool:
    """Whether the file expands ``name`` after its setting at ``offset`` (``TPU_NUM_DEVICES=4``,
    then ``--distributed-world-size $TPU_NUM_DEVICES``): the script's own variable too, which its
    removal would empty."""
    return re.compile(expansion(re.escape(name))).search(text, offset) is not None


def _set_before(text: str, name: str, offset: int) -> bool:
    """Whether the file sets ``name`` on a line above ``offset`` (``export NAME=``, ``ENV NAME=``;
    not ``export NAME=$NAME`` on the read's own line, which reads what others set)."""
    line_start = text.rfind("\n", 0, offset) + 1
    return re.compile(rf"(?:^|[\s;&|(]){re.escape(name)}=").search(text, 0, line_start) is not None


def ask_about_reads(text: str, base: int, rec: Recorder) -> None:
    """Report every ``$XRT_…`` read in ``text`` (a shell text which starts at ``base`` in the
    file), but for the reads of an ``echo`` that only shows the value (an empty one harms
    nothing) and of a variable the file sets itself before (its own, kept)."""
    reads = list(READ.finditer(text))
    shown = _only_shown(text) if reads else []
    for m in reads:
        rule = rule_here(m.group(1), rec)
        if (
            rule is not None
            and not any(start <= m.start() < end for start, end in shown)
            and not _set_before(rec.text, m.group(1), base + m.start())
        ):
            instead = replacement(m.group(1))
            rec.decide(
                rule.id,
                base + m.start(),
                instead.do,
                f"{m.group(1)} is read here but nothing sets it under PJRT: {instead}",
            )
