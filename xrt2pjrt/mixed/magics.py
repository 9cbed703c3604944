"""IPython's magics: what the text each one runs is, and that text migrated by its rewriter.

One mechanism for every place magics are kept: a notebook's cells, a document's Python
blocks, and a notebook exported to .py (nbconvert's ``get_ipython().system('…')`` calls,
jupytext's ``# !pip …`` comments; mixed/ipython.py finds them). Each is handed here as the
IPython text it stands for (``!pip install …``, ``%env X=1``, ``%%writefile train.py\\n…``):

- a line magic: ``!cmd`` (``x = !cmd``, ``%sx``, ``%system``) is a command line /bin/sh
  runs; ``%pip``/``%conda`` a pip command line; ``%env NAME=value`` a setting;
- a cell magic: ``%%bash``, ``%%script bash`` make the rest of the cell a bash script,
  ``%%sh`` a script /bin/sh runs; ``%%writefile NAME`` a file of NAME's kind (files.kind_of);
  ``%%python`` a program of its own; ``%%time``, ``%%capture`` and the like Python the kernel
  runs in the notebook's namespace (KERNEL: the caller rewrites it with the other cells).

A script is a program of its own: an import the rewrite needs goes into it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from xrt2pjrt import files, rewriters
from xrt2pjrt.registry import Options
from xrt2pjrt.report import Finding
from xrt2pjrt.rewriters import Outcome, SourceError
from xrt2pjrt.text import environment, shell
from xrt2pjrt.recorder import Edit, Recorder, comment_above, merge_into, shifted, todo_line
from xrt2pjrt.width import DEFAULT
from xrt2pjrt.text.environment import EnvSetting
from xrt2pjrt.text.words import EXPANSION

SHELL_CELLS = re.compile(r"%%(bash|sh|script[ \t]+(ba)?sh)\b")
# cell magics that run the rest of the cell as Python in the notebook's namespace
KERNEL_CELL_MAGICS = re.compile(r"%%(time|timeit|capture|prun|debug)\b")
# ... and those that run it as a Python program of its own, in a new process
PYTHON_CELLS = re.compile(r"%%(python[23]?|script[ \t]+python[23]?)[ \t]*$")
WRITEFILE = re.compile(r"%%(?:writefile|file)(?:[ \t]+-a)?[ \t]+(\S+)[ \t]*$")
# `%env NAME=value`, `%env NAME value`, `%set_env NAME=value` (Colab)
ENV_MAGIC = re.compile(r"%(?:set_)?env[ \t]+([A-Za-z_][A-Za-z0-9_]*)(?:[ \t]*=[ \t]*|[ \t]+)(.*)")
KERNEL = "kernel"  # what a cell of the kernel's Python holds (body_of)
UNREAD = "notebook-cell"  # the rule of items about notebook code as a whole (it cannot be read)


def body_of(head: str) -> str | None:
    """What the lines after a cell magic ``head`` (its first line) are: KERNEL (Python the
    kernel runs), "sh" (a script /bin/sh runs), the file kind of a program of its own
    ("shell" for bash, "python", "yaml", ...), or None (``%%html``; a file of no known kind)."""
    cell_shell = SHELL_CELLS.match(head)
    if cell_shell:
        return "shell" if cell_shell.group(1) == "bash" or cell_shell.group(2) else "sh"
    if WRITEFILE.match(head):
        return _written_kind(head)
    if PYTHON_CELLS.match(head):
        return "python"
    return KERNEL if KERNEL_CELL_MAGICS.match(head) else None


def _written_kind(head: str) -> str | None:
    """The file kind a ``%%writefile NAME`` cell writes (``run.sh``, ``Dockerfile``, ...)."""
    path = Path(WRITEFILE.match(head).group(1))
    if not (path.suffix or path.name.startswith("Dockerfile")):
        return None  # kind_of would read an extensionless file's shebang from disk
    return files.kind_of(path)


def cell(source: str, options: Options) -> Outcome | None:
    """The rewrite of a code cell on its own (its IPython text); None when it is not Python
    the codemod can parse."""
    head, _, rest = source.partition("\n")
    kind = body_of(head) if head.startswith("%%") else KERNEL
    if kind not in (KERNEL, None):  # the rest of the cell is a script of that kind
        try:
            if kind == "sh":
                outcome = shell.rewrite(rest, options, posix_sh=True)
            else:
                outcome = rewriters.module_for(kind, rest).rewrite(rest, options)
        except SourceError:
            return None
        return Outcome(head + "\n" + outcome.text, *_shift(outcome, 1))
    if head.startswith("%%") and WRITEFILE.match(head):
        return Outcome(source)  # %%writefile of a file of a kind no rewriter reads
    python = python_cell(source)
    try:
        outcome = (
            rewriters.module_for("python", python.python).rewrite(python.python, options)
            if rewriters.trigger_for("python").search(python.python)
            else Outcome(python.python)
        )
    except SourceError:
        return None
    return finish(python, outcome, options)


@dataclass(frozen=True)
class PythonCell:
    """A cell of Python, its ``!``/``%`` lines hidden (see ``_hide_magics``)."""

    prefix: str  # the cell magic line the Python follows (``%%time``), or ""
    python: str
    magics: list[tuple[str, int]]


def python_cell(source: str) -> PythonCell:
    """A cell's Python (after its cell magic line, if any), its magic lines hidden."""
    head, newline, rest = source.partition("\n")
    if head.startswith("%%"):  # a cell magic whose rest is Python (%%time, %%capture)
        return PythonCell(head + newline, *_hide_magics(rest))
    return PythonCell("", *_hide_magics(source))


