"""APIs that survive XRT with another meaning: calls whose name is the same on torch_xla 2.x
but whose result or effect changed (see the package docstring)."""

from __future__ import annotations

from xrt2pjrt.meanings.entry import Meaning

MEANINGS: tuple[Meaning, ...] = ()
