"""The Markdown / reStructuredText rewriter: code blocks only, prose untouched.

A code block is a fenced one, an indented one (four spaces, in Markdown), a reST
``code-block`` directive or a ``::`` literal block. A block tagged with a language is of
that language, but one that may hold Python is read as its text says: untagged, or tagged
``text``, ``py``, ``python3``, ``ipython``, ``pycon`` and the like, it is a Python session when
it starts with ``>>>``, Python when it parses as Python (its IPython lines, ``!pip ...`` and
``%env``, hidden first and migrated as the commands and settings they are), shell otherwise
(and Python when tagged so). A block in a language no rewriter reads (c++, ...) stays as it
is; so does a ``json`` one, but one holding no JSON is a transcript a reader copies a
command from (``python -m torch_xla.distributed.xla_dist ...`` with the lines it printed):
its XRT-era commands are reported at their lines, not rewritten; so are those of a command
quoted as inline code in the prose (`conda activate torch-xla-1.13`).

Each block goes, dedented, to the rewriter of its language, and comes back re-indented. A
guide's blocks are separate programs, pasted one by one, but a snippet leans on the imports
of the blocks around it: a Python block is rewritten with the imports of the other blocks
that bind the names it uses (dropped again after; an import its rewrite needs goes into the
block itself), and with the names the other blocks use of its own imports, so that none of
those is dropped as unused. A block whose rewrite that rewriter's own check rejects is left
as it was, and reported. A shell block written as a console session (`(vm)$ export ...`,
output lines between) is rewritten command by command, each keeping its prompt. The items
to decide are reported only: the ``# TODO(xrt2pjrt)`` lines the rewriters write into code do
not go into documentation, where readers copy them. So the lines of a spot to decide are
left as they were: rewritten, the spot would hide its decision (a remote TPU node's
``XRT_TPU_CONFIG`` made a plain ``PJRT_DEVICE=TPU``) and no later run could report it.
"""

from __future__ import annotations

import ast
import difflib
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from xrt2pjrt import rewriters
from xrt2pjrt.registry import Options
from xrt2pjrt.rewriters import Outcome, SourceError
from xrt2pjrt.mixed import magics
from xrt2pjrt.text import shell
from xrt2pjrt.report import Finding
from xrt2pjrt.recorder import Edit, Recorder, dedent, indent, merge_into, shifted, without_new_todo_lines


def _python():
    """The Python rewriter, imported when a file needs it (it brings libcst)."""
    return rewriters.module_for("python")


# info string / directive language -> file kind; CONTENT: the block's text decides (_kind)
CONTENT = "content"
_PYTHON_TAGS = ("python", "py", "python3", "py3", "ipython", "ipython3", "pycon")
LANGUAGES = {
    **dict.fromkeys(("sh", "bash", "shell", "console", "zsh", "shell-session", "sh-session"), "shell"),
    **dict.fromkeys(("", "text", "none", *_PYTHON_TAGS), CONTENT),
    **dict.fromkeys(("dockerfile", "docker"), "dockerfile"),
    **dict.fromkeys(("yaml", "yml"), "yaml"),
    **dict.fromkeys(("json", "jsonc"), "json"),
}
_FENCE = re.compile(r"^([ \t]*)(`{3,}|~{3,})[ \t]*([^\s`]*)[^\n]*$", re.M)
_RST_DIRECTIVE = re.compile(
    r"^([ \t]*)(?:\.\. (?:code-block|code|sourcecode)::[ \t]*(\S*)|(?!\.\.)(?:.*\S)?::)[ \t]*$", re.M
)


@dataclass(frozen=True)
class Block:
    start: int  # start of the first content line
    end: int  # end of the last content line, with its newline
    indent: str  # what every non-empty content line starts with
    kind: str
    tag: str = ""  # its info string's or directive's language, lower case


