"""The notebook rewriter: code cells through the Python codemod, ``!`` lines and ``%%bash``
cells through the shell rewriter, ``%env`` through the environment rules, Markdown cells
through the Markdown rewriter.

A cell's source is joined before it is rewritten, so a call split across two JSON source
strings is one call. The Python of all code cells is rewritten as one module, as the
kernel runs it: an import in one cell binds the names a later cell uses, and is stale only
when no cell uses it. Only the ``source`` values of changed cells are re-written, in the
layout the file uses (one string per line, indentation, ASCII escapes); metadata, outputs,
ids and every other byte stay as they were, and an unchanged notebook is byte-identical.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

from xrt2pjrt import files, rewriters
from xrt2pjrt.registry import Options
from xrt2pjrt.rewriters import Outcome, SourceError
from xrt2pjrt.python import quiet
from xrt2pjrt.text import environment, markdown, shell
from xrt2pjrt.report import Finding
from xrt2pjrt.text.edits import Edit, Recorder, comment_above, merge_into, shifted, todo_line
from xrt2pjrt.text.environment import EnvSetting

def _python():
    """The Python rewriter, imported when a file needs it (it brings libcst)."""
    return rewriters.module_for("python")


SHELL_CELLS = re.compile(r"%%(bash|sh|script[ \t]+(ba)?sh)\b")
# cell magics that run the rest of the cell as Python in the notebook's namespace
KERNEL_CELL_MAGICS = re.compile(r"%%(time|timeit|capture|prun|debug)\b")
WRITEFILE = re.compile(r"%%writefile(?:[ \t]+-a)?[ \t]+(\S+)[ \t]*$")
# `%env NAME=value`, `%env NAME value`, `%set_env NAME=value` (Colab)
ENV_MAGIC = re.compile(r"%(?:set_)?env[ \t]+([A-Za-z_][A-Za-z0-9_]*)(?:[ \t]*=[ \t]*|[ \t]+)(.*)")
_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\r\n]*")
_WORD = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")
CELL_RULE = "notebook-cell"  # manual items about a cell as a whole (it does not parse)


@dataclass(frozen=True)
class SourceSpan:
    start: int
    end: int
    cell_type: str
    source: str


def rewrite(text: str, options: Options) -> Outcome:
    try:
        cells = source_spans(text)
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise SourceError(f"not a notebook: {exc}", 1) from None
    options = options.in_file(text)
    rec = Recorder(text, options)
    ascii_only = "\\u" in text and text.isascii()
    python = _kernel_cells(cells)
    unparsed = [index for index, cell in python.items() if _python().check(cell.python) is not None]
    parsed = {index: cell for index, cell in python.items() if index not in unparsed}
    borrowed = _borrowed(parsed, {index: python[index] for index in unparsed})
    together = _rewrite_together(parsed, options, sorted(set().union(*borrowed.values())))
    for index, (cell, first_line) in enumerate(zip(cells, _first_lines(text, cells))):
        lines = first_line - 1
        if index in together:
            outcome = together[index]
        elif not rewriters.trigger_for("notebook").search(cell.source):
            if borrowed.get(index):
                # (the other cells are migrated: a name of a function 2.x removed is imported no more)
                rec.ask(CELL_RULE, cell.start, f"this cell is not Python the codemod can parse, and it uses "
                        f"{', '.join(sorted(borrowed[index]))}, which another cell imported from torch_xla: "
                        "migrate its torch_xla code by hand as the other cells' was (names of functions torch_xla "
                        "2.x removed are imported no more)")
            continue
        elif cell.cell_type == "code":
            outcome = _code_cell(cell.source, options)
        elif cell.cell_type == "markdown":
            outcome = markdown.rewrite(cell.source, options)
        else:
            continue
        if outcome is None:
            rec.ask(CELL_RULE, cell.start, "this cell is not Python the codemod can parse; "
                    "it mentions XRT or torch_xla: migrate it by hand")
            continue
        merge_into(rec, outcome, lines)
        if outcome.text != cell.source:
            rec.edits.append(Edit(cell.start, cell.end, _render(outcome.text, text[cell.start:cell.end], ascii_only, text)))
    return rec.outcome()


def parsed_size(text: str) -> int:
    """The characters of code a rewrite parses (see rewriters): the code cells' sources and the
    Markdown cells' code blocks. Outputs, attachments and metadata are read as JSON only."""
    try:
        cells = source_spans(text)
    except (ValueError, KeyError, TypeError, IndexError):
        return 0  # not a notebook: the rewrite says so
    return sum(len(c.source) if c.cell_type == "code" else markdown.parsed_size(c.source)
               for c in cells if c.cell_type in ("code", "markdown"))