def finish(cell: PythonCell, outcome: Outcome, options: Options) -> Outcome:
    """The cell from the rewrite of its Python: its magics back, through their rules."""
    rec = Recorder(outcome.text, options)
    rec.changes, rec.manual = list(outcome.changes), list(outcome.manual)
    text = outcome.text
    variables = {m.group(1): m.group(3) for m in _STRING_VARIABLE.finditer(text)}
    for m in _PLACEHOLDER.finditer(text):
        magic_line, line = cell.magics[int(m.group(2))]
        end = m.end()
        for _ in range(magic_line.count("\n")):  # its continuation placeholders go with it
            end = _line_end(text, end + 1)
        asked = len(rec.manual)
        new = line_magic(magic_line, options, rec, line)
        if len(rec.manual) == asked and variables and not any(f.rule.startswith("install-") for f in rec.manual):
            _ask_expanded(magic_line, variables, options, rec, line)
        if new:
            rec.edits.append(
                Edit(
                    m.start(),
                    end,
                    _todo_lines(text, m, rec.manual[asked:], options.width or DEFAULT) + m.group(1) + new,
                )
            )
        else:  # the magic is removed, with its line
            rec.edits.append(Edit(m.start(), min(end + 1, len(text)), ""))
    done = rec.outcome()
    if cell.prefix:
        return Outcome(cell.prefix + done.text, *_shift(done, 1))
    return done


# A cell's string variable (``DIST_BUCKET = "gs://tpu-pytorch/wheels"``), and a `!` line's
# expansion of one: IPython puts the kernel's variables into the command line.
_STRING_VARIABLE = re.compile(r"""^([A-Za-z_]\w*)[ \t]*=[ \t]*(["'])([^"'\n]*)\2[ \t]*$""", re.M)


def _ask_expanded(magic_line: str, variables: dict[str, str], options: Options, rec: Recorder, line: int) -> None:
    """The install items of a `!` line as IPython runs it, its ``$NAME`` expansions of the cell's
    string variables put in (``!gsutil cp "$DIST_BUCKET/$TORCH_XLA_WHEEL" .``): the first of a
    cell only, as one decision answers for its install lines."""
    expanded = EXPANSION.sub(lambda m: variables.get(m.group(1), m.group(0)), magic_line)
    if expanded == magic_line:
        return
    scratch = Recorder(expanded, options)
    line_magic(expanded, options, scratch, line)
    rec.manual += [f for f in scratch.manual if f.rule.startswith("install-")][:1]