def rewrite(text: str, options: Options) -> Outcome:
    options = options.in_file(text)
    rec = Recorder(text, options)
    bodies = {block: dedent(text[block.start : block.end], block.indent) for block in blocks(text)}
    around = _imports_around(bodies)
    for block, body in bodies.items():
        context, kept = around.get(block, ("", ()))  # (a snippet's xm is the import's of another block)
        if not rewriters.trigger_for(_TRIGGER.get(block.kind, block.kind)).search(context + body):
            continue
        try:
            if block.kind == "json":
                outcome = _transcript(body, options)
            else:
                again = _program(block.kind, body, options, context, kept)
                outcome = _leave_decided(body, again(body), again)
        except SourceError:
            continue  # a snippet that does not parse (`...`, placeholders): documentation, left alone
        if body.strip() and not outcome.text.strip():  # (an instruction left with no code)
            outcome = Outcome(
                body,
                [],
                [
                    *outcome.manual,
                    *(
                        replace(
                            f, message=f"the rewrite would empty this block: edit it and its text by hand ({f.message})"
                        )
                        for f in outcome.changes
                    ),
                ],
            )
        if outcome.text != body:
            rec.edits.append(
                Edit(
                    block.start,
                    block.end,
                    _indented_again(text[block.start : block.end], body, outcome.text, block.indent),
                )
            )
        merge_into(rec, outcome, rec.line(block.start) - 1)
    for start, command in _inline_commands(text):
        outcome = shell.rewrite(command, options, comments=False)
        said = _with_changes_not_made(outcome, lambda f: f"left as it is (inline code in the text): {f.message}")
        merge_into(rec, Outcome(command, manual=said), rec.line(start) - 1)
    return rec.outcome()


# A command quoted in the prose (`conda activate torch-xla-1.13`, ``export XRT_TPU_CONFIG=...``):
# a reader copies it as a block's, so its XRT-era words are reported (the prose is not rewritten).
_INLINE_CODE = re.compile(r"(?<!`)(`{1,2})(?!`)([^`\n]+?)\1(?!`)")
_COMMAND = re.compile(r"(?:export|conda|source|python3?|pip3?|gcloud|docker|sudo|env|bash|torchrun)\s|[A-Z][A-Z0-9_]*=")


def _inline_commands(text: str) -> list[tuple[int, str]]:
    """(offset, text) of each inline code span outside the code blocks that reads as a command,
    whole: one with ``...`` in it is the prose's sketch of a command, not one to copy."""
    found = [
        m
        for m in _INLINE_CODE.finditer(text)
        if _COMMAND.match(m.group(2)) and "..." not in m.group(2) and rewriters.trigger_for("shell").search(m.group(2))
    ]
    spans = [(b.start, b.end) for b in _fenced(text) + _rst(text) + _indented(text)] if found else []
    return [(m.start(2), m.group(2)) for m in found if not any(start <= m.start() < end for start, end in spans)]


def _indented_again(original: str, body: str, new: str, margin: str) -> str:
    """``new``, the rewrite of ``body`` (``original`` dedented), indented again; its lines that
    did not change as ``original`` has them (a blank line keeps its spaces)."""
    kept, old, lines = original.splitlines(keepends=True), body.splitlines(keepends=True), new.splitlines(keepends=True)
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, lines, autojunk=False).get_opcodes():
        out += kept[i1:i2] if tag == "equal" else [indent("".join(lines[j1:j2]), margin)]
    return "".join(out)


# The trigger of a block's kind, when not its own: IPython lines in Python are commands.
_TRIGGER = {"python": "notebook", "pycon": "notebook", "json": "shell"}

# How code is rewritten: a block's text -> its outcome.
Program = Callable[[str], Outcome]


def _program(kind: str, body: str, options: Options, context: str = "", kept: tuple[str, ...] = ()) -> Program:
    """How a block of ``kind`` is rewritten; a Python block with ``context`` (the imports of
    other blocks it uses) and ``kept`` (the names of its imports other blocks use)."""
    if kind == "shell" and _PROMPT.search(body):
        return lambda text: _rewrite_session(text, options)
    if kind == "python":
        return lambda text: _python_block(text, options, context, kept)
    if kind == "pycon":
        return lambda text: _python_session(text, options, context, kept)
    module = rewriters.module_for(kind)
    return lambda text: _checked(module.check, kind, text, module.rewrite(text, options))