def check(text: str) -> str | None:
    try:
        source_spans(text)
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        return f"the notebook JSON does not load: {exc}"
    return None


# --- the JSON around the sources ---------------------------------------------------------------


def source_spans(text: str) -> list[SourceSpan]:
    """Where each cell's ``source`` value is in the notebook's text. ValueError for a text
    that is not one JSON document (trailing text included) or not an nbformat 4 notebook."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
    if isinstance(document, dict) and "cells" not in document and (
            "worksheets" in document or document.get("nbformat", 4) < 4):
        raise ValueError(f"nbformat {document.get('nbformat', 3)} (cells in worksheets); this tool reads "
                         "nbformat 4: convert it with `jupyter nbconvert --to notebook --nbformat 4`")
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        raise ValueError("no 'cells' list at the top level")
    out = []
    members = {k: (s, e) for k, s, e in _children(text, _WS.match(text).end())}
    cells_start, _ = members["cells"]
    for _, cell_start, _ in _children(text, cells_start):
        fields = {k: (s, e) for k, s, e in _children(text, cell_start)}
        start, end = fields["source"]
        source = json.loads(text[start:end])
        cell_type = json.loads(text[slice(*fields["cell_type"])])
        out.append(SourceSpan(start, end, cell_type, "".join(source) if isinstance(source, list) else source))
    return out


def _children(text: str, i: int):
    """(key, value start, value end) of each member of the JSON object at ``i``, or
    (None, start, end) of each element of the JSON array at ``i``."""
    opening = text[i]
    if opening not in "{[":
        raise ValueError(f"expected an object or an array at offset {i}")
    closing = "}" if opening == "{" else "]"
    i = _WS.match(text, i + 1).end()
    while text[i] != closing:
        key = None
        if opening == "{":
            key, i = _DECODER.raw_decode(text, i)
            i = _WS.match(text, i).end()
            if text[i] != ":":
                raise ValueError(f"expected ':' at offset {i}")
            i = _WS.match(text, i + 1).end()
        _, end = _DECODER.raw_decode(text, i)
        yield key, i, end
        i = _WS.match(text, end).end()
        if text[i] == ",":
            i = _WS.match(text, i + 1).end()


def _first_lines(text: str, cells: list[SourceSpan]) -> list[int]:
    """The file line of each cell's first source line (nbformat puts one string per line),
    counted in one pass over the file (a count from the top for each cell was quadratic:
    24 s of 27 for 500 cells among 50 MB of outputs)."""
    out, line, counted = [], 1, 0
    for cell in cells:
        first = text[cell.start:cell.end]
        offset = cell.start + (len(first) - len(first[1:].lstrip()) if first.startswith("[") else 0)
        line += text.count("\n", counted, offset)
        counted = offset
        out.append(line)
    return out


def _render(source: str, original: str, ascii_only: bool, whole: str) -> str:
    """``source`` as a JSON value laid out like ``original`` (a string, or a list of lines) in
    the notebook ``whole``."""
    if not original.startswith("["):
        return json.dumps(source, ensure_ascii=ascii_only)
    items = [json.dumps(line, ensure_ascii=ascii_only) for line in source.splitlines(keepends=True)]
    if "\n" not in original or not items:  # on one line, its items apart as the file has them
        between = re.search(r'"([ \t]*,[ \t]*)"', original) or re.search(r'(,[ \t]*)"', whole)
        return "[" + (between.group(1) if between else ", ").join(items) + "]"
    margin = re.match(r"\[\s*?\n([ \t]*)", original)
    item_margin = margin.group(1) if margin else " "
    close_margin = re.search(r"\n([ \t]*)\]$", original)
    return "[\n" + ",\n".join(item_margin + i for i in items) + "\n" + (close_margin.group(1) if close_margin else "") + "]"


# --- the code cells --------------------------------------------------------------------------


@dataclass(frozen=True)
class PythonCell:
    """A code cell of Python, its ``!``/``%`` lines hidden (see ``_hide_magics``)."""

    prefix: str  # the cell magic line the Python follows (``%%time``), or ""
    python: str
    magics: list[tuple[str, int]]


def _python_cell(source: str) -> PythonCell | None:
    """The cell's Python; None for a cell that is a script (``%%bash``, ``%%writefile``)."""
    head, newline, rest = source.partition("\n")
    if SHELL_CELLS.match(head) or WRITEFILE.match(head):
        return None
    if head.startswith("%%"):  # another cell magic (%%time, %%capture): the rest is Python
        return PythonCell(head + newline, *_hide_magics(rest))
    return PythonCell("", *_hide_magics(source))


