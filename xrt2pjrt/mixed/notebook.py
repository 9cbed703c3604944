"""The notebook rewriter: code cells through the Python codemod, their magics as
mixed/magics.py reads them (``!`` lines and ``%%bash`` cells through the shell rewriter, ``%env``
through the environment rules, a ``%%writefile`` cell as a program of the kind it writes),
Markdown cells through the Markdown rewriter.

A cell's source is joined before it is rewritten, so a call split across two JSON source
strings is one call. The Python of all code cells is rewritten as one module, as the
kernel runs it: an import in one cell binds the names a later cell uses, and is stale only
when no cell uses it. Only the ``source`` values of changed cells are re-written, in the
layout the file uses (one string per line, indentation, ASCII escapes); metadata, outputs,
ids and every other byte stay as they were, and an unchanged notebook is byte-identical.
"""

from __future__ import annotations

import ast
import bisect
import functools
import json
import re
import textwrap
from dataclasses import dataclass, replace

from xrt2pjrt import rewriters
from xrt2pjrt.registry import Options
from xrt2pjrt.report import Finding
from xrt2pjrt.rewriters import Outcome, SourceError
from xrt2pjrt.mixed import magics, markdown
from xrt2pjrt.recorder import Edit, Recorder, merge_into

# A notebook's accelerator: Colab's "GPU", Kaggle's "gpu" or "nvidiaTeslaT4".
_GPU_RUNTIME = re.compile(r'"accelerator"\s*:\s*"(?:GPU|gpu|nvidia\w*)"')
# What makes a notebook's os.environ reach torch_xla: a cell using it, or a process it starts.
_REACHES_XLA = re.compile(r'torch_xla|xla_dist|subprocess|os\.system|Popen|%run|%%(?:bash|sh|script)|"!|\\n!')


def _python():
    """The Python rewriter, imported when a file needs it (it brings libcst)."""
    return rewriters.module_for("python")


_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\r\n]*")


@dataclass(frozen=True)
class SourceSpan:
    start: int
    end: int
    cell_type: str
    source: str


def rewrite(text: str, options: Options) -> Outcome:
    try:
        cells = source_spans(text)
    except NotJSON as exc:
        raise SourceError(f"not a notebook: {exc}", exc.line, exc.column) from None
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise SourceError(f"not a notebook: {exc}", 1) from None
    options = replace(
        options.in_file(text),
        xla_unreached=not _REACHES_XLA.search(text),
        gpu_runtime=bool(_GPU_RUNTIME.search(text)),
        notebook=True,
    )
    rec = Recorder(text, options)
    ascii_only = "\\u" in text and text.isascii()
    python = _kernel_cells(cells)
    unparsed = [index for index, cell in python.items() if _python().check(cell.python) is not None]
    parsed = {index: cell for index, cell in python.items() if index not in unparsed}
    borrowed = _borrowed(parsed, {index: python[index] for index in unparsed})
    imported = _imported_anywhere(python, unparsed)
    together = _rewrite_together(parsed, options, sorted(set().union(*borrowed.values())))
    _refill_import_cells(together, parsed)
    starts = first_lines(text, cells)
    for index, (cell, first_line) in enumerate(zip(cells, starts)):
        lines = first_line - 1
        if index in together:
            outcome = together[index]
        elif not rewriters.trigger_for("notebook").search(cell.source):
            if borrowed.get(index):
                # (the other cells are migrated: a name of a function 2.x removed is imported no more)
                rec.decide(
                    magics.UNREAD,
                    cell.start,
                    f"this cell is not Python the codemod can parse, and it uses "
                    f"{', '.join(sorted(borrowed[index]))}, which another cell imported from torch_xla: "
                    "migrate its torch_xla code by hand as the other cells' was (names of functions torch_xla "
                    "2.x removed are imported no more)",
                )
            continue
        elif cell.cell_type == "code":
            outcome = magics.cell(cell.source, options)
        elif cell.cell_type == "markdown":
            outcome = markdown.rewrite(cell.source, options)
        else:
            continue
        if outcome is None:
            if not _may_need_migrating(cell.source, options, imported):
                continue
            rec.decide(
                magics.UNREAD,
                cell.start,
                "this cell is not Python the codemod can parse; it mentions XRT or torch_xla: migrate it by hand",
            )
            continue
        merge_into(
            rec, Outcome(outcome.text, *(_in_cell(f, index + 1) for f in (outcome.changes, outcome.manual))), lines
        )
        if outcome.text != cell.source:
            rec.edits.append(
                Edit(cell.start, cell.end, _render(outcome.text, text[cell.start : cell.end], ascii_only, text))
            )
    done = rec.outcome()
    return Outcome(done.text, *(_located(f, starts) for f in (done.changes, done.manual)))