def _python_block(body: str, options: Options, context: str, kept: tuple[str, ...]) -> Outcome:
    """A block of Python (its IPython lines migrated by mixed/magics.py), rewritten as a
    program of its own that has ``context`` run before it and its ``kept`` names used after."""
    cell, outcomes = magics.python_cell(body), None
    if context or kept:
        outcomes = _python().rewrite_together(
            [context, cell.python, "".join(f"{name}\n" for name in kept)],
            options,
            where=lambda own, k, line: (line if k == 1 else 0, None),
        )
    if outcomes is None:
        outcome = rewriters.module_for("python", cell.python).rewrite(cell.python, options)
    else:
        head, outcome, _ = outcomes
        # the imports the rewrite put among the borrowed ones are the block's own; a line of
        # another block (numbered 0 above) is no line of this one's items
        had = context.splitlines(keepends=True)
        added = "".join(line for line in head.text.splitlines(keepends=True) if line not in had)
        outcome = Outcome(added + outcome.text, outcome.changes, [_own_cites(f) for f in outcome.manual])
    return _checked(_python_check, "Python", body, magics.finish(cell, outcome, options))


def _own_cites(finding: Finding) -> Finding:
    return replace(finding, cites=tuple(c for c in finding.cites if c.line))


def _python_check(text: str) -> str | None:
    return _python().check(magics.python_cell(text).python)


_SESSION_PROMPT = re.compile(r"(?:>>>|\.\.\.)(?: |(?=\r?\n|$))")
_OUTPUT = re.compile(r"# xrt2pjrt-output-(\d+)$")


def _python_session(body: str, options: Options, context: str, kept: tuple[str, ...]) -> Outcome:
    """A ``>>>`` session, rewritten as the one program its examples are: its prompts taken
    off, its output lines kept as comment lines in the Python, then put back; a new line gets
    ``>>>`` where a statement starts, ``...`` where it goes on."""
    lines = body.splitlines(keepends=True)
    python = []
    for k, line in enumerate(lines):
        prompt = _SESSION_PROMPT.match(line)
        python.append(line[prompt.end() :] if prompt else f"# xrt2pjrt-output-{k}" + line[len(line.rstrip("\r\n")) :])
    old = "".join(python)
    outcome = _python_block(old, options, context, kept)
    new = without_new_todo_lines(old, outcome.text).splitlines(keepends=True)
    if new == python:
        return Outcome(body, outcome.changes, outcome.manual)
    starts = {node.lineno for node in ast.parse("".join(new)).body}
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, python, new, autojunk=False).get_opcodes():
        if tag == "equal":
            out += lines[i1:i2]
            continue
        for j in range(j1, j2):
            output = _OUTPUT.match(new[j].rstrip("\r\n"))
            out.append(
                lines[int(output.group(1))]
                if output
                else (">>> " if j + 1 in starts else "... ") + new[j]
                if new[j].strip()
                else "..." + new[j]
            )
    return Outcome("".join(out), outcome.changes, outcome.manual)


def _transcript(body: str, options: Options) -> Outcome:
    """A json block: as it is; when it holds no JSON, each XRT-era command in it reported."""
    try:
        json.loads(body)
        return Outcome(body)
    except ValueError:
        pass
    outcome = shell.rewrite(body, options, comments=False)
    return Outcome(body, manual=_with_changes_not_made(outcome, lambda f: f"left as it is (a json block): {f.message}"))


@dataclass(frozen=True)
class _Names:
    """What a Python block imports (name -> the import statement that binds it), and the
    names it uses without binding them."""

    imports: dict[str, str]
    free: frozenset[str]