def _kernel_cells(cells: list[SourceSpan]) -> dict[int, PythonCell]:
    """The code cells (by index) whose Python the kernel runs in the notebook's namespace:
    plain cells and those of a cell magic that runs its Python there (not ``%%html``)."""
    python = {i: _python_cell(c.source) for i, c in enumerate(cells) if c.cell_type == "code"}
    return {i: cell for i, cell in python.items()
            if cell is not None and (not cell.prefix or KERNEL_CELL_MAGICS.match(cell.prefix))}


def _rewrite_together(python: dict[int, PythonCell], options: Options, kept: list[str]) -> dict[int, Outcome]:
    """The outcome of each of the ``python`` cells, their code rewritten as the one module
    they are in the kernel. Empty when that cannot be done (the cells are then rewritten one
    by one). The names ``kept`` are used by cells that do not parse: a last piece, thrown
    away after, uses each of them, so that no import of them is dropped as stale."""
    numbers = [index + 1 for index in python]  # as Jupyter counts cells
    uses = "".join(f"{name}\n" for name in kept)
    outcomes = _python().rewrite_together([*(cell.python for cell in python.values()), *[uses] * bool(kept)],
                                        options, where=lambda own, k, line: (line, numbers[k]))
    if outcomes is None:
        return {}
    return {index: _finish(cell, outcome, options) for (index, cell), outcome in zip(python.items(), outcomes)}


def _borrowed(parsed: dict[int, PythonCell], unparsed: dict[int, PythonCell]) -> dict[int, set[str]]:
    """The names each of the ``unparsed`` cells uses that an import of torch_xla in one of
    the ``parsed`` cells binds (as far as a search for the words tells)."""
    if not unparsed:
        return {}  # (most notebooks: no cell is parsed again for its imports)
    imported = {name for cell in parsed.values() for name, modules in quiet.import_names(ast.parse(cell.python)).items()
                if any(module.split(".")[0] == "torch_xla" for module in modules)}
    return {index: imported & set(_WORD.findall(cell.python)) for index, cell in unparsed.items()}


def _code_cell(source: str, options: Options) -> Outcome | None:
    """The rewrite of a code cell on its own; None when it is not Python the codemod can parse."""
    head, _, rest = source.partition("\n")
    cell_shell = SHELL_CELLS.match(head)
    kind = "shell" if cell_shell else _written_kind(head)
    if kind:  # the rest of the cell is a script of that kind
        try:
            if cell_shell and cell_shell.group(1) != "bash" and not cell_shell.group(2):  # %%sh: IPython runs sh
                outcome = shell.rewrite(rest, options, posix_sh=True)
            else:
                outcome = rewriters.module_for(kind).rewrite(rest, options)
        except SourceError:
            return None
        return Outcome(head + "\n" + outcome.text, *_shift(outcome, 1))
    cell = _python_cell(source)
    if cell is None:
        return Outcome(source)  # %%writefile of a file of a kind no rewriter reads
    try:
        outcome = _python().rewrite(cell.python, options) if rewriters.trigger_for("python").search(cell.python) else Outcome(cell.python)
    except SourceError:
        return None
    return _finish(cell, outcome, options)


def _finish(cell: PythonCell, outcome: Outcome, options: Options) -> Outcome:
    """The cell from the rewrite of its Python: its magics back, through their rules."""
    rec = Recorder(outcome.text, options)
    rec.changes, rec.manual = list(outcome.changes), list(outcome.manual)
    text = outcome.text
    for m in _PLACEHOLDER.finditer(text):
        magic_line, line = cell.magics[int(m.group(2))]
        end = m.end()
        for _ in range(magic_line.count("\n")):  # its continuation placeholders go with it
            end = _line_end(text, end + 1)
        asked = len(rec.manual)
        new = _magic(magic_line, options, rec, line)
        if new:
            rec.edits.append(Edit(m.start(), end, _todo_lines(text, m, rec.manual[asked:]) + m.group(1) + new))
        else:  # the magic is removed, with its line
            rec.edits.append(Edit(m.start(), min(end + 1, len(text)), ""))
    done = rec.outcome()
    if cell.prefix:
        return Outcome(cell.prefix + done.text, *_shift(done, 1))
    return done


def _todo_lines(text: str, placeholder: re.Match, asked: list[Finding]) -> str:
    """The TODO lines of the items a magic's line is ``asked``, for above it (a comment line
    of the cell's Python, as the Python rules write theirs), but those already there."""
    lines = text.splitlines(keepends=True)
    first = text.count("\n", 0, placeholder.start()) + 1
    todo = (todo_line(f.message, f.rule, placeholder.group(1)) for f in asked)
    return "".join(dict.fromkeys(t for t in todo if not comment_above(lines, first, t)))


