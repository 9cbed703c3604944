"""The Markdown / reStructuredText rewriter: code blocks only, prose untouched.

Each code block goes, dedented, to the rewriter of its language (shell, Python, Dockerfile,
YAML; an untagged block counts as shell), and comes back re-indented. A block whose
rewrite that rewriter's own check rejects is left as it was, and reported. A shell block
written as a console session (`(vm)$ export ...`, output lines between) is rewritten
command by command, each keeping its prompt. The items to decide are reported only: the
``# TODO(xrt2pjrt)`` lines the rewriters write into code do not go into documentation,
where readers copy them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xrt2pjrt import rewriters
from xrt2pjrt.registry import Options
from xrt2pjrt.rewriters import TODO, Outcome, SourceError
from xrt2pjrt.rules.trigger import TRIGGER as PYTHON_TRIGGER
from xrt2pjrt.text import shell
from xrt2pjrt.report import Finding
from xrt2pjrt.text.edits import Edit, Recorder, dedent, indent, merge_into, shifted


def _python():
    """The Python rewriter, imported when a file needs it (it brings libcst)."""
    return rewriters.module_for("python")


TRIGGER = re.compile(shell.TRIGGER.pattern + r"|xla_model|xla_multiprocessing|xmp\.|xm\.")

# info string / directive language -> file kind
LANGUAGES = {
    **dict.fromkeys(("", "sh", "bash", "shell", "console", "zsh", "shell-session", "sh-session", "text",
                     "none"), "shell"),
    **dict.fromkeys(("python", "py", "python3", "ipython", "ipython3"), "python"),
    **dict.fromkeys(("dockerfile", "docker"), "dockerfile"),
    **dict.fromkeys(("yaml", "yml"), "yaml"),
}
_FENCE = re.compile(r"^([ \t]*)(`{3,}|~{3,})[ \t]*([^\s`]*)[^\n]*$", re.M)
_RST_DIRECTIVE = re.compile(r"^([ \t]*)(?:\.\. (?:code-block|code|sourcecode)::[ \t]*(\S*)|(?!\.\.)(?:.*\S)?::)[ \t]*$", re.M)


@dataclass(frozen=True)
class Block:
    start: int  # start of the first content line
    end: int  # end of the last content line, with its newline
    indent: str  # what every non-empty content line starts with
    kind: str


def rewrite(text: str, options: Options) -> Outcome:
    rec = Recorder(text, options)
    bodies = {block: dedent(text[block.start:block.end], block.indent) for block in blocks(text)}
    together = _python_together(text, bodies, options)
    for block, body in bodies.items():
        module = rewriters.module_for(block.kind)
        if block in together:
            outcome = _checked(module, body, together[block])
        elif not module.TRIGGER.search(body):
            continue
        elif block.kind == "shell" and _PROMPT.search(body):
            outcome = _rewrite_session(body, options)
        else:
            try:
                outcome = _checked(module, body, module.rewrite(body, options))
            except SourceError:
                continue  # a snippet that does not parse (`...`, placeholders): documentation, left alone
        new = _without_new_todo_lines(body, outcome.text)
        if new != body:
            rec.edits.append(Edit(block.start, block.end, indent(new, block.indent)))
        merge_into(rec, outcome, rec.line(block.start) - 1)
    return rec.outcome()


def _python_together(text: str, bodies: dict[Block, str], options: Options) -> dict[Block, Outcome]:
    """The outcome of each Python block that parses, all of them rewritten as one program:
    a document imports torch_xla in one block and uses it in the next ones. ``bodies``:
    every code block, dedented."""
    python = [block for block, body in bodies.items() if block.kind == "python" and _python().check(body) is None]
    if len(python) < 2:
        return {}
    first = [text.count("\n", 0, block.start) for block in python]  # lines before each block
    outcomes = _python().rewrite_together([bodies[block] for block in python], options,
                                        where=lambda k, line: f"line {first[k] + line}")
    return dict(zip(python, outcomes or ()))


def _without_new_todo_lines(before: str, after: str) -> str:
    """``after`` (the rewrite of ``before``) without the TODO lines the rewrite added."""
    had = {line.strip() for line in before.splitlines()}
    return "".join(line for line in after.splitlines(keepends=True)
                   if not (line.lstrip().startswith(TODO) and line.strip() not in had))


def _checked(module, body: str, outcome: Outcome) -> Outcome:
    """``outcome``, the rewrite of ``body`` by ``module``; ``body`` as it was, reported, when
    the rewrite fails that module's own check."""
    if outcome.text == body:
        return outcome
    problem = module.check(outcome.text)
    if problem is None:
        return outcome
    return Outcome(body, manual=[Finding(f.rule, f.line, "code block left as it was: its rewrite would not be "
                                         f"valid {module.__name__.rsplit('.', 1)[-1]} ({problem})")
                                 for f in outcome.changes])