def _todo_lines(text: str, placeholder: re.Match, asked: list[Finding], width: int) -> str:
    """The TODO lines of the items a magic's line is ``asked``, for above it (a comment line
    of the cell's Python, as the Python rules write theirs), but those already there."""
    lines = text.splitlines(keepends=True)
    first = text.count("\n", 0, placeholder.start()) + 1
    todo = (todo_line(f.message, f.rule, placeholder.group(1), width) for f in asked)
    return "".join(dict.fromkeys(t for t in todo if not comment_above(lines, first, t)))


_PLACEHOLDER = re.compile(r"^([ \t]*)pass  # xrt2pjrt-magic-(\d+)$", re.M)


def _line_end(text: str, pos: int) -> int:
    end = text.find("\n", pos)
    return len(text) if end < 0 else end


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
        margin = line[: len(line) - len(stripped)]
        j = i
        while lines[j].rstrip("\n").endswith("\\") and j + 1 < len(lines):
            j += 1
        newline = "\n" if lines[j].endswith("\n") else ""
        magics.append(("".join(lines[i : j + 1])[len(margin) :].rstrip("\n"), i + 1))
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
    return (
        f"`!export` sets {names} in a shell of its own, which ends with this line: neither the kernel "
        f"(torch_xla) nor a later `!` line sees it, nor did they the XRT-era variable; where it is meant for "
        f"torch_xla in this notebook, write {magics} (or set os.environ before torch_xla is imported)"
    )


# What runs the rest of a line magic as a command line: `!`, `x = !`, `%sx`, `%system`, and
# `%pip`/`%conda` (a pip command line).
_COMMAND = re.compile(r"(?:[\w.]+[ \t]*=[ \t]*)?(?:!!?|%(?:sx|system|sh)[ \t]+)|(?=%(?:pip|conda)\b)%")


def line_magic(line: str, options: Options, rec: Recorder, cell_line: int) -> str:
    """A line magic (``!cmd``, ``%env X=1``, with its continuation lines) after the shell and
    environment rules, its findings recorded in ``rec`` at ``cell_line``; "" when it is removed."""
    command = _COMMAND.match(line)
    if command:
        start = command.end()
        outcome = shell.rewrite(line[start:], options, posix_sh=True, comments=False)  # IPython runs it with /bin/sh
        merge_into(rec, outcome, cell_line - 1)
        if (
            line.startswith("!")
            and outcome.changes
            and not outcome.manual
            and (only := _ONLY_EXPORTS.fullmatch(outcome.text))
        ):  # (an item there already says more)
            settings = re.findall(r"(\w+)=(\"[^\"\n]*\"|'[^'\n]*'|\S*)", only.group(0))
            rec.decide_at_line(outcome.changes[0].rule, cell_line, _dead_export(settings))
        return line[:start] + outcome.text
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


def torch_xla_names(pythons: list[str]) -> set[str]:
    """The names the imports of torch_xla in these cells' Python bind: those a cell that does
    not parse uses (``words``) are borrowed, and a rewrite of the others must keep them."""
    from xrt2pjrt.python.imports import import_names  # (libcst: asked only where a cell does not parse)

    return {
        name
        for python in pythons
        for name, modules in import_names(ast.parse(python)).items()
        if any(module.split(".")[0] == "torch_xla" for module in modules)
    }


def words(text: str) -> set[str]:
    """The words of a text that may be names (a search, for code that does not parse)."""
    return set(_WORD.findall(text))


_WORD = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")


def _shift(outcome: Outcome, lines: int):
    return shifted(outcome.changes, lines), shifted(outcome.manual, lines)
