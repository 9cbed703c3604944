"""Names of torch_xla resolved in the installed release, as the tables that name them are
held to it."""

from __future__ import annotations

import importlib


def resolve(dotted: str):
    """The module, class or function ``dotted`` names, imported; ImportError or AttributeError
    where the installed torch_xla has no such thing."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:end]))
        except ImportError:
            continue
        for part in parts[end:]:
            obj = getattr(obj, part)
        return obj
    raise ImportError(dotted)