def _may_need_migrating(source: str, options: Options, imported: set[str]) -> bool:
    """Whether a code cell the codemod cannot parse may hold torch_xla code to migrate: not when,
    dedented (the body of an ``if`` an earlier cell opened, which Jupyter too refuses to run), it
    parses, the rules find nothing in it alone (imports of modules 2.9 has), and its code beyond
    imports and comments names nothing of torch_xla: no word of the rules, and none of the names
    ``imported`` from torch_xla in any cell (a call in a comment is no call)."""
    dedented = textwrap.dedent(source)
    if dedented == source:
        return True
    try:
        tree = ast.parse(dedented)
    except SyntaxError:
        return True
    code = ast.Module([s for s in tree.body if not isinstance(s, (ast.Import, ast.ImportFrom))], [])
    used = {node.id for node in ast.walk(code) if isinstance(node, ast.Name)}
    if used & imported or rewriters.trigger_for("notebook").search(ast.unparse(code)):
        return True
    outcome = magics.cell(dedented, options)  # (the rules last: a codemod run)
    return outcome is None or outcome.text != dedented or bool(outcome.manual)


def _in_cell(findings: list[Finding], cell: int) -> list[Finding]:
    """Findings of cell number ``cell``'s rewrite, located in it by their ranges (as ruff
    locates a notebook's: ``cell 3:2:5``)."""
    return [replace(f, cell=cell, cell_range=f.range) for f in findings]


def _located(findings: list[Finding], first_lines: list[int]) -> list[Finding]:
    """``findings`` each located in its cell: those the notebook itself made, on a whole cell,
    stand on the line where its source opens (``"source": [``, the line above its first line,
    or that line itself), so theirs is the first cell whose first line is at or below theirs."""
    return [
        f
        if f.cell is not None or not first_lines
        else replace(
            f,
            cell=(cell := min(bisect.bisect_left(first_lines, f.line) + 1, len(first_lines))),
            cell_range=f.range.moved(lambda line: max(line - first_lines[cell - 1] + 1, 1)),
        )
        for f in findings
    ]


def parsed_size(text: str) -> int:
    """The characters of code a rewrite parses (see rewriters): the code cells' sources and the
    Markdown cells' code blocks. Outputs, attachments and metadata are read as JSON only."""
    try:
        cells = source_spans(text)
    except (ValueError, KeyError, TypeError, IndexError):
        return 0  # not a notebook: the rewrite says so
    return sum(
        len(c.source) if c.cell_type == "code" else markdown.parsed_size(c.source)
        for c in cells
        if c.cell_type in ("code", "markdown")
    )


def check(text: str) -> str | None:
    try:
        source_spans(text)
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        return f"the notebook JSON does not load: {exc}"
    return None


# --- the JSON around the sources ---------------------------------------------------------------


class NotJSON(ValueError):
    """A notebook's text that is not one JSON document: the decoder stopped at ``line``,
    ``column`` (1-based)."""

    def __init__(self, error: json.JSONDecodeError):
        super().__init__(f"not valid JSON ({error})")
        self.line, self.column = error.lineno, error.colno


