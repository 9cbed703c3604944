"""The Markdown / reStructuredText rewriter: code blocks only, prose untouched.

Each code block goes, dedented, to the rewriter of its language (shell, Python, Dockerfile,
YAML; an untagged block counts as shell), and comes back re-indented. A block whose
rewrite that rewriter's own check rejects is left as it was, and reported. A shell block
written as a console session (`(vm)$ export ...`, output lines between) is rewritten
command by command, each keeping its prompt. The items to decide are reported only: the
``# TODO(xrt2pjrt)`` lines the rewriters write into code do not go into documentation,
where readers copy them. So the lines of a spot to decide are left as they were: rewritten,
the spot would hide its decision (a remote TPU node's ``XRT_TPU_CONFIG`` made a plain
``PJRT_DEVICE=TPU``) and no later run could report it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from xrt2pjrt import rewriters
from xrt2pjrt.registry import Options
from xrt2pjrt.rewriters import Outcome, SourceError
from xrt2pjrt.text import shell
from xrt2pjrt.report import Finding
from xrt2pjrt.text.edits import Edit, Recorder, dedent, indent, merge_into, shifted, without_new_todo_lines


def _python():
    """The Python rewriter, imported when a file needs it (it brings libcst)."""
    return rewriters.module_for("python")


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
    options = options.in_file(text)
    rec = Recorder(text, options)
    bodies = {block: dedent(text[block.start:block.end], block.indent) for block in blocks(text)}
    done = _python_together(text, bodies, options)
    for block, body in bodies.items():
        module = rewriters.module_for(block.kind)
        if block in done or not rewriters.trigger_for(block.kind).search(body):
            continue
        again = _rewriter(block, body, module, options)
        try:
            done.update(zip([block], _leave_decided([body], again([body]), again)))
        except SourceError:
            continue  # a snippet that does not parse (`...`, placeholders): documentation, left alone
    for block, body in bodies.items():
        if block not in done:
            continue
        if done[block].text != body:
            rec.edits.append(Edit(block.start, block.end, indent(done[block].text, block.indent)))
        merge_into(rec, done[block], rec.line(block.start) - 1)
    return rec.outcome()


# How code is rewritten: its blocks' texts -> their outcomes (one block, or the Python
# blocks of a document as one program).
Program = Callable[[list[str]], list[Outcome]]


def _rewriter(block: Block, body: str, module, options: Options) -> Program:
    if block.kind == "shell" and _PROMPT.search(body):
        return lambda texts: [_rewrite_session(texts[0], options)]
    return lambda texts: [_checked(module, texts[0], module.rewrite(texts[0], options))]


def _python_together(text: str, bodies: dict[Block, str], options: Options) -> dict[Block, Outcome]:
    """The outcome of each Python block that parses, all of them rewritten as one program:
    a document imports torch_xla in one block and uses it in the next ones. ``bodies``:
    every code block, dedented."""
    python = [block for block, body in bodies.items() if block.kind == "python" and _python().check(body) is None]
    if len(python) < 2:
        return {}
    first = [text.count("\n", 0, block.start) for block in python]  # lines before each block

    def together(sources: list[str]) -> list[Outcome]:
        outcomes = _python().rewrite_together(sources, options, where=lambda own, k, line: (first[k] + line - first[own], None))
        if outcomes is None:
            raise SourceError("the Python blocks are not one program", 1)
        return [_checked(_python(), source, outcome) for source, outcome in zip(sources, outcomes)]

    sources = [bodies[block] for block in python]
    try:
        return dict(zip(python, _leave_decided(sources, together(sources), together)))
    except SourceError:
        return {}


def _leave_decided(bodies: list[str], outcomes: list[Outcome], again: Program) -> list[Outcome]:
    """``outcomes`` (the rewrite of ``bodies``) without their new TODO lines, and with each
    spot whose item to decide a next run (``again``) would no longer find as it was: the code
    is rewritten again with an ``ignore`` marker on each such statement, then without the
    markers. Where that cannot be done, or a next run would change the result, the code is
    left as it was and its changes are reported as not made."""
    done = [_without_todo_lines(b, o) for b, o in zip(bodies, outcomes)]
    if all(o.text == b for b, o in zip(bodies, done)) or not any(o.manual for o in outcomes):
        return done
    hidden = _hidden(outcomes, again([o.text for o in done]))
    if not any(hidden):
        return done
    kept = _rewrite_keeping(bodies, [{f.line for f in h} for h in hidden], again)
    if kept is not None:
        then = again([o.text for o in kept])
        if not any(_hidden(outcomes, then)):  # a next run asks each item again, and keeps each spot
            spots = [{f.line for f in t.manual if _item(f) in set(map(_item, h))}
                     for t, h in zip(then, hidden)]
            second = _rewrite_keeping([o.text for o in kept], spots, again)
            if second is not None and all(a.text == b.text and not a.changes for a, b in zip(second, kept)):
                return [Outcome(k.text, k.changes, o.manual) for k, o in zip(kept, outcomes)]
    return [Outcome(b, [], [*o.manual, *(Finding(f.rule, f.line, "code block left as it was, as it has an item "
                                                 f"to decide: make this change by hand ({f.message})")
                                         for f in o.changes)]) for b, o in zip(bodies, outcomes)]


def _hidden(first: list[Outcome], then: list[Outcome]) -> list[list[Finding]]:
    """For each block, the items ``first`` asks and a next run, ``then``, does not (an item
    naming a line that has moved is the same item)."""
    out = []
    for a, b in zip(first, then):
        left = [_item(f) for f in b.manual]
        out.append([])
        for f in a.manual:
            if _item(f) in left:
                left.remove(_item(f))
            else:
                out[-1].append(f)
    return out


def _item(f: Finding) -> tuple:
    """What says which item ``f`` is, wherever its lines have moved."""
    return f.rule, f.message, tuple(c.text for c in f.cites)


_KEEP = "  # xrt2pjrt: ignore"  # suppress.py: keeps every rule off the statement it is on


def _rewrite_keeping(bodies: list[str], spots: list[set[int]], again: Program) -> list[Outcome] | None:
    """The rewrite of ``bodies`` (by ``again``) with the statements at lines ``spots`` (of
    each body) as they are, new TODO lines left out; None when a marker cannot be put there or
    taken back."""
    marked = []
    for body, lines_at in zip(bodies, spots):
        lines = body.splitlines(keepends=True)
        for line in sorted(lines_at):
            last = line
            while last < len(lines) and lines[last - 1].rstrip("\r\n").endswith("\\"):
                last += 1  # a marker on a command's last line covers its continued lines
            if last > len(lines) or _KEEP in lines[last - 1] or re.search("\"\"\"|\'\'\'|<<", lines[last - 1]):
                return None  # (in a string or a here-document, a marker would be text)
            text = lines[last - 1].rstrip("\r\n")
            lines[last - 1] = text + _KEEP + lines[last - 1][len(text):]
        marked.append("".join(lines))
    try:
        outcomes = [_without_todo_lines(m, o) for m, o in zip(marked, again(marked))]
    except SourceError:
        return None
    if any(o.text.count(_KEEP) != m.count(_KEEP) for m, o in zip(marked, outcomes)):
        return None
    return [Outcome(o.text.replace(_KEEP, ""), o.changes, o.manual) for o in outcomes]


def _without_todo_lines(before: str, outcome: Outcome) -> Outcome:
    """``outcome`` (the rewrite of ``before``) without the TODO lines the rewrite added."""
    return Outcome(without_new_todo_lines(before, outcome.text), outcome.changes, outcome.manual)


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
