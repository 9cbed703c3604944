"""Same name, new meaning: XRT-era settings and APIs that still exist but mean something else.

A removed name fails loudly; a name that survives with another meaning fails silently, so
each one is written down here as data, like the API surface tables: what it meant under
XRT, what it means on each target release, what the tool does about it (the rule that
rewrites or reports it) and how that was checked (a run on torch_xla 2.9's CPU PJRT, or a
torch_xla source file and line). ``settings`` holds environment variables, runtime versions
and pins; ``apis`` holds calls. The rules named here read their advice from these entries,
and tests hold each entry to the installed torch_xla or to the source it cites.
"""

from __future__ import annotations

from xrt2pjrt.meanings import apis, settings
from xrt2pjrt.meanings.entry import Meaning

MEANINGS: tuple[Meaning, ...] = settings.MEANINGS + apis.MEANINGS


def of(name: str) -> Meaning:
    """The entry for ``name``; a KeyError names it when the table lacks it."""
    for meaning in MEANINGS:
        if meaning.name == name:
            return meaning
    raise KeyError(name)
