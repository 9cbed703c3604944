"""Settings that survive XRT with another meaning: environment variables, TPU runtime
versions and images, launcher options and pins (see the package docstring)."""

from __future__ import annotations

from xrt2pjrt.meanings.entry import Meaning

MEANINGS: tuple[Meaning, ...] = ()
