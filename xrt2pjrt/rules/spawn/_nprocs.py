"""What the two nprocs rules share: their callee, and the reads of a count beyond the call."""

from __future__ import annotations

import ast

from xrt2pjrt.python import spawn_site
from xrt2pjrt.python.rule import PythonRule
from xrt2pjrt.python.spawn_graph import SPAWN


class NprocsRule(PythonRule):
    names = frozenset({SPAWN})
    targets = ("native",)


def lines_beyond(site: spawn_site.Site, reads: list[ast.AST]) -> list[int]:
    """The lines of ``reads`` outside the spawn call."""
    return sorted({read.lineno for read in reads} - set(range(site.call.lineno, site.call.end_lineno + 1)))


# The uses of a count a message cites with their text, to say which it means (the others by number).
QUOTED_LINES = 3