def _names(body: str) -> _Names | None:
    python = magics.python_cell(body).python
    try:
        tree = ast.parse(python)
    except (SyntaxError, ValueError):
        return None
    imports, bound, used = {}, set(), set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    name = alias.asname or alias.name.split(".")[0]
                    imports[name] = ast.get_source_segment(python, node) + "\n"
                    bound.add(name)
        elif isinstance(node, ast.Name):
            (used if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return _Names(imports, frozenset(used - bound))


def _imports_around(bodies: dict[Block, str]) -> dict[Block, tuple[str, tuple[str, ...]]]:
    """For each Python block: the imports of other blocks that bind names it uses (the
    nearest block above that imports the name, else the nearest below), and the names of
    its own imports that other blocks borrow so."""
    python = [block for block in bodies if block.kind in ("python", "pycon")]
    names = {
        block: _names(_session_python(bodies[block]) if block.kind == "pycon" else bodies[block]) for block in python
    }
    read = [block for block in python if names[block] is not None]
    borrowed: dict[Block, dict[str, Block]] = {}  # block -> name -> the block it borrows the name's import from
    for k, block in enumerate(read):
        others = [*reversed(read[:k]), *read[k + 1 :]]
        borrowed[block] = {
            name: next(o for o in others if name in names[o].imports)
            for name in sorted(names[block].free)
            if any(name in names[o].imports for o in others)
        }
    return {
        block: (
            "".join(dict.fromkeys(names[source].imports[name] for name, source in borrowed[block].items())),
            tuple(
                name
                for name in names[block].imports
                if any(sources.get(name) is block for sources in borrowed.values())
            ),
        )
        for block in read
    }


def _session_python(body: str) -> str:
    """The Python of a ``>>>`` session, for reading its names: prompt lines only."""
    return "".join(line[m.end() :] for line in body.splitlines(keepends=True) if (m := _SESSION_PROMPT.match(line)))


def _leave_decided(body: str, outcome: Outcome, again: Program) -> Outcome:
    """``outcome`` (the rewrite of ``body``) without its new TODO lines, and with each spot
    whose item to decide a next run (``again``) would no longer find as it was: the code is
    rewritten again with an ``ignore`` marker on each such statement, then without the
    markers. Where that cannot be done, or a next run would change the result, the code is
    left as it was and its changes are reported as not made."""
    done = _without_todo_lines(body, outcome)
    if done.text == body or not outcome.manual:
        return done
    hidden = _hidden(outcome, again(done.text))
    if not hidden:
        return done
    kept = _rewrite_keeping(body, _spots(hidden), again)
    if kept is not None:
        then = again(kept.text)
        if not _hidden(outcome, then):  # a next run asks each item again, and keeps each spot
            second = _rewrite_keeping(
                kept.text, _spots(f for f in then.manual if _item(f) in set(map(_item, hidden))), again
            )
            if second is not None and second.text == kept.text and not second.changes:
                return Outcome(kept.text, kept.changes, outcome.manual)
    return Outcome(
        body,
        [],
        _with_changes_not_made(
            outcome,
            lambda f: f"code block left as it was, as it has an item to decide: make this change by hand ({f.message})",
        ),
    )


def _hidden(first: Outcome, then: Outcome) -> list[Finding]:
    """The items ``first`` asks and a next run, ``then``, does not (an item naming a line
    that has moved is the same item)."""
    left, out = [_item(f) for f in then.manual], []
    for f in first.manual:
        if _item(f) in left:
            left.remove(_item(f))
        else:
            out.append(f)
    return out


def _item(f: Finding) -> tuple:
    """What says which item ``f`` is, wherever its lines have moved."""
    return f.rule, f.message, tuple(c.text for c in f.cites)


def _spots(items: Iterable[Finding]) -> dict[int, set[str]]:
    """The lines of ``items`` -> the rules that ask there."""
    spots: dict[int, set[str]] = {}
    for f in items:
        spots.setdefault(f.line, set()).add(f.rule)
    return spots


def _keep(rules: set[str]) -> str:
    """The marker that keeps ``rules`` off the statement it is on (suppress.py), and no other
    rule: a change another rule makes there is made, or said to be left."""
    return f"  # xrt2pjrt: ignore[{', '.join(sorted(rules))}]"


def _rewrite_keeping(body: str, spots: dict[int, set[str]], again: Program) -> Outcome | None:
    """The rewrite of ``body`` (by ``again``) with the statements at the lines of ``spots``
    kept from the rules that ask there, new TODO lines left out; None when a marker cannot be
    put there or taken back."""
    lines, markers = body.splitlines(keepends=True), set()
    for line, rules in sorted(spots.items()):
        last = line
        while last < len(lines) and lines[last - 1].rstrip("\r\n").endswith("\\"):
            last += 1  # a marker on a command's last line covers its continued lines
        if last > len(lines) or "# xrt2pjrt: ignore" in lines[last - 1]:
            return None  # (a line reads its first marker only: a second one would keep nothing)
        if re.search("\"\"\"|'''|<<", lines[last - 1]):
            return None  # (in a string or a here-document, a marker would be text)
        text, keep = lines[last - 1].rstrip("\r\n"), _keep(rules)
        lines[last - 1] = text + keep + lines[last - 1][len(text) :]
        markers.add(keep)
    marked = "".join(lines)
    try:
        outcome = _without_todo_lines(marked, again(marked))
    except SourceError:
        return None
    if any(outcome.text.count(keep) != marked.count(keep) for keep in markers):
        return None
    for keep in markers:
        outcome.text = outcome.text.replace(keep, "")
    return outcome


def _without_todo_lines(before: str, outcome: Outcome) -> Outcome:
    """``outcome`` (the rewrite of ``before``) without the TODO lines the rewrite added."""
    return Outcome(without_new_todo_lines(before, outcome.text), outcome.changes, outcome.manual)


def _checked(check: Callable[[str], str | None], kind: str, body: str, outcome: Outcome) -> Outcome:
    """``outcome``, the rewrite of ``body``; ``body`` as it was, reported, when the rewrite
    fails ``check``, its kind's own."""
    if outcome.text == body:
        return outcome
    problem = check(outcome.text)
    if problem is None:
        return outcome
    written = check(body)  # (a placeholder such as <ip-address> makes the block invalid as written)
    why = f"not valid {kind} as written" if written else f"its rewrite would not be valid {kind}"
    problem = re.sub(r"^\S*bash: line \d+: ", "", (written or problem).splitlines()[0])  # (bash -n's own words)
    return Outcome(
        body,
        [],
        _with_changes_not_made(outcome, lambda f: f"code block left as it was ({why}: {problem}): {f.message}"),
    )


def _with_changes_not_made(outcome: Outcome, said: Callable[[Finding], str]) -> list[Finding]:
    """The items of ``outcome``, and its changes as items saying ``said(change)``, not made. A
    change on a line that an item of its rule already names is said in that item's long
    text: one spot, one item (a TPU node's XRT_TPU_CONFIG is one decision, not two)."""
    items = list(outcome.manual)
    for change in outcome.changes:
        at = next(
            (
                k
                for k, item in enumerate(items)
                if (item.rule, item.line, item.cell) == (change.rule, change.line, change.cell)
            ),
            None,
        )
        if at is None:
            items.append(change.to_decide(said(change)))
        else:
            items[at] = replace(items[at], detail=f"{items[at].detail or items[at].message}; {said(change)}")
    return items


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
        command = lines[i][prompt.end() :] + "".join(lines[i + 1 : end])
        done = _checked(shell.check, "shell", command, shell.rewrite(command, options, comments=False))
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
    literal = [b for b in _rst(text) if not _overlaps(b, fenced)]
    indented = [b for b in _indented(text) if not _overlaps(b, fenced + literal)]
    found = [_decided(text, b) if b.kind == CONTENT else b for b in fenced + literal + indented]
    return sorted((b for b in found if b.kind), key=lambda b: b.start)


def _overlaps(block: Block, others: list[Block]) -> bool:
    return any(block.start < o.end and o.start < block.end for o in others)


_PYTHON_NODES = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Call)