_INSTALL_MAGIC = re.compile(r"%(?:pip|conda)\b")  # `%pip install …`: a pip command line
_PLACEHOLDER = re.compile(r"^([ \t]*)pass  # xrt2pjrt-magic-(\d+)$", re.M)


def _line_end(text: str, pos: int) -> int:
    end = text.find("\n", pos)
    return len(text) if end < 0 else end


def _written_kind(head: str) -> str | None:
    """The file kind a ``%%writefile NAME`` cell writes (``run.sh``, ``Dockerfile``, ...)."""
    m = WRITEFILE.match(head)
    path = Path(m.group(1)) if m else None
    if path is None or not (path.suffix or path.name.startswith("Dockerfile")):
        return None  # kind_of would read an extensionless file's shebang from disk
    return files.kind_of(path)


# Other lines only IPython reads: `files = !ls`, `t = %timeit -o f()`, `obj?`, `obj??`.
_IPYTHON_ONLY = re.compile(r"[\w.]+[ \t]*=[ \t]*[!%]|[\w.]+\?\??[ \t]*$")


def _hide_magics(source: str) -> tuple[str, list[tuple[str, int]]]:
    """The cell with each `!`/`%` line or other line only IPython reads (and its `\\`
    continuations) replaced by a placeholder statement of the same indentation, and the
    lines it replaced, with their cell line."""
    out: list[str] = []
    magics: list[tuple[str, int]] = []
    lines = source.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip(" \t")
        if not (stripped.startswith(("!", "%")) or _IPYTHON_ONLY.match(stripped)):
            out.append(line)
            i += 1
            continue
        margin = line[:len(line) - len(stripped)]
        j = i
        while lines[j].rstrip("\n").endswith("\\") and j + 1 < len(lines):
            j += 1
        newline = "\n" if lines[j].endswith("\n") else ""
        magics.append(("".join(lines[i:j + 1])[len(margin):].rstrip("\n"), i + 1))
        out.append(f"{margin}pass  # xrt2pjrt-magic-{len(magics) - 1}{newline if j == i else chr(10)}")
        out += [f"{margin}# xrt2pjrt-magic-continued{chr(10) if k < j or newline else ''}" for k in range(i + 1, j + 1)]
        i = j + 1
    return "".join(out), magics


# A `!` line that only exports: its shell ends with the line, and the variables with it.
_ONLY_EXPORTS = re.compile(r"[ \t]*export(?:[ \t]+\w+=(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s;&|<>()`$\"']*))+[ \t]*")


_QUOTES = "\"'"


def _dead_export(settings: list[tuple[str, str]]) -> str:
    names = ", ".join(name for name, _ in settings)
    magics = "; ".join(f"%env {name}={value.strip(_QUOTES)}" for name, value in settings)
    return (f"`!export` sets {names} in a shell of its own, which ends with this line: neither the kernel "
            f"(torch_xla) nor a later `!` line sees it, nor did they the XRT-era variable; where it is meant for "
            f"torch_xla in this notebook, write {magics} (or set os.environ before torch_xla is imported)")


def _magic(line: str, options: Options, rec: Recorder, cell_line: int) -> str:
    """A `!` or `%` line after the shell and environment rules; "" when it is removed."""
    if line.startswith("!") or _INSTALL_MAGIC.match(line):
        outcome = shell.rewrite(line[1:], options, posix_sh=True, comments=False)  # IPython runs it with /bin/sh
        merge_into(rec, outcome, cell_line - 1)
        if line.startswith("!") and outcome.changes and not outcome.manual and (
                only := _ONLY_EXPORTS.fullmatch(outcome.text)):  # (an item there already says more)
            settings = re.findall(r"(\w+)=(\"[^\"\n]*\"|'[^'\n]*'|\S*)", only.group(0))
            rec.ask_at_line(outcome.changes[0].rule, cell_line, _dead_export(settings))
        return line[0] + outcome.text
    m = ENV_MAGIC.match(line)
    if not m:
        return line
    magic = Recorder(line, options)
    start, end = m.start(1), m.end(2)
    removed = [Edit(0, len(line), "")]
    rename = environment.replacing(start, end, with_value=True)
    environment.apply([EnvSetting(m.group(1), start, rename, removed, value=m.group(2))], magic, lambda offset: False)
    done = magic.outcome()
    merge_into(rec, done, cell_line - 1)
    return done.text


def _shift(outcome: Outcome, lines: int):
    return shifted(outcome.changes, lines), shifted(outcome.manual, lines)