def source_spans(text: str) -> list[SourceSpan]:
    """Where each cell's ``source`` value is in the notebook's text. ValueError for a text
    that is not one JSON document (NotJSON; trailing text included) or not an nbformat 4
    notebook."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotJSON(exc) from None
    if (
        isinstance(document, dict)
        and "cells" not in document
        and ("worksheets" in document or document.get("nbformat", 4) < 4)
    ):
        raise ValueError(
            f"nbformat {document.get('nbformat', 3)} (cells in worksheets); this tool reads "
            "nbformat 4: convert it with `jupyter nbconvert --to notebook --nbformat 4`"
        )
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


def first_lines(text: str, cells: list[SourceSpan]) -> list[int]:
    """The file line of each cell's first source line (nbformat puts one string per line),
    counted in one pass over the file (a count from the top for each cell was quadratic:
    24 s of 27 for 500 cells among 50 MB of outputs)."""
    out, line, counted = [], 1, 0
    for cell in cells:
        first = text[cell.start : cell.end]
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
    return (
        "[\n"
        + ",\n".join(item_margin + i for i in items)
        + "\n"
        + (close_margin.group(1) if close_margin else "")
        + "]"
    )


# --- the code cells --------------------------------------------------------------------------


def _kernel_cells(cells: list[SourceSpan]) -> dict[int, magics.PythonCell]:
    """The code cells (by index) whose Python the kernel runs in the notebook's namespace:
    plain cells and those of a cell magic that runs its Python there (not ``%%html``)."""
    return {
        i: magics.python_cell(c.source)
        for i, c in enumerate(cells)
        if c.cell_type == "code"
        and (not c.source.startswith("%%") or magics.body_of(c.source.partition("\n")[0]) == magics.KERNEL)
    }


def _rewrite_together(python: dict[int, magics.PythonCell], options: Options, kept: list[str]) -> dict[int, Outcome]:
    """The outcome of each of the ``python`` cells, their code rewritten as the one module
    they are in the kernel. Empty when that cannot be done (the cells are then rewritten one
    by one). The names ``kept`` are used by cells that do not parse: a last piece, thrown
    away after, uses each of them, so that no import of them is dropped as stale."""
    numbers = [index + 1 for index in python]  # as Jupyter counts cells
    uses = "".join(f"{name}\n" for name in kept)
    outcomes = _python().rewrite_together(
        [*(cell.python for cell in python.values()), *[uses] * bool(kept)],
        options,
        where=lambda own, k, line: (line, numbers[k]),
    )
    if outcomes is None:
        return {}
    return {index: magics.finish(cell, outcome, options) for (index, cell), outcome in zip(python.items(), outcomes)}


def _refill_import_cells(together: dict[int, Outcome], parsed: dict[int, magics.PythonCell]) -> None:
    """A cell of torch_xla imports only that the rewrite changes keeps the imports of the names
    the rewrite brought into the cells below it (``import torch_xla`` for ``torch_xla.device()``,
    where ``xm.xla_device()`` was), as the rest of the notebook writes them: a notebook is often
    run from part way down, and the cell above that imports them may not have run."""
    order = sorted(together)
    imports_in = functools.cache(lambda i: _torch_xla_imports(together[i].text)[0])  # (asked of the few refilled)
    for k, index in enumerate(order):
        cell, new = parsed[index], together[index].text
        if new == cell.python or cell.prefix or cell.magics or not _torch_xla_imports(cell.python)[1]:
            continue
        own, only = _torch_xla_imports(new)
        if new.strip() and not only:
            continue
        later = order[k + 1 :]
        # the names the rewrite brought into the cells below (torch_xla for xm.xla_device())
        below = set().union(*(magics.words(together[i].text) for i in later)) - set().union(
            *(magics.words(parsed[i].python) for i in later)
        )
        bound = {name for statement in own for name in _bound(statement)}
        missing = {
            ast.unparse(statement): None
            for other in order
            if other != index
            for statement in imports_in(other)
            if (_bound(statement) & below) - bound
        }
        if missing:  # (above the cell's own lines, which stay as they are, comments and all)
            ending = "\n" if cell.python.endswith("\n") or new.strip() else ""
            together[index] = replace(together[index], text="\n".join(missing) + ending + new.lstrip("\n"))


def _bound(statement: ast.Import | ast.ImportFrom) -> set[str]:
    return {(alias.asname or alias.name).split(".")[0] for alias in statement.names}


def _torch_xla_imports(python: str) -> tuple[list[ast.Import | ast.ImportFrom], bool]:
    """The module-level imports of torch_xla in ``python``, and whether it holds nothing else
    (([], False) when it does not parse)."""
    try:
        body = ast.parse(python).body
    except SyntaxError:
        return [], False
    imports = [
        statement
        for statement in body
        if (isinstance(statement, ast.Import) and all(a.name.split(".")[0] == "torch_xla" for a in statement.names))
        or (isinstance(statement, ast.ImportFrom) and (statement.module or "").split(".")[0] == "torch_xla")
    ]
    return imports, bool(body) and len(imports) == len(body)


def _imported_anywhere(python: dict[int, magics.PythonCell], unparsed: list[int]) -> set[str]:
    """The names an import of torch_xla binds in any cell, those that parse only dedented too."""
    if not unparsed:
        return set()
    return magics.torch_xla_names(
        [source for cell in python.values() if _parses(source := textwrap.dedent(cell.python))]
    )


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True


def _borrowed(parsed: dict[int, magics.PythonCell], unparsed: dict[int, magics.PythonCell]) -> dict[int, set[str]]:
    """The names each of the ``unparsed`` cells uses that an import of torch_xla in one of
    the ``parsed`` cells binds (as far as a search for the words tells)."""
    if not unparsed:
        return {}  # (most notebooks: no cell is parsed again for its imports)
    imported = magics.torch_xla_names([cell.python for cell in parsed.values()])
    return {index: imported & magics.words(cell.python) for index, cell in unparsed.items()}