def _decided(text: str, block: Block) -> Block:
    """A block whose language its text decides: a ``>>>`` session ("pycon"); Python when
    tagged so, or when it parses as Python with its IPython lines hidden and holds them, an
    import, a definition or a call (``XRT_TPU_CONFIG="..."`` and ``ls`` parse too); else shell."""
    body = dedent(text[block.start : block.end], block.indent)
    if body.lstrip().startswith(">>>"):
        return replace(block, kind="pycon")
    if block.tag in _PYTHON_TAGS:
        return replace(block, kind="python")
    cell = magics.python_cell(body)
    try:
        tree = ast.parse(cell.python)
    except (SyntaxError, ValueError):
        return replace(block, kind="shell")
    python = cell.magics or any(isinstance(node, _PYTHON_NODES) for node in ast.walk(tree))
    return replace(block, kind="python" if python else "shell")


def _fenced(text: str) -> list[Block]:
    out, pos = [], 0
    while True:
        m = _FENCE.search(text, pos)
        if not m:
            return out
        margin, fence, lang = m.group(1), m.group(2), m.group(3).lower().strip("{}.")
        start = min(m.end() + 1, len(text))
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.M).search(text, start)
        end = close.start() if close else len(text)
        out.append(Block(start, end, margin, LANGUAGES.get(lang, ""), lang))
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
            lang = (m.group(2) or "").lower()
            out.append(Block(start, end, margin, LANGUAGES.get(lang, ""), lang))
    return out