# A shell prompt that starts a command in a console session: `$ `, `(vm)$ `, `user@host:~$ `.
_PROMPT = re.compile(r"^[ \t]*(?:\([^()\n]*\)[ \t]*)?(?:[\w.-]+@[\w.-]+(?::[^\s$]*)?)?\$[ \t]+", re.M)


def _rewrite_session(body: str, options: Options) -> Outcome:
    """A console session: each command after a prompt (with its ``\\`` continuation lines)
    goes to the shell rewriter on its own, and gets its prompt back; output lines stay."""
    lines = body.splitlines(keepends=True)
    out, changes, manual = [], [], []
    i = 0
    while i < len(lines):
        prompt = _PROMPT.match(lines[i])
        if prompt is None:  # output, or a comment between commands
            out.append(lines[i])
            i += 1
            continue
        end = i + 1
        while end < len(lines) and lines[end - 1].rstrip("\r\n").endswith("\\"):
            end += 1
        command = lines[i][prompt.end():] + "".join(lines[i + 1:end])
        done = _checked(shell, command, shell.rewrite(command, options, comments=False))
        changes += shifted(done.changes, i)
        manual += shifted(done.manual, i)
        if done.text.strip():
            out.append(prompt.group() + done.text)
        i = end
    return Outcome("".join(out), changes, manual)


def check(text: str) -> str | None:
    return None  # each block was checked by its own rewriter's check during the rewrite


def parsed_size(text: str) -> int:
    """The characters of code a rewrite parses (see rewriters): its code blocks; the prose is
    only searched for them."""
    return sum(block.end - block.start for block in blocks(text))


def blocks(text: str) -> list[Block]:
    """The code blocks of a Markdown or reStructuredText text whose language has a rewriter."""
    fenced = _fenced(text)
    literal = [b for b in _rst(text) if not any(b.start < f.end and f.start < b.end for f in fenced)]
    return sorted((b for b in fenced + literal if b.kind), key=lambda b: b.start)


def _fenced(text: str) -> list[Block]:
    out, pos = [], 0
    while True:
        m = _FENCE.search(text, pos)
        if not m:
            return out
        margin, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        start = min(m.end() + 1, len(text))
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.M).search(text, start)
        end = close.start() if close else len(text)
        out.append(Block(start, end, margin, LANGUAGES.get(lang.strip("{}."), "")))
        pos = close.end() if close else len(text)


def _rst(text: str) -> list[Block]:
    """``.. code-block:: LANG`` directives and ``::`` literal blocks: the indented lines after
    the first blank line (lines before it are the directive's options)."""
    out = []
    for m in _RST_DIRECTIVE.finditer(text):
        base = len(m.group(1).expandtabs())
        pos, start, end, margin, blank = m.end() + 1, None, None, "", False
        for line in _lines_from(text, pos):
            width = len(line) - len(line.lstrip())
            if line.strip() and width <= base:
                break
            if not line.strip():
                blank = True
            elif blank:
                if start is None:
                    start, margin = pos, line[:width]
                end = pos + len(line)
            pos += len(line)
        if start is not None:
            out.append(Block(start, end, margin, LANGUAGES.get((m.group(2) or "").lower(), "")))
    return out


def _lines_from(text: str, pos: int):
    """The lines of ``text`` from ``pos`` on, with their newlines, one at a time (a copy of the
    rest of the text for each directive was quadratic: 62 s for 1.3 MB of 20,000 `::` blocks)."""
    while pos < len(text):
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end + 1
        yield text[pos:end]
        pos = end
