"""The Dockerfile rewriter: RUN/CMD/ENTRYPOINT shell forms go to the shell rewriter, ENV and
ARG settings to the environment rules, FROM images to the install check (text/installs.py).
Exec forms (JSON arrays) are reported, not rewritten.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xrt2pjrt.registry import Options
from xrt2pjrt.rewriters import Outcome
from xrt2pjrt.text import environment, installs, shell, xla_dist
from xrt2pjrt.text.edits import Edit, Recorder, leave_todo_comments, merge_into
from xrt2pjrt.text.environment import EnvSetting
from xrt2pjrt.text.words import NAME, docker_words, without_word

TRIGGER = shell.TRIGGER
SHELL_FORMS = ("RUN", "CMD", "ENTRYPOINT")
_INSTRUCTION = re.compile(r"[ \t]*([A-Za-z]+)([ \t]+|$)", re.M)


@dataclass(frozen=True)
class Instruction:
    keyword: str  # upper case
    start: int  # the start of its first line
    args: int  # where its arguments start
    end: int  # the end of its last line (before the newline)


def instructions(text: str) -> list[Instruction]:
    """Every instruction, with continuation lines (and the comments between them) folded in."""
    out: list[Instruction] = []
    pos = 0
    while pos < len(text):
        line_end = _line_end(text, pos)
        line = text[pos:line_end]
        m = _INSTRUCTION.match(line)
        if not line.strip() or line.lstrip().startswith("#") or not m:
            pos = line_end + 1
            continue
        start, end = pos, line_end
        while text[start:end].rstrip().endswith("\\") and end < len(text):
            nxt = end + 1
            # comment and empty lines inside a continuation are dropped by docker
            while nxt < len(text) and (text[nxt:_line_end(text, nxt)].lstrip().startswith("#")
                                       or not text[nxt:_line_end(text, nxt)].strip()):
                nxt = _line_end(text, nxt) + 1
            if nxt >= len(text):
                break
            end = _line_end(text, nxt)
        out.append(Instruction(m.group(1).upper(), start, start + m.end(), end))
        pos = end + 1
    return out


def _line_end(text: str, pos: int) -> int:
    end = text.find("\n", pos)
    return len(text) if end < 0 else end


def rewrite(text: str, options: Options) -> Outcome:
    options = installs.in_file(options, text)
    rec = Recorder(text, options)
    settings: list[EnvSetting] = []
    for ins in instructions(text):
        body = text[ins.args:ins.end]
        if ins.keyword in SHELL_FORMS and not body.lstrip().startswith("["):
            outcome = shell.rewrite(body, options, posix_sh=True, comments=False)  # docker runs them with /bin/sh -c
            if outcome.text != body:
                rec.edits.append(Edit(ins.args, ins.end, outcome.text))
            merge_into(rec, outcome, rec.line(ins.args) - 1)
        elif ins.keyword in SHELL_FORMS and TRIGGER.search(body):
            rule = shell.LaunchXlaDist if xla_dist.MENTION.search(body) else environment.XrtTpuConfig
            if options.on(rule.id):
                rec.ask(rule.id, ins.start, f"{ins.keyword} in exec form (a JSON array) mentions XRT or "
                        "xla_dist: rewrite it by hand, or use the shell form and run xrt2pjrt again")
        elif ins.keyword in ("ENV", "ARG"):
            settings += _settings(ins, text)
            environment.ask_about_reads(body, ins.args, rec)
        elif ins.keyword == "FROM":
            words = [w for w in docker_words(body) if not (w.value or "").startswith("--")]
            if words:  # the image, after any --platform=
                installs.ask(rec, words[0].value or words[0].source(body), ins.args + words[0].start)
    environment.apply(settings, rec, lambda offset: "PJRT_DEVICE" in text[:offset])
    leave_todo_comments(rec, [(rec.line(ins.start), rec.line(ins.end)) for ins in instructions(text)])
    return rec.outcome()


def check(text: str) -> str | None:
    """Every shell-form RUN/CMD/ENTRYPOINT still parses (``bash -n``)."""
    for ins in instructions(text):
        body = text[ins.args:ins.end]
        if ins.keyword in SHELL_FORMS and not body.lstrip().startswith("["):
            problem = shell.check(body)
            if problem:
                return f"{ins.keyword} at line {text.count(chr(10), 0, ins.start) + 1}: {problem}"
    return None


def _settings(ins: Instruction, text: str) -> list[EnvSetting]:
    body = text[ins.args:ins.end]
    words = docker_words(body)
    if not words:
        return []
    whole = [Edit(ins.start, min(ins.end + 1, len(text)), "")]
    at = ins.args
    if words[0].assignment() is None and ins.keyword == "ENV":
        # legacy `ENV NAME value with spaces`: one variable, the rest of the line is its value
        name = words[0]
        if name.value is None or not NAME.fullmatch(name.value):
            return []
        value_start = at + (words[1].start if len(words) > 1 else name.end)

        def rename_legacy(new: str, value: str) -> list[Edit]:
            return [Edit(at + name.start, at + name.end, new), Edit(value_start, ins.end, value)]

        return [EnvSetting(name.value, at + name.start, rename_legacy, whole, scope=ins.keyword,
                           value=text[value_start:ins.end])]
    out = []
    for w in words:
        split = w.assignment()
        if split is None and (w.value is None or not NAME.fullmatch(w.value)):
            continue
        name = split[0] if split else w.value
        if len(words) == 1:
            delete = whole
        else:
            start, end = without_word(words, words.index(w))
            delete = [Edit(at + start, at + end, "")]
        out.append(EnvSetting(name, at + w.start, environment.replacing(at + w.start, at + w.end, bool(split)),
                              delete, form="set" if split else "pass", scope=ins.keyword, statement=whole,
                              value=split[1].source(body) if split else None))
    return out
