"""What each torch_xla release reads from the environment: the settings surface table, as
data, and the questions the rules ask of it.

The data (settings_surface.txt, beside this file) is generated from pytorch/xla's source at
each release tag, 1.13 … 2.9, by tools/settings_surface.py; tests/python/test_settings_surface.py
holds its 2.9 entries to the installed torch_xla (and its 2.8 ones to a torch_xla 2.8.1, where
one is named). Each line is ``NAME  RELEASES  STATUS  SOURCE``, see the file's header; a
NAME may carry a value (``PJRT_DEVICE=GPU``) where a release's deprecation warning names
that value only.

``status(name, release)`` says what a release does with a setting: ``read``,
``deprecated`` (read, with a warning), ``warns`` (only a warning reads it: no effect), or
None: read nowhere. ``gone(name, target)`` is the question the rules ask: a variable some
release read that ``target`` reads nowhere or only warns about, with when it went.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

Release = tuple[int, int]
RELEASES: tuple[Release, ...] = ((1, 13), *((2, minor) for minor in range(10)))
DATA = Path(__file__).with_name("settings_surface.txt")


@dataclass(frozen=True)
class Reading:
    releases: frozenset[Release]
    status: str  # read, deprecated, warns
    source: str  # TAG:PATH:LINE, a read in the last of the releases


def _release(text: str) -> Release:
    major, minor = text.split(".")
    return int(major), int(minor)


def _releases(text: str) -> frozenset[Release]:
    out = set()
    for run in text.split(","):
        first, _, last = run.partition("-")
        lo, hi = _release(first), _release(last or first)
        out.update(r for r in RELEASES if lo <= r <= hi)
    return frozenset(out)


def spelled(release: Release) -> str:
    return f"{release[0]}.{release[1]}"


@functools.cache
def table() -> dict[str, tuple[Reading, ...]]:
    out: dict[str, list[Reading]] = {}
    for line in DATA.read_text().splitlines():
        if line and not line.startswith("#"):
            name, releases, status, source = line.split()
            out.setdefault(name, []).append(Reading(_releases(releases), status, source))
    return {name: tuple(readings) for name, readings in out.items()}


def status(name: str, release: Release) -> str | None:
    """What ``release`` does with a setting of ``name``: read, deprecated, warns; None: nothing."""
    return next((r.status for r in table().get(name, ()) if release in r.releases), None)


def reading(name: str, release: Release) -> Reading | None:
    return next((r for r in table().get(name, ()) if release in r.releases), None)


def read_by(name: str) -> frozenset[Release]:
    """The releases that read ``name`` to some effect (read or deprecated)."""
    return frozenset().union(*(r.releases for r in table().get(name, ()) if r.status != "warns"))


@dataclass(frozen=True)
class Gone:
    """``name`` took effect in ``last`` and has none from the release after it: read by nothing
    there (``warns`` False) or only by a deprecation warning (``warns`` True)."""

    name: str
    last: Release
    warns: bool

    @property
    def history(self) -> str:
        after = spelled(RELEASES[RELEASES.index(self.last) + 1])
        return f"only warns from torch_xla {after}" if self.warns else f"read by nothing from torch_xla {after}"


def gone(name: str, target: Release) -> Gone | None:
    """Whether a setting of ``name``, which some earlier release read, has no effect on ``target``."""
    if "=" in name:
        return None  # (a value a release called deprecated: read_by knows only that release)
    effective = [r for r in read_by(name) if r < target]
    if not effective or status(name, target) in ("read", "deprecated"):
        return None
    return Gone(name, max(effective), status(name, target) == "warns")


# The names only torch_xla reads (TPU_* are libtpu's too, MASTER_ADDR torch's, XLA_FLAGS is
# XLA's and read by every release).
TORCH_XLA_OWN = re.compile(r"(?:XLA|XRT|PJRT|PT_XLA|TORCH_XLA)_\w+")


@functools.cache
def silently_gone() -> frozenset[str]:
    """torch_xla's own settings that some 2.x target reads nowhere, not even to warn, though an
    earlier release read them (XLA_TRIM_GRAPH_SIZE, PJRT_ALLOCATOR_FRACTION, the XRT_* ones)."""
    return frozenset(
        name
        for name in table()
        if TORCH_XLA_OWN.fullmatch(name)
        and any((found := gone(name, (2, minor))) is not None and not found.warns for minor in range(1, 10))
    )
