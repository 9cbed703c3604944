"""The Dockerfile rewriter: RUN/CMD/ENTRYPOINT shell forms go to the shell rewriter, ENV and
ARG settings to the environment rules, FROM images to the text rules' ``word`` hook. Exec
forms (JSON arrays) go to their ``exec_form`` hook, which reports, never rewrites.

A RUN's here-documents (``RUN <<EOT bash`` ... ``EOT``, BuildKit's) are the script they hold:
with no command, or a shell as the command, the shell rewriter's (sh's unless it is bash);
with Python as the command, the Python rewriter's. COPY's and ADD's hold files, left alone;
either way their lines are never read as instructions.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

from xrt2pjrt.registry import Options
from xrt2pjrt import rewriters
from xrt2pjrt.rewriters import Outcome, trigger_for
from xrt2pjrt.text import environment, shell
from xrt2pjrt.recorder import Edit, Recorder, leave_todo_comments, merge_into
from xrt2pjrt.report import Finding, Range
from xrt2pjrt.text.environment import EnvSetting
from xrt2pjrt.text.rule import rules
from xrt2pjrt.text.words import NAME, Word, docker_words, without_word

SHELL_FORMS = ("RUN", "CMD", "ENTRYPOINT")
_INSTRUCTION = re.compile(r"[ \t]*([A-Za-z]+)([ \t]+|$)", re.M)
_HEREDOC = re.compile(r"<<(-?)([\"']?)([A-Za-z_][A-Za-z0-9_]*)\2")  # <<EOT, <<-EOT, <<"EOT"
_HEREDOC_KEYWORDS = ("RUN", "COPY", "ADD")
_SHELL = re.compile(r"(?:/usr)?(?:/bin/)?(sh|bash|dash|ash)\b")
_PYTHON = re.compile(r"(?:/usr)?(?:/bin/)?(?:/usr/local/bin/)?python[0-9.]*\b")


@dataclass(frozen=True)
class Instruction:
    keyword: str  # upper case
    start: int  # the start of its first line
    args: int  # where its arguments start
    end: int  # the end of its last line (before the newline): of its last here-document's delimiter
    heredocs: tuple[tuple[int, int], ...] = ()  # the (start, end) of each here-document's text
    command_end: int = -1  # with here-documents, the end of the line that opens them

    def command(self, text: str) -> str:
        """Its arguments (with here-documents, the command that reads them)."""
        return text[self.args : self.command_end if self.heredocs else self.end]


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
            while nxt < len(text) and (
                text[nxt : _line_end(text, nxt)].lstrip().startswith("#")
                or not text[nxt : _line_end(text, nxt)].strip()
            ):
                nxt = _line_end(text, nxt) + 1
            if nxt >= len(text):
                break
            end = _line_end(text, nxt)
        keyword, heredocs, command_end = m.group(1).upper(), [], end
        for marker in _HEREDOC.finditer(text, start + m.end(), end) if keyword in _HEREDOC_KEYWORDS else ():
            body, end = end + 1, _delimiter_end(text, end + 1, marker.group(3), tabs=bool(marker.group(1)))
            heredocs.append((min(body, len(text)), max(min(body, len(text)), text.rfind("\n", 0, end) + 1)))
        out.append(Instruction(keyword, start, start + m.end(), end, tuple(heredocs), command_end))
        pos = end + 1
    return out


def _delimiter_end(text: str, pos: int, word: str, tabs: bool) -> int:
    """The end of the line from ``pos`` on that ends a here-document (the file's end if none)."""
    while pos < len(text):
        end = _line_end(text, pos)
        if (text[pos:end].lstrip("\t") if tabs else text[pos:end]).rstrip("\r") == word:
            return end
        pos = end + 1
    return len(text)


def _line_end(text: str, pos: int) -> int:
    end = text.find("\n", pos)
    return len(text) if end < 0 else end


def rewrite(text: str, options: Options) -> Outcome:
    options = options.in_file(text)
    rec = Recorder(text, options)
    settings: list[EnvSetting] = []
    for ins in instructions(text):
        body = ins.command(text)
        if ins.heredocs:
            if ins.keyword == "RUN":
                _heredocs(ins, text, rec)
        elif ins.keyword in SHELL_FORMS and not _exec_form(body):
            outcome = shell.rewrite(body, options, posix_sh=True, comments=False)  # docker runs them with /bin/sh -c
            if outcome.text != body:
                rec.edits.append(Edit(ins.args, ins.end, outcome.text))
            merge_into(rec, outcome, rec.line(ins.args) - 1)
        elif ins.keyword in SHELL_FORMS and trigger_for("dockerfile").search(body):
            for rule in rules(options):
                rule.exec_form(rec, ins.start, ins.keyword, body)
        elif ins.keyword in ("ENV", "ARG"):
            settings += _settings(ins, text)
            environment.ask_about_reads(body, ins.args, rec)
        elif ins.keyword == "FROM":
            words = [w for w in docker_words(body) if not (w.value or "").startswith("--")]
            if words:  # the image, after any --platform=
                for rule in rules(options):
                    rule.word(rec, words[0].value or words[0].source(body), ins.args + words[0].start)
    environment.apply(settings, rec, lambda offset: "PJRT_DEVICE" in text[:offset])
    spans = [(rec.line(ins.start), rec.line(ins.end)) for ins in instructions(text)]
    rec.manual = _one_item_an_instruction(rec.manual, spans)
    leave_todo_comments(rec, spans)
    return rec.outcome()


def _one_item_an_instruction(items: list[Finding], spans: list[tuple[int, int]]) -> list[Finding]:
    """``items`` with those of one rule saying the same thing in one instruction made one,
    whose range runs from the first to the last: a RUN that fetches torch, torch_xla and
    torchvision from the XRT-era bucket on three continued lines is one decision, and its
    TODO line is written once above it."""
    at: dict[tuple, int] = {}  # (rule, message, instruction) -> its item's place in ``out``
    out: list[Finding] = []
    for item in items:
        span = next((span for span in spans if span[0] <= item.line <= span[1]), None)
        key = (item.rule, item.message, span)
        if span is None or key not in at:
            at[key] = len(out)
            out.append(item)
            continue
        first = out[at[key]]
        out[at[key]] = replace(first, range=Range.of_lines(first.line, max(first.range.end_line, item.range.end_line)))
    return out


def _heredocs(ins: Instruction, text: str, rec: Recorder) -> None:
    """A RUN's here-documents, each rewritten as the script its command runs (module docstring)."""
    program = _program(ins, text)
    if program is None:
        return
    rewrite, _ = program
    for start, end in ins.heredocs:
        outcome = rewrite(text[start:end], rec.options)
        if outcome.text != text[start:end]:
            rec.edits.append(Edit(start, end, outcome.text))
        merge_into(rec, outcome, rec.line(start) - 1)


def _program(ins: Instruction, text: str):
    """(rewrite, check) of the script a RUN's here-documents hold: by the command that reads
    them (none: docker runs them with /bin/sh); None for another program."""
    command = _HEREDOC.sub("", ins.command(text)).strip()
    first = command.split(" ")[0] if command else "sh"
    shell_name = _SHELL.fullmatch(first)
    if shell_name:
        posix_sh = shell_name.group(1) != "bash"
        return (lambda body, options: shell.rewrite(body, options, posix_sh=posix_sh, comments=False)), shell.check
    if _PYTHON.fullmatch(first):
        python = rewriters.module_for("python")  # (a script exported from a notebook: its own rewriter)
        return (lambda body, options: rewriters.module_for("python", body).rewrite(body, options)), python.check
    return None


def _exec_form(body: str) -> bool:
    """Whether docker reads an instruction's arguments as its exec form: a JSON array of
    strings. Anything else, ``RUN [ "$X" != y ] && ...`` too, is shell form."""
    try:
        words = json.loads(body.replace("\\\n", ""))
    except ValueError:
        return False
    return isinstance(words, list) and all(isinstance(word, str) for word in words)


def check(text: str) -> str | None:
    """Every shell-form RUN/CMD/ENTRYPOINT, and every script a RUN's here-documents hold,
    still parses (``bash -n``; Python's parser)."""
    for ins in instructions(text):
        body = ins.command(text)
        program = _program(ins, text) if ins.keyword == "RUN" and ins.heredocs else None
        if program:
            problems = [program[1](text[start:end]) for start, end in ins.heredocs]
        elif ins.keyword in SHELL_FORMS and not ins.heredocs and not _exec_form(body):
            # (docker drops the comment lines inside a continued instruction before the shell sees it)
            problems = [shell.check(re.sub(r"(?<=\n)[ \t]*#[^\n]*\n", "", body))]
        else:
            continue
        problem = next((problem for problem in problems if problem), None)
        if problem:
            return f"{ins.keyword} at line {text.count(chr(10), 0, ins.start) + 1}: {problem}"
    return None


def _settings(ins: Instruction, text: str) -> list[EnvSetting]:
    body = ins.command(text)
    words = docker_words(_without_comment_lines(body))
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

        return [
            EnvSetting(
                name.value, at + name.start, rename_legacy, whole, scope=ins.keyword, value=text[value_start : ins.end]
            )
        ]
    out = []
    for w in words:
        split = w.assignment()
        if split is None and (w.value is None or not NAME.fullmatch(w.value)):
            continue
        name = split[0] if split else w.value
        if len(words) == 1:
            delete = whole
        else:
            delete = [Edit(at + start, at + end, "") for start, end in _without(body, words, words.index(w))]
        out.append(
            EnvSetting(
                name,
                at + w.start,
                environment.replacing(at + w.start, at + w.end, bool(split)),
                delete,
                form="set" if split else "pass",
                scope=ins.keyword,
                statement=whole,
                value=split[1].source(body) if split else None,
            )
        )
    return out


def _without_comment_lines(body: str) -> str:
    """``body`` with the comment lines inside its continuation blanked (offsets kept): docker
    drops them, so their words are no settings."""
    return re.sub(r"(?m)(?<=\n)[ \t]*#.*", lambda m: " " * len(m.group()), body)


def _without(body: str, words: list[Word], k: int) -> list[tuple[int, int]]:
    """The spans to delete to remove ``words[k]`` (of two or more) from an ENV/ARG body, so
    that what is left continues as before: a word alone on its line goes with that line, and
    the last word of the instruction also takes the `\\` before it with it, or that `\\`
    would continue the instruction past the comment and blank lines it keeps into the next
    instruction (docker skips those lines inside a continuation)."""
    w = words[k]
    line_start = body.rfind("\n", 0, w.start) + 1
    eol = body.find("\n", w.end)
    rest = body[w.end : eol if eol >= 0 else len(body)]
    if not (k > 0 and line_start > 0 and not body[line_start : w.start].strip() and rest.strip() in ("", "\\")):
        return [without_word(words, k)]
    if k < len(words) - 1:
        return [(line_start, eol + 1)]
    before = words[k - 1].end
    backslash = body.find("\\\n", before)  # (files.py reads "\r\n" files as "\n")
    if (
        backslash < 0
        or body[before:backslash].strip()
        or any(
            line.strip() and not line.lstrip().startswith("#") for line in body[backslash + 2 : line_start].splitlines()
        )
    ):
        return [(before, w.end)]  # something else between them: it goes too
    return [(before, backslash + 1), (line_start - 1, w.end + len(rest))]
