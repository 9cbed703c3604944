"""Answers about one file's trees, kept while its rewrite asks and dropped when the file is done.

The rules ask the same questions of a file at every spot they look at (the functions that
start the runtime, the defs around a line, the calls of a name): asked anew each time, a
file dense with such spots was quadratic, so each answer is kept, keyed by the file's
``ast`` tree. Kept after the file, those trees (millions of nodes for a 1 MB file) were
walked by every full collection of the cyclic collector until the next file replaced them:
2 s of a 1 MB file's preview, spent while printing its diff. codemod.py calls
:func:`forget` when a file's rewrite and its check are done.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

_CACHES: list = []  # the caches made by per_file(), to empty


def per_file(size: int = 1) -> Callable[[Callable], Callable]:
    """``functools.lru_cache(maxsize=size)``, emptied by :func:`forget`."""

    def cache(function: Callable) -> Callable:
        cached = functools.lru_cache(maxsize=size)(function)
        _CACHES.append(cached)
        return cached

    return cache


def forget() -> None:
    """Drop every answer kept about the file just done, and its trees with them."""
    for cached in _CACHES:
        cached.cache_clear()
