"""The rewriter of a notebook exported to .py: Python that keeps IPython's magics.

nbconvert keeps each magic as the call IPython makes of it (``get_ipython().system('…')``),
jupytext as comment lines (``# !pip …``); mixed/ipython.py finds them. The Python is
rewritten first, by the Python rewriter; then each magic is migrated as what it runs
(mixed/magics.py) and written back in its string literal or comment lines, with the TODO line
of each item to decide above its statement. The Python of a cell magic the kernel runs
(``run_cell_magic('time', '', ...)``) is rewritten with the rest of the file, as the kernel
runs them: the file is cut at those statements, and the cells' Python takes their places
among the pieces of one program (python/rewriter.py's ``rewrite_together``).

Implements the contract in rewriters.py for the Python files that hold an exported
notebook's marks (``rewriters.module_for``); one whose marks are no magics after all is
the Python rewriter's alone.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import replace

from xrt2pjrt import width
from xrt2pjrt.mixed import ipython, magics
from xrt2pjrt.python import rewriter
from xrt2pjrt.python.rewriter import tree_of
from xrt2pjrt.recorder import Edit, Recorder, comment_above, todo_line, without_new_todo_lines
from xrt2pjrt.registry import Options
from xrt2pjrt.report import Finding
from xrt2pjrt.rewriters import IPYTHON_LINE, Outcome, SourceError, trigger_for


def rewrite(text: str, options: Options, fold: bool = True) -> Outcome:
    """Run the selected rules over ``text``, its magics included (``fold``: see python/rewriter.py)."""
    try:
        found = ipython.magics(text, tree_of(text))
    except (SyntaxError, ValueError):
        pasted = _pasted_cells(text, options)
        if pasted is not None:
            return pasted
        _stop_where_pasted_code_fails(text)
        found = []  # (the Python rewriter says why it cannot be parsed)
    options = replace(options, notebook=True)
    if not found:
        return rewriter.rewrite(text, options, fold)
    # whether it uses PyTorch, and runs Colab's set-up script, is the whole file's to say
    return _rewrite(text, found, options.in_file(text), fold)


def check(text: str) -> str | None:
    problem = rewriter.check(text)
    return None if problem and _pasted(text) else problem


def _pasted(text: str) -> bool:
    """Whether ``text`` is a notebook's code pasted into a .py as it is (a Kaggle kernel's cells
    one after another, ``!pip install`` lines and all): Python but for its magic lines."""
    return bool(IPYTHON_LINE.search(text)) and rewriter.check(magics.python_cell(text).python) is None


def _stop_where_pasted_code_fails(text: str) -> None:
    """Raise the SourceError of a notebook's code pasted into a .py that does not parse with its
    magic lines hidden either: the line Python stops at there, not the first ``!pip`` line."""
    if not IPYTHON_LINE.search(text):
        return
    try:
        ast.parse(magics.python_cell(text).python)
    except SyntaxError as error:
        raise SourceError(error.msg or "invalid syntax", error.lineno or 1, error.offset or 1) from None
    except ValueError:
        return  # (a null byte: the Python rewriter says so)


def _pasted_cells(text: str, options: Options) -> Outcome | None:
    """The rewrite of pasted notebook code (:func:`_pasted`) as one cell, its magics migrated as
    they are in a notebook; None when ``text`` is not that."""
    return magics.cell(text, options.in_file(text)) if _pasted(text) else None


def _rewrite(text: str, found: list[ipython.Magic], options: Options, fold: bool, together: bool = True) -> Outcome:
    """``text`` with its magics ``found``: the Python first, with the Python of the cells the
    kernel runs among its pieces (``together``; else the Python alone), then each magic."""
    bodies = {
        id(m): magics.python_cell(m.source.partition("\n")[2])
        for m in found
        if m.top_level and m.source and magics.body_of(m.source.partition("\n")[0]) == magics.KERNEL
    }
    parsed = {key for key, cell in bodies.items() if rewriter.check(cell.python) is None}
    kernel = [m for m in found if together and id(m) in parsed]
    cells = [bodies[id(m)] for m in kernel]
    # the names the cells that do not parse use of the file's torch_xla imports: kept
    unread = "".join(cell.python for key, cell in bodies.items() if key not in parsed)
    kept = sorted(magics.torch_xla_names([text]) & magics.words(unread)) if together and unread else []
    cuts = [0, *(offset for m in kernel for offset in m.whole), len(text)]
    hosts = [text[a:b] for a, b in zip(cuts[0::2], cuts[1::2])]
    above = [text.count("\n", 0, a) for a in cuts[0::2]]  # the lines above each host piece
    pieces = [piece for k, host in enumerate(hosts) for piece in (host, *([cells[k].python] if k < len(cells) else []))]

    def in_file(k: int, line: int) -> int:  # a line of piece k, in ``text``
        return above[k // 2] + line if k % 2 == 0 else kernel[k // 2].lines[min(line, len(kernel[k // 2].lines) - 1)]

    if kernel or kept:
        outcomes = rewriter.rewrite_together(
            [*pieces, "".join(f"{name}\n" for name in kept)],
            options,
            where=lambda own, k, line: (in_file(k, line) if k < len(pieces) else 0, None),
        )
        if outcomes is None:
            return _rewrite(text, found, options, fold, together=False)
        outcomes = outcomes[: len(pieces)]
    else:
        outcomes = [rewriter.rewrite(text, options, fold)]
    done = [o.text if k % 2 == 0 else text[slice(*kernel[k // 2].whole)] for k, o in enumerate(outcomes)]
    python = "".join(done)
    rec = Recorder(python, options)
    for k, o in enumerate(outcomes[0::2]):
        host_line = functools.partial(in_file, 2 * k)  # (the lines they cite are the file's already)
        rec.changes += [replace(f, range=f.range.moved(host_line)) for f in o.changes]
        rec.manual += [replace(f, range=f.range.moved(host_line)) for f in o.manual]
    again = ipython.magics(python, tree_of(python))
    if [m.text for m in again] != [m.text for m in found]:  # (no rule rewrites a magic's call)
        raise SourceError("a magic moved in the rewrite of its notebook's Python", found[0].line)
    cell_outcomes = dict(zip(map(id, kernel), outcomes[1::2]))
    for magic, was in zip(again, found):
        if id(was) not in cell_outcomes:
            _migrate_magic(rec, magic, options, was.lines, bool(kept) and bool(magics.words(magic.text) & set(kept)))
            continue
        cell = cells[kernel.index(was)]
        body = magics.finish(cell, cell_outcomes[id(was)], options)
        head = was.source.partition("\n")[0]
        _write_back(
            rec,
            magic,
            was.lines,
            f"{head}\n{without_new_todo_lines(cell.python, body.text)}",
            *([_range_moved(f, lambda line: line + 1) for f in findings] for findings in (body.changes, body.manual)),
            cites_placed=True,  # (rewrite_together numbered them in the file)
        )
    return rec.outcome()


def _migrate_magic(rec: Recorder, magic: ipython.Magic, options: Options, lines: list[int], borrows: bool) -> None:
    """Migrate one magic of ``rec.text`` as the IPython text it stands for; ``lines``: the
    line in the file as read of each of its lines; ``borrows``: it uses names of torch_xla
    imports of the file."""
    mentions = borrows or trigger_for("python").search(magic.text) or trigger_for("shell").search(magic.text)
    if magic.source is None:
        if mentions:
            rec.decide_at_line(
                magics.UNREAD,
                lines[0],
                "an IPython command built at run time mentions XRT or torch_xla: migrate it by hand",
            )
        return
    if magic.source.startswith("%%"):
        outcome = magics.cell(magic.source, options)
        if outcome is None:
            if mentions:
                rec.decide_at_line(
                    magics.UNREAD,
                    lines[0],
                    "this cell magic's code does not parse, and it uses torch_xla: migrate it by hand",
                )
            return
    else:
        scratch = Recorder(magic.source, options)
        outcome = Outcome(magics.line_magic(magic.source, options, scratch, 1), scratch.changes, scratch.manual)
    if outcome.changes or outcome.manual:
        new = outcome.text if magic.todo_inside else without_new_todo_lines(magic.source, outcome.text)
        _write_back(rec, magic, lines, new, outcome.changes, outcome.manual)


def _range_moved(finding: Finding, line_in_file) -> Finding:
    """``finding`` with its range renumbered by ``line_in_file``, and the lines it cites as they are."""
    return replace(finding, range=finding.range.moved(line_in_file))


def _write_back(
    rec: Recorder,
    magic: ipython.Magic,
    lines: list[int],
    new: str,
    changes: list[Finding],
    manual: list[Finding],
    cites_placed: bool = False,
) -> None:
    """Record in ``rec`` that ``magic`` of ``rec.text`` stands for ``new`` now, with the
    findings of that rewrite (numbered in the magic's own lines, in the file at ``lines``;
    the lines they cite too, unless ``cites_placed``: numbered in the file already):
    its edits, or, where ``new`` cannot be written there exactly, its changes as items to
    make by hand; and the TODO lines of its items above its statement."""
    in_file = lambda line: lines[min(line, len(lines)) - 1]  # noqa: E731
    edits = [] if new == magic.source else magic.write(new) if new else magic.removal and [magic.removal]
    if edits is None:
        manual = [
            *manual,
            *(f.to_decide(f"make by hand (its string cannot take it as quoted): {f.message}") for f in changes),
        ]
        changes = []
    rec.edits += edits or []
    place = (lambda f: _range_moved(f, in_file)) if cites_placed else (lambda f: f.placed(in_file))
    rec.changes += [place(f) for f in changes]
    rec.manual += [place(f) for f in manual if place(f) not in rec.manual]
    if magic.todo_inside or not manual:
        return
    above = _lines_of(rec.text)
    first = rec.line(magic.statement)
    todo = dict.fromkeys(todo_line(f.message, f.rule, magic.margin, rec.options.width or width.DEFAULT) for f in manual)
    rec.edits.append(
        Edit(magic.statement, magic.statement, "".join(t for t in todo if not comment_above(above, first, t)))
    )


@functools.lru_cache(maxsize=1)  # (the text each magic's TODO lines look above: split once, not per magic)
def _lines_of(text: str) -> list[str]:
    return text.splitlines(keepends=True)