# Where an indented block may start in Markdown: after a blank line, a heading or a rule
# (not after a paragraph's line, which it would continue).
_BREAK = re.compile(r"[ ]{0,3}(?:#{1,6}(?:[ \t]|$)|(?:[-*_][ \t]*){3,}$)|[ \t]*$")
_LIST_ITEM = re.compile(r"[ ]{0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
_INDENTED = re.compile(r"(?: {4}|\t)")


def _indented(text: str) -> list[Block]:
    """Markdown's indented code blocks: lines indented four spaces or a tab, after a blank
    line or a heading, that do not go on with a list item (``1. Step`` then an indented
    paragraph) or a reST directive's or literal's text, and are not all list items (a list
    indented by four spaces is rendered as code, but written as a list)."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    out, i = [], 0
    while i < len(lines):
        if not (
            _INDENTED.match(lines[i])
            and lines[i].strip()
            and (i == 0 or _BREAK.match(lines[i - 1].rstrip("\r\n")))
            and not _goes_on(lines, i)
        ):
            i += 1
            continue
        last = j = i
        while j < len(lines) and (not lines[j].strip() or _INDENTED.match(lines[j])):
            last = j if lines[j].strip() else last
            j += 1
        body = [line for line in lines[i : last + 1] if line.strip()]
        margin = min((re.match(r"[ \t]*", line).group() for line in body), key=len)
        if not all(_LIST_ITEM.match(line[len(margin) :]) for line in body):  # (a list indented too far)
            out.append(Block(starts[i], starts[last + 1], margin, CONTENT))
        i = last + 1
    return out


def _goes_on(lines: list[str], i: int) -> bool:
    """Whether the indented line ``i`` goes on with what is above it: a list item, a reST
    directive or ``::`` paragraph (the nearest line above that is not indented tells)."""
    for line in reversed(lines[:i]):
        text = line.rstrip("\r\n")
        if not text.strip() or (line[:1] in " \t" and not _LIST_ITEM.match(text)):
            continue
        return bool(_LIST_ITEM.match(text) or text.startswith(".. ") or text.endswith("::"))
    return False


def _lines_from(text: str, pos: int):
    """The lines of ``text`` from ``pos`` on, with their newlines, one at a time (a copy of the
    rest of the text for each directive was quadratic: 62 s for 1.3 MB of 20,000 `::` blocks)."""
    while pos < len(text):
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end + 1
        yield text[pos:end]
        pos = end
